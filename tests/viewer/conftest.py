"""A real viewer on a real port, over the demo vault plus what the queues need.

The vault is ``engram demo``'s, with an item titled ``<script>alert(1)</script>``, an
item flagged by a real three-way merge (two edits of one line); the demo itself has a
``contradicts`` edge. The server is the real app under uvicorn in a thread of the test process,
listening on a loopback port; the tests talk to it over HTTP (``http.client``) or
through headless Chromium (``test_browser.py``). Modules share one vault and server, so
tests that write pick their own items.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, sync_playwright

from engram.demo import build_demo
from engram.loopback import bind
from engram.vault import Vault
from engram.viewer import build_app
from tests.conftest import ROOT, hermetic_environ
from tests.team.test_conflicts import flag_by_merge

XSS = "<script>alert(1)</script>"
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts" / "viewer"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    text: str


@dataclass
class Viewer:
    """A running viewer: its address, its vault, and the ids the tests use."""

    vault: Vault
    port: int
    ids: dict[str, str]
    server: uvicorn.Server
    cookies: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> Response:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        body = urlencode(form).encode() if form is not None else None
        sent = {"Host": f"127.0.0.1:{self.port}"}
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        sent.update(headers or {})
        conn.request(method, path, body=body, headers=sent)
        reply = conn.getresponse()
        text = reply.read().decode("utf-8", errors="replace")
        conn.close()
        return Response(reply.status, {k.lower(): v for k, v in reply.getheaders()}, text)

    def get(self, path: str, **headers: str) -> Response:
        return self.request("GET", path, headers=headers)

    def csrf(self) -> str:
        match = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', self.get("/").text)
        assert match, "every page carries the CSRF token"
        return match.group(1)

    def post(self, path: str, form: dict[str, str], **headers: str) -> Response:
        return self.request("POST", path, {"_csrf": self.csrf(), **form}, headers)


class _FormReader(HTMLParser):
    def __init__(self, action: str) -> None:
        super().__init__(convert_charrefs=True)
        self.action, self.inside, self.fields = action, False, {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = a.get("action") == self.action
        elif not self.inside:
            return
        elif tag == "input" and a.get("type") not in ("checkbox", "submit") and "name" in a:
            self.fields[a["name"]] = a.get("value", "")
        elif tag == "select":
            self._select = a["name"]
        elif tag == "option" and self._select and "selected" in a:
            self.fields[self._select] = None  # filled by the option's text
        elif tag == "textarea":
            self._textarea = a["name"]
            self.fields[a["name"]] = ""

    def handle_data(self, data: str) -> None:
        if self._select and self.fields.get(self._select, "") is None:
            self.fields[self._select] = data
        elif self._textarea:
            self.fields[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea:
            # as browsers do (HTML spec): a newline right after <textarea> is not content
            self.fields[self._textarea] = self.fields[self._textarea].removeprefix("\n")
            self._textarea = None


def form_fields(page: str, action: str) -> dict[str, str]:
    """The fields a browser would send for the form posting to ``action``."""
    reader = _FormReader(action)
    reader.feed(page)
    return dict(reader.fields)


def start(vault: Vault, ids: dict[str, str], token: str | None = None) -> Viewer:
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = build_app(vault, host="127.0.0.1", port=port, token=token)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the viewer did not start"
        time.sleep(0.02)
    viewer = Viewer(vault, port, ids, server)
    viewer.thread = thread  # type: ignore[attr-defined]
    return viewer


def stop(viewer: Viewer) -> None:
    viewer.server.should_exit = True
    viewer.thread.join(10)  # type: ignore[attr-defined]
    state = viewer.server.config.app.state.viewer  # type: ignore[union-attr]
    state.health.wait(30)
    state.stale.wait(30)


def demo_vault(root: Path) -> tuple[Vault, dict[str, str]]:
    build_demo(root).close()
    vault = Vault.open(root)  # as `engram viewer` opens it: the actor from the environment
    items = {i.title: i.id for i in vault.list()}
    ids = {
        "repack": items["Use pg_repack instead of VACUUM FULL on live tables"],
        "frozen": items["Prefer immutable value objects"],
        "flaky": items["Flaky integration tests hide real failures"],
        "quarantine": items["Quarantine a flaky test within one day"],
        "retry": items["Retry idempotent HTTP calls with jittered backoff"],
        "timeouts": items["Client timeouts must be shorter than the load balancer's"],
        "retryall": items["Retry any HTTP call that times out"],
    }
    ids["xss"] = vault.create(
        XSS, f"Body with {XSS} and <img src=x onerror=alert(2)> and [a link](javascript:alert(3)).",
        domain=["security"], kind="observation", summary=f"summary {XSS}", tags=["xss"],
    ).id
    vault.link(ids["xss"], "exemplifies", ids["retry"], evidence="so the script title shows on a neighbour's page")
    # maintenance's proposals: a merge (an exact duplicate), a link (a near one), a pattern
    tune = vault.get(items["Tune autovacuum per table for hot tables"])
    vault.create(tune.title, tune.content, domain=list(tune.domain_tags), kind=tune.kind, dedupe=False)
    ids["busy"] = vault.create(
        "Use pg_repack instead of VACUUM FULL on busy tables",
        "`VACUUM FULL` rewrites the table under an ACCESS EXCLUSIVE lock, so every query\n"
        "on it waits. `pg_repack` rebuilds it online.",
        domain=["ops", "postgres"], kind="procedure", dedupe=False,
    ).id
    vault.maintain("rem")
    for proposal in vault.proposals():
        ids[f"proposal-{proposal.kind}"] = proposal.id
    # a two-step succession chain: old → middle → new
    chain = [vault.create(f"Deploy runbook v{n}", f"Steps of version {n}.", domain=["ops", "deploy"]).id for n in (1, 2, 3)]
    vault.supersede(chain[0], chain[1], reason="v2 replaces v1")
    vault.supersede(chain[1], chain[2], reason="v3 replaces v2")
    ids["v1"], ids["v2"], ids["v3"] = chain
    ids["answer"] = flag_by_merge(vault, "Answer to everything").id
    ids["answer2"] = flag_by_merge(vault, "Second flagged answer").id
    return vault, ids


@pytest.fixture(scope="package")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    home = tmp_path_factory.mktemp("viewer-home")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in hermetic_environ(home).items():
            mp.setenv(key, value)
        vault, ids = demo_vault(tmp_path_factory.mktemp("viewer") / "demo")
        viewer = start(vault, ids)
        yield viewer
        stop(viewer)
        vault.close()


# ---------------------------------------------------------------------- the browser


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Headless Chromium for the package's browser tests (fails, not skips, without it)."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `apt-get install chromium` (.ci/run does it)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


@contextmanager
def browse(browser: Browser, url: str) -> Iterator[Page]:
    """A fresh page on the viewer at ``url`` that fails the test on any console error (a
    Content-Security-Policy violation included) or any dialog a script opened."""
    context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    dialogs: list[str] = []
    # 409 (a stale edit, blocks left), 400 and 403 are pages the tests ask for; 404 or 500 never
    expected = re.compile(r"Failed to load resource: .* status of (400|403|409)")
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" and not expected.match(m.text) else None)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    yield opened
    context.close()
    assert errors == [], "the browser reported errors"
    assert dialogs == [], "a script in the content ran"


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
