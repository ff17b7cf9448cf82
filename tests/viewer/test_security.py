"""The viewer's guards: loopback names only, no foreign origins, a CSRF token on every
write, the optional token, strict headers, and no secret in a page."""

from __future__ import annotations

import subprocess

import pytest

from engram.errors import InvalidInput
from engram.viewer.security import CSP
from tests.mcp_helpers import engram_command
from tests.viewer.conftest import Viewer, start, stop


def test_only_loopback_hosts_are_accepted() -> None:
    proc = subprocess.run(
        engram_command("viewer", "--host", "0.0.0.0"), capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2 and "refusing to listen on '0.0.0.0'" in proc.stderr


def test_dns_rebinding_and_foreign_origins_are_refused(running: Viewer) -> None:
    assert running.get("/").status == 200
    assert running.get("/", Host=f"localhost:{running.port}").status == 200
    for host in ("evil.example.com", f"evil.example.com:{running.port}", "127.0.0.1:1", "127.0.0.1"):
        reply = running.get("/", Host=host)
        assert reply.status == 421 and "loopback" in reply.text, host
    reply = running.get("/", Origin="http://evil.example.com")
    assert reply.status == 403
    assert running.get("/", Origin=running.url).status == 200


def test_every_write_needs_the_csrf_token(running: Viewer) -> None:
    item = running.vault.get(running.ids["timeouts"])
    form = {"version": str(item.version), "title": "Hijacked"}
    for extra in ({}, {"_csrf": "0" * 64}):
        reply = running.request("POST", f"/item/{item.id}/edit", {**form, **extra})
        assert reply.status == 403 and "Reload the page" in reply.text
    hijack = running.request(
        "POST", f"/item/{item.id}/delete", {"version": str(item.version)},
        {"X-CSRF-Token": running.csrf(), "Sec-Fetch-Site": "cross-site"},
    )
    assert hijack.status == 403
    foreign = running.post(f"/item/{item.id}/edit", form, Origin="http://evil.example.com")
    assert foreign.status == 403
    assert running.vault.get(item.id) == item  # nothing was written


def test_pages_carry_strict_headers_and_no_secret(running: Viewer) -> None:
    reply = running.get("/items")
    assert reply.headers["content-security-policy"] == CSP
    assert "script-src 'self';" in CSP and "unsafe-inline" not in CSP
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["cache-control"] == "no-store"
    assert "<script>" not in reply.text  # no inline script: only <script src=...>


@pytest.fixture
def guarded(running: Viewer) -> Viewer:
    viewer = start(running.vault, running.ids, token="s3cret-viewer-token")
    yield viewer  # type: ignore[misc]
    stop(viewer)


def test_the_token_guards_every_page_and_never_shows(guarded: Viewer) -> None:
    assert guarded.get("/").status == 401
    assert guarded.get("/", Authorization="Bearer wrong").status == 401
    assert guarded.get("/?token=wrong").status == 401
    assert guarded.get("/static/viewer.css").status == 401
    opened = guarded.get("/items?kind=fact&token=s3cret-viewer-token")
    assert opened.status == 303 and opened.headers["location"] == "/items?kind=fact"
    cookie = opened.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "s3cret" not in cookie
    session = cookie.split(";")[0]
    page = guarded.get("/items?kind=fact", Cookie=session)
    assert page.status == 200 and "s3cret" not in page.text
    assert guarded.get("/", Authorization="Bearer s3cret-viewer-token").status == 200
    # a session cookie from another viewer (another secret) is not accepted
    assert guarded.get("/", Cookie=session.replace(session.split("=")[1], "0" * 64)).status == 401


def test_check_loopback_is_shared_with_the_mcp_server() -> None:
    from engram.loopback import check_loopback
    from engram.mcp.http import check_loopback as mcp_check

    assert mcp_check is check_loopback
    with pytest.raises(InvalidInput, match="loopback only"):
        check_loopback("192.168.1.10")


def test_an_oversized_form_is_refused_before_it_is_read(running: Viewer) -> None:
    item = running.vault.get(running.ids["repack"])
    reply = running.request(
        "POST", f"/item/{item.id}/edit", {"version": str(item.version), "content": "x" * (9 * 1024 * 1024)}
    )
    assert reply.status == 413 and "too large" in reply.text
    assert running.vault.get(item.id) == item
