"""The viewer's guards, as one ASGI middleware: who may ask, from where, and for writes, why.

In the order a request meets them:

1. **Host and Origin.** The server listens on loopback only (:mod:`engram.loopback`),
   but a hostile page can make a browser send requests to 127.0.0.1 under a name the
   attacker controls (DNS rebinding). A ``Host`` that is not a loopback name with the
   server's port is answered 421; an ``Origin`` that is not this server's is answered 403.
2. **Token (optional).** With ``--token`` (or ``ENGRAM_VIEWER_TOKEN``) every request
   must prove it knows the token: ``Authorization: Bearer <token>``, or the session
   cookie the viewer sets when a page is opened once as ``/?token=<token>`` (the viewer
   then redirects to the same address without it, so the token does not stay in the
   address bar). The cookie holds an HMAC of the token, not the token; it is
   ``HttpOnly`` and ``SameSite=Strict``. Comparisons are constant-time. No page ever
   contains the token.
3. **CSRF.** Every request that is not GET or HEAD must carry the page's CSRF token
   (form field ``_csrf`` or header ``X-CSRF-Token``); it is an HMAC of a secret made when
   the server starts, so a page from another origin (which cannot read ours) cannot
   forge it, and a page left open across a restart is told to reload. Fetch metadata
   (``Sec-Fetch-Site: cross-site``) is refused on writes as a second line.

Every response carries a strict Content-Security-Policy (scripts and styles from this
server only, no inline script, no framing), ``nosniff`` and a same-origin referrer policy; pages are
``no-store`` since they show private knowledge. Each response says how long the server
spent on it (``Server-Timing: app;dur=<ms>``), as browsers' developer tools show it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD"})
CSRF_FIELD = "_csrf"
CSRF_HEADER = b"x-csrf-token"
#: Largest form accepted: an item body may be 1 MB, and URL-encoding triples it at most.
MAX_FORM_BYTES = 8 * 1024 * 1024
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" makes form posts say Origin: null
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


@dataclass(frozen=True, slots=True)
class Guard:
    """What the middleware checks against, fixed when the server starts."""

    hosts: frozenset[str]  # acceptable Host header values (name:port)
    origins: frozenset[str]  # acceptable Origin values
    secret: bytes
    token: str | None
    cookie_name: str

    @classmethod
    def for_server(cls, names: Iterable[str], port: int, token: str | None) -> Guard:
        names = sorted(set(names))
        return cls(
            hosts=frozenset(f"{n}:{port}" for n in names),
            origins=frozenset(f"http://{n}:{port}" for n in names),
            secret=secrets.token_bytes(32),
            token=token,
            cookie_name=f"engram_viewer_{port}",
        )

    @property
    def csrf_token(self) -> str:
        return hmac.new(self.secret, b"csrf", hashlib.sha256).hexdigest()

    def csrf_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given), self.csrf_token)

    def _session_value(self) -> str:
        assert self.token is not None
        return hmac.new(self.secret, self.token.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def authorised(self, headers: dict[bytes, bytes]) -> bool:
        if self.token is None:
            return True
        bearer = headers.get(b"authorization", b"").decode("latin-1")
        if bearer.startswith("Bearer ") and self.token_ok(bearer[7:]):
            return True
        for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie_name and hmac.compare_digest(value, self._session_value()):
                return True
        return False

    def session_cookie(self) -> bytes:
        return (
            f"{self.cookie_name}={self._session_value()}; Path=/; HttpOnly; SameSite=Strict"
        ).encode()


class GuardMiddleware:
    """ASGI middleware applying a :class:`Guard` (see the module docstring)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        guard = self.guard
        host = headers.get(b"host", b"").decode("latin-1")
        if host not in guard.hosts:
            await _refuse(send, 421, "This viewer answers only to its loopback address.")
            return
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and origin not in guard.origins:
            await _refuse(send, 403, "Requests from other sites are refused.")
            return
        method = scope["method"]
        if guard.token is not None and not guard.authorised(headers):
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if method in SAFE_METHODS and guard.token_ok(query.get("token", "")):
                query.pop("token")
                location = scope["path"] + (f"?{urlencode(query)}" if query else "")
                await send({"type": "http.response.start", "status": 303, "headers": [
                    (b"location", location.encode()), (b"set-cookie", guard.session_cookie()),
                    *SECURITY_HEADERS,
                ]})
                await send({"type": "http.response.body", "body": b""})
                return
            await _refuse(
                send, 401,
                "This viewer needs its token: open the address once as /?token=YOUR_TOKEN "
                "(the value of --token or ENGRAM_VIEWER_TOKEN).",
            )
            return
        if method not in SAFE_METHODS:
            if headers.get(b"sec-fetch-site", b"same-origin") not in (b"same-origin", b"none"):
                await _refuse(send, 403, "Cross-site writes are refused.")
                return
            header_token = headers.get(CSRF_HEADER)
            if header_token is None:
                body, receive = await _buffer(receive)
                if body is None:
                    await _refuse(send, 413, "That form is too large (8 MB at most).")
                    return
                form = dict(parse_qsl(body.decode("utf-8", errors="replace")))
                header_token_text = form.get(CSRF_FIELD)
            else:
                header_token_text = header_token.decode("latin-1")
            if not guard.csrf_ok(header_token_text):
                await _refuse(
                    send, 403,
                    "This form is out of date (the viewer was restarted, or it came from elsewhere). "
                    "Reload the page and try again.",
                )
                return

        started = time.perf_counter()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                spent = f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode()
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS, (b"server-timing", spent)]
            await send(message)

        await self.app(scope, receive, with_headers)


async def _buffer(receive: Receive) -> tuple[bytes | None, Receive]:
    """Read the whole request body (None past :data:`MAX_FORM_BYTES`), and a ``receive``
    that replays it to the app."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_FORM_BYTES:
            return None, receive
        more = message.get("more_body", False)
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _refuse(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS,
    ]})
    await send({"type": "http.response.body", "body": f"engram viewer: {text}\n".encode()})
