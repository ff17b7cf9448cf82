"""Running the viewer: bind on loopback, print the address, serve until interrupted."""

from __future__ import annotations

import sys

import anyio
import uvicorn

from engram.loopback import bind, check_loopback
from engram.vault import Vault
from engram.viewer.app import build_app


def serve(vault: Vault, *, host: str = "127.0.0.1", port: int = 8766, token: str | None = None) -> None:
    """Serve the viewer for ``vault`` (blocking). Raises InvalidInput for a host that is
    not loopback or a port that cannot be bound."""
    host = check_loopback(host)
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    app = build_app(vault, host=host, port=actual, token=token)
    shown = f"[{host}]" if ":" in host else host
    note = " (token required: open it once as /?token=YOUR_TOKEN)" if token else ""
    print(f"engram: viewer for {vault.root} at http://{shown}:{actual}/{note}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    anyio.run(uvicorn.Server(config).serve, [sock])
