"""What every page shares: the opened vault, the guard, the templates, the health monitor.

:meth:`Viewer.page` renders a template with the context every page needs (menu, CSRF
token, vault name); a request from htmx for a fragment gets the template's
fragment template the page names, so filtering a table replaces the table and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from engram.vault import Vault
from engram.viewer.health import Monitor
from engram.viewer.security import Guard

NAV = (
    ("/", "Overview"),
    ("/items", "Items"),
    ("/graph", "Graph"),
    ("/search", "Search"),
    ("/conflicts", "Conflicts"),
    ("/proposals", "Proposals"),
    ("/stale", "Stale"),
    ("/quarantine", "Quarantine"),
    ("/audit", "Audit log"),
    ("/merges", "Merges"),
    ("/health", "Health"),
)


@dataclass
class Viewer:
    """What every page shares: the vault, the guard (for the CSRF token) and templates."""

    vault: Vault
    guard: Guard
    env: jinja2.Environment
    health: Monitor  # doctor, in the background
    stale: Monitor  # the stale report, in the background
    nav: tuple[tuple[str, str], ...] = field(default=NAV)

    def changed(self) -> None:
        """A write went through the viewer: the background reports are out of date."""
        self.health.invalidate()
        self.stale.invalidate()

    def page(
        self, request: Request, template: str, status: int = 200, *, fragment: str | None = None,
        **context: Any,
    ) -> HTMLResponse:
        """Render ``template`` with the shared context; an htmx request (not a history
        restore) gets the ``fragment`` template instead, when the page names one."""
        values = {
            "request": request,
            "path": request.url.path,
            "params": dict(request.query_params),
            "csrf": self.guard.csrf_token,
            "nav": self.nav,
            "vault_name": self.vault.root.name,
            "actor": self.vault.actor,
            **context,
        }
        partial = (
            fragment is not None
            and request.headers.get("hx-request") == "true"
            and request.headers.get("hx-history-restore-request") != "true"
        )
        html = self.env.get_template(fragment if partial and fragment else template).render(values)
        return HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})


def viewer_of(request: Request) -> Viewer:
    viewer: Viewer = request.app.state.viewer
    return viewer
