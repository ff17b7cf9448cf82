"""Running the viewer: bind on loopback, print the address, serve until interrupted.

Served through :func:`engram.httpserve.serve_asgi`, as MCP over HTTP is: a request that
trickles in longer than ``request_timeout`` seconds is cut off. An empty token is an error
(:func:`engram.loopback.check_token`), never a quiet "no authentication".
"""

from __future__ import annotations

import sys

from engram.httpserve import REQUEST_TIMEOUT, check_timeout, serve_asgi
from engram.loopback import bind, check_loopback, check_token
from engram.vault import Vault
from engram.viewer.app import build_app


def serve(
    vault: Vault, *, host: str = "127.0.0.1", port: int = 8766, token: str | None = None,
    request_timeout: float = REQUEST_TIMEOUT,
) -> None:
    """Serve the viewer for ``vault`` (blocking). Raises InvalidInput for a host that is
    not loopback, a port that cannot be bound, an empty token or a timeout of 0."""
    host = check_loopback(host)
    token = check_token(token, "ENGRAM_VIEWER_TOKEN")
    check_timeout(request_timeout)
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    app = build_app(vault, host=host, port=actual, token=token)
    shown = f"[{host}]" if ":" in host else host
    note = " (token required: open it once as /?token=YOUR_TOKEN)" if token else ""
    print(f"engram: viewer for {vault.root} at http://{shown}:{actual}/{note}", file=sys.stderr, flush=True)
    serve_asgi(app, sock, request_timeout=request_timeout)
