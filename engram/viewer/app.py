"""The viewer application: routes, the shared context of every page, errors in one place.

:func:`build_app` makes a Starlette app over one opened :class:`~engram.vault.Vault`;
every page calls the vault's public methods only (the same API the CLI and the MCP
server use), so what the viewer shows and changes is what they show and change.
Reading pages are plain functions (Starlette runs them in its thread pool); the few that
read a form are ``async`` and hand the vault call to the pool.

Errors are rendered here and only here: an :class:`~engram.errors.EngramError` from any
page becomes the error page with its message and hint and an HTTP status that matches
(400 invalid input, 403 a role that does not allow it, 404 not found, 409 conflict, 422 a file that does not parse, 503
busy, 500 otherwise); anything else is a bug, shown as such without a traceback.
"""

from __future__ import annotations

import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from engram.errors import (
    Busy,
    Conflict,
    EngramError,
    Forbidden,
    FormatError,
    InvalidInput,
    NotFound,
)
from engram.loopback import check_token, host_names
from engram.vault import Vault
from engram.viewer import actions, pages
from engram.viewer.context import Viewer, viewer_of
from engram.viewer.health import Monitor, run_doctor, run_stale
from engram.viewer.render import environment
from engram.viewer.security import Guard, GuardMiddleware

log = logging.getLogger("engram.viewer")

_STATUS = (
    (InvalidInput, 400), (Forbidden, 403), (NotFound, 404), (Conflict, 409), (FormatError, 422), (Busy, 503),
)


def _engram_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EngramError)
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
    return viewer_of(request).page(
        request, "error.html", status, title="Could not do that", message=exc.message, hint=exc.hint
    )


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    text = "No page here." if exc.status_code == 404 else str(exc.detail)
    return viewer_of(request).page(
        request, "error.html", exc.status_code, title=f"{exc.status_code}", message=text,
        hint="The menu above lists every page.",
    )


def _bug(request: Request, exc: Exception) -> Response:
    log.exception("viewer: internal error on %s", request.url.path, exc_info=exc)
    return viewer_of(request).page(
        request, "error.html", 500, title="Internal error",
        message=f"{type(exc).__name__}: this is a bug in engram.",
        hint="The server's log has the traceback; please report it.",
    )


def build_app(vault: Vault, *, host: str = "127.0.0.1", port: int, token: str | None = None) -> Starlette:
    """The viewer for ``vault`` as an ASGI app, guarded for ``host:port`` (see
    :mod:`engram.viewer.security`)."""
    guard = Guard.for_server(host_names(host), port, check_token(token, "ENGRAM_VIEWER_TOKEN"))
    routes = [
        Route("/", pages.overview),
        Route("/items", pages.items),
        Route("/item/{id}", pages.item),
        Route("/item/{id}/edit", actions.edit_form, methods=["GET"]),
        Route("/item/{id}/edit", actions.edit, methods=["POST"]),
        Route("/item/{id}/delete", actions.delete_form, methods=["GET"]),
        Route("/item/{id}/delete", actions.delete, methods=["POST"]),
        Route("/go", pages.go),
        Route("/attachment", pages.attachment),
        Route("/graph", pages.graph),
        Route("/graph.json", pages.graph_json),
        Route("/search", pages.search),
        Route("/conflicts", pages.conflicts),
        Route("/conflicts/{id}/resolve", actions.resolve, methods=["POST"]),
        Route("/proposals", pages.proposals),
        Route("/proposals/{id}/accept", actions.accept, methods=["POST"]),
        Route("/proposals/{id}/dismiss", actions.dismiss, methods=["POST"]),
        Route("/stale", pages.stale),
        Route("/quarantine", pages.quarantine),
        Route("/quarantine/{id}/release", actions.release, methods=["POST"]),
        Route("/item/{id}/verify", actions.verify, methods=["POST"]),
        Route("/audit", pages.audit),
        Route("/merges", pages.merges),
        Route("/health", pages.health),
        Route("/health/summary", pages.health_summary),
        Route("/health/check", actions.recheck, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(resources.files("engram.viewer") / "static")), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={EngramError: _engram_error, HTTPException: _http_error, Exception: _bug},
    )
    app.state.viewer = Viewer(
        vault, guard, environment(), Monitor(vault.root, vault.actor, run_doctor),
        Monitor(vault.root, vault.actor, run_stale),
    )
    app.add_middleware(GuardMiddleware, guard=guard)
    return app
