"""Listening on loopback only: the checks both HTTP adapters (MCP over HTTP, the viewer) share.

The vault is a person's files, not a network service: :func:`check_loopback` refuses any
host that is not 127.0.0.0/8, ``::1`` or ``localhost``, and :func:`bind` binds the socket
before the server starts, so ``--port 0`` can pick a free port and the real one be
printed. :func:`host_names` lists the names a request's ``Host`` and ``Origin`` may carry
for a server listening at ``host:port`` — anything else is a DNS-rebinding attempt.
:func:`check_token` refuses a bearer token that is empty (which would quietly mean "no
authentication") or that cannot be sent in a header.
Standard library only.
"""

from __future__ import annotations

import ipaddress
import socket

from engram.errors import InvalidInput

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def check_loopback(host: str) -> str:
    """Return ``host`` if it is a loopback address or name; else InvalidInput."""
    if host == "localhost":
        return host
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return host.strip("[]")
    except ValueError:
        pass
    raise InvalidInput(
        f"refusing to listen on {host!r}: engram serves HTTP on loopback only.",
        field="host",
        hint="Use 127.0.0.1 (the default); reach it from elsewhere through an SSH tunnel.",
    )


def check_token(token: str | None, variable: str = "ENGRAM_MCP_TOKEN") -> str | None:
    """``token`` if it can be sent as a bearer token; None stays None; else InvalidInput
    (``variable`` is the environment variable the hint names)."""
    if token is None:
        return None
    if not token.strip():
        raise InvalidInput(
            "the bearer token is empty, which would serve the vault without authentication.",
            field="token",
            hint=f"Set {variable} to a long random value (e.g. `openssl rand -hex 32`), "
            "or unset it to serve without a token.",
        )
    if not all("!" <= ch <= "~" for ch in token):
        raise InvalidInput(
            "the bearer token must be printable ASCII without spaces.",
            field="token",
            hint="Use e.g. `openssl rand -hex 32`.",
        )
    return token


def host_names(host: str) -> set[str]:
    """The names (as a ``Host`` header spells them) that reach a server bound to ``host``."""
    return {*LOOPBACK_NAMES, f"[{host}]" if ":" in host else host}


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one). Raises InvalidInput."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it a response's headers and body wait out the client's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidInput(
            f"cannot listen on {host}:{port}: {exc.strerror}.",
            field="port",
            hint="Pick another --port (0 picks a free one).",
        ) from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
