"""``engram serve``: the MCP server over stdio (default) or streamable HTTP on loopback."""

from __future__ import annotations

import logging
import os

import click

from engram.cli._common import AppContext, request_timeout_option
from engram.mcp.profiles import PROFILES


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address to listen on (--http).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (--http; 0 picks a free one).")
@click.option(
    "--token",
    envvar="ENGRAM_MCP_TOKEN",
    default=None,
    metavar="TOKEN",
    help="Require 'Authorization: Bearer TOKEN' (--http). Prefer the ENGRAM_MCP_TOKEN variable.",
)
@request_timeout_option("Close an HTTP connection whose request takes longer to arrive (--http).")
@click.option(
    "--profile",
    type=click.Choice(PROFILES),
    default=None,
    help="Tool set: minimal, standard or full (default: ENGRAM_MCP_PROFILE, the vault's "
    "mcp.profile setting, else standard).",
)
@click.option(
    "--structured-output/--no-structured-output",
    default=None,
    help="Publish output schemas and send each answer as structured content too, for clients "
    "that validate it (default: ENGRAM_MCP_STRUCTURED_OUTPUT, the vault's mcp.structuredOutput "
    "setting, else off: each answer once, as compact JSON text).",
)
@click.pass_obj
def serve(
    app: AppContext, use_http: bool, host: str, port: int, token: str | None, request_timeout: float,
    profile: str | None, structured_output: bool | None,
) -> None:
    """Run the MCP server: the vault as tools for an AI agent.

    Over stdio by default (one process per agent session; several may share a vault).
    Without --vault / ENGRAM_VAULT it uses the vault at or above the current folder,
    else the one recorded by the `setup` tool; with none it starts anyway and guides
    the agent through `status` and `setup`.

    \b
    Examples:
      claude mcp add engram -- engram serve --vault ~/team-memory
      ENGRAM_MCP_TOKEN=s3cret engram --vault ~/team-memory serve --http --port 8765
    """
    from engram.loopback import check_loopback, check_token

    # Refuse a bad start before importing the server stack (the MCP SDK and starlette
    # take seconds of CPU to import on a busy machine): a mistake is told at once.
    if use_http:
        check_loopback(host)
        if token is None and "ENGRAM_MCP_TOKEN" in os.environ:
            token = os.environ["ENGRAM_MCP_TOKEN"]  # click drops an empty variable: refuse it
        check_token(token)
    elif token:
        raise click.UsageError("--token only applies to --http.")
    from engram.mcp.server import build_server
    from engram.mcp.stdio import serve_stdio

    # stdout belongs to the protocol over stdio: keep the SDK's logs on stderr and terse.
    logging.basicConfig(level=os.environ.get("ENGRAM_MCP_LOG", "WARNING").upper())
    from engram.lifecycle.schedule import Scheduler
    from engram.mcp.server import toolbox
    from engram.recall.filling import Filler

    server = build_server(app.vault_path, profile=profile, actor=app.actor, structured_output=structured_output)
    holder = toolbox(server).holder
    # Maintenance stages on the vault's lifecycle.schedule (off unless configured).
    current = lambda: holder.vault.state if holder.vault is not None else None  # noqa: E731
    scheduler = Scheduler(current).start()
    # Vectors for recall by meaning, computed while the agent is not asking (docs/recall.md).
    filler = Filler(current).start()
    try:
        if use_http:
            from engram.mcp.http import serve_http  # starlette and uvicorn: not for stdio

            serve_http(server, host=host, port=port, token=token, request_timeout=request_timeout)
        else:
            serve_stdio(server)
    finally:
        filler.stop()
        scheduler.stop()


COMMANDS = [serve]
