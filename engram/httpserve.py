"""Serving an ASGI app on a bound loopback socket, with a deadline on every request.

Both HTTP adapters (MCP over HTTP, the web viewer) serve through :func:`serve_asgi`, so
they share one defence against connections that trickle headers (slowloris) or send
nothing: a request's headers and body must arrive within ``request_timeout`` seconds of
its first byte — or of the connection opening — else the connection is closed. uvicorn
itself only times out idle keep-alive connections, which close here after
:data:`IDLE_TIMEOUT` seconds (or the request timeout, if shorter). Responses (long SSE
streams included) are not limited. The socket comes from :func:`engram.loopback.bind`,
so the caller knows the real port before serving starts.
"""

from __future__ import annotations

import asyncio
import socket

import anyio
import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from engram.errors import InvalidInput

#: Seconds a request (headers and body) may take to arrive.
REQUEST_TIMEOUT = 15.0
#: Seconds an idle keep-alive connection stays open.
IDLE_TIMEOUT = 5


class TimedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on receiving each request."""

    request_timeout = REQUEST_TIMEOUT
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._arm()  # a request is (or may be) on its way: it has until the deadline
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.request_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.transport.close()


def check_timeout(request_timeout: float) -> float:
    """``request_timeout`` if it is a usable number of seconds; else InvalidInput."""
    if not request_timeout > 0:
        raise InvalidInput(
            "the request timeout must be more than 0 seconds.", field="request_timeout", hint="e.g. 15"
        )
    return request_timeout


def serve_asgi(
    app: ASGIApp, sock: socket.socket, *, request_timeout: float = REQUEST_TIMEOUT, lifespan: bool = False
) -> None:
    """Serve ``app`` on ``sock`` until interrupted (blocking)."""
    protocol = type("TimedH11", (TimedH11,), {"request_timeout": check_timeout(request_timeout)})
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on" if lifespan else "off", http=protocol,
        timeout_keep_alive=max(1, int(min(IDLE_TIMEOUT, request_timeout))),
    )
    anyio.run(uvicorn.Server(config).serve, [sock])
