"""``engram viewer``: the web viewer on loopback."""

from __future__ import annotations

import os

import click

from engram.cli._common import AppContext, request_timeout_option
from engram.loopback import check_loopback, check_token


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address to listen on.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="Port (0 picks a free one).")
@click.option(
    "--token",
    envvar="ENGRAM_VIEWER_TOKEN",
    default=None,
    metavar="TOKEN",
    help="Require this token (open the viewer once as /?token=TOKEN). Prefer the ENGRAM_VIEWER_TOKEN variable.",
)
@request_timeout_option("Close a connection whose request takes longer to arrive.")
@click.pass_obj
def viewer(app: AppContext, host: str, port: int, token: str | None, request_timeout: float) -> None:
    """Browse the vault in a web browser: items, graph, search, conflicts, audit, merges, health.

    Listens on loopback only and refuses requests under any other host name (DNS
    rebinding); every change asks for the page's CSRF token and goes through the same
    writer, version check and audit log as the CLI. With --token, other local users
    cannot use it either. Stop it with Ctrl-C.

    \b
    Examples:
      engram --vault ~/team-memory viewer          # then open http://127.0.0.1:8766/
      ENGRAM_VIEWER_TOKEN=s3cret engram viewer --port 9000
    """
    check_loopback(host)  # before opening anything
    if token is None and "ENGRAM_VIEWER_TOKEN" in os.environ:
        token = os.environ["ENGRAM_VIEWER_TOKEN"]  # click drops an empty variable: refuse it
    check_token(token, "ENGRAM_VIEWER_TOKEN")
    from engram.recall.filling import Filler
    from engram.viewer import serve

    vault = app.vault()
    filler = Filler(lambda: vault.state).start()  # vectors for its search, in the background
    try:
        serve(vault, host=host, port=port, token=token, request_timeout=request_timeout)
    finally:
        filler.stop()


COMMANDS = [viewer]
