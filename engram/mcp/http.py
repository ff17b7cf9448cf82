"""Streamable HTTP on loopback: the server for clients that cannot spawn a process.

Security, in layers:

- **Loopback only.** :func:`engram.loopback.check_loopback` refuses any host that is not 127.0.0.0/8,
  ``::1`` or ``localhost``: the vault is a person's files, not a network service.
- **DNS-rebinding protection.** A web page can make a browser send requests to
  127.0.0.1 under a hostile name; the SDK's transport security checks ``Host`` (and
  ``Origin``, when present) against the loopback names, so such requests get 421/403.
- **Optional bearer token.** With ``--token`` (better: ``ENGRAM_MCP_TOKEN``, which does
  not show in ``ps``), every request must carry ``Authorization: Bearer <token>``; the
  comparison is constant-time. Other local users then cannot use the vault through the
  port. The token is never written anywhere. An empty token (``ENGRAM_MCP_TOKEN=`` or
  ``--token ''``) is an error, not "no authentication" (:func:`engram.loopback.check_token`);
  without a token the server says on stderr that any local process can use the port.
- **Timeouts.** A request's headers and body must arrive within ``--request-timeout``
  seconds (15 by default), else the connection is closed (:mod:`engram.httpserve`, shared
  with the viewer).

The listening socket is bound before the server starts, so ``--port 0`` works: the
actual URL is printed on stderr (``engram: MCP over HTTP at http://127.0.0.1:PORT/mcp``).
"""

from __future__ import annotations

import hmac
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.httpserve import REQUEST_TIMEOUT, check_timeout, serve_asgi
from engram.loopback import bind, check_loopback, check_token, host_names

__all__ = ["MCP_PATH", "BearerToken", "build_app", "check_loopback", "check_token", "serve_http"]

MCP_PATH = "/mcp"
def transport_security(host: str, port: int) -> TransportSecuritySettings:
    names = host_names(host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted({f"{n}:{port}" for n in names} | {f"{n}:*" for n in names}),
        allowed_origins=sorted({f"http://{n}:{port}" for n in names} | {f"http://{n}:*" for n in names}),
    )


class BearerToken:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"www-authenticate", b'Bearer realm="engram"'),
                        ],
                    }
                )
                await send(
                    {
                        "type": "http.response.body",
                        "body": b"engram: missing or wrong bearer token (see ENGRAM_MCP_TOKEN)\n",
                    }
                )
                return
        await self.app(scope, receive, send)


def build_app(server: MCPServer, *, host: str, port: int, token: str | None) -> ASGIApp:
    token = check_token(token)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=transport_security(host, port),
        host=host,
    )
    return BearerToken(app, token) if token else app


def serve_http(
    server: MCPServer, *, host: str, port: int, token: str | None,
    request_timeout: float = REQUEST_TIMEOUT,
) -> None:
    """Serve until interrupted (blocking)."""
    host = check_loopback(host)
    token = check_token(token)
    check_timeout(request_timeout)
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    app = build_app(server, host=host, port=actual, token=token)
    shown = f"[{host}]" if ":" in host else host
    if token is None:
        print(
            "engram: no bearer token: any local process can use this vault through the port "
            "(set ENGRAM_MCP_TOKEN to require one).",
            file=sys.stderr, flush=True,
        )
    print(f"engram: MCP over HTTP at http://{shown}:{actual}{MCP_PATH}", file=sys.stderr, flush=True)
    serve_asgi(app, sock, request_timeout=request_timeout, lifespan=True)
