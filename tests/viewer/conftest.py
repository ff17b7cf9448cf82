"""A real viewer on a real port, over the demo vault plus what the queues need, and one
over an adopted Obsidian vault.

The demo vault is ``engram demo``'s, with an item titled ``<script>alert(1)</script>``, an
item flagged by a real three-way merge (two edits of one line); the demo itself has a
``contradicts`` edge. The server is the real app under uvicorn in a thread of the test process,
listening on a loopback port; the tests talk to it over HTTP (``http.client``) or
through headless Chromium (``test_browser.py``). Modules share one vault and server, so
tests that write pick their own items.

The Obsidian vault (:func:`obsidian_vault`, fixture ``obsidian``) is a copy, in a temp
folder, of kepano's real vault from ``../shared/datasets/vaults`` (103 notes linked by
wikilinks in bodies and properties, an image in ``Attachments/``), adopted in place with
``Vault.init``, plus notes that use what kepano's does not: heading, block and alias
links, note, section and image embeds, an embed cycle and a chain deeper than the bound,
``%% comments %%``, empty properties, and a note whose name, heading, alias and property
are HTML meant to run, with an SVG that holds a script and a symlink pointing out of the
vault; and two items an agent wrote, joined by a typed synapse and linking notes.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
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
from tests.conftest import ROOT, VAULTS, hermetic_environ, shared
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
        got: dict[str, str] = {}
        for key, value in reply.getheaders():  # a repeated header is one list, as HTTP says
            got[key.lower()] = f"{got[key.lower()]}, {value}" if key.lower() in got else value
        return Response(reply.status, got, text)

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


HOSTILE = '<img src=x onerror=alert(1)>'
HOSTILE_HEADING = '<script>alert(2)</script> & "quoted"'
#: Notes added to the kepano copy: path → text (written as a person would, in Obsidian).
OBSIDIAN_NOTES = {
    "Notes/Reading list.md": """---
categories:
  - "[[Books]]"
aliases:
  -
status:
tags:
  - reading
---
# Reading list

Start with [[Out of Control#Ideas|the ideas in Out of Control]], then [[Kevin Kelly]].
The [[Reading list#Ideas|ideas below]] and [[#Cover]] on this page; one line: [[Idea log#^remix]].
A note not written yet: [[Someday maybe]]. %% a private aside %%

%%
A whole block the owner hid.
[[Hidden link]]
%%

## Cover
![[out-of-control.jpg|120]]

## Embedded
![[Kevin Kelly]]

![[Idea log#Second idea]]

![[Daily.base#Monthly]]

## Ideas
Everything is a remix. ^remix
""",
    "Notes/Idea log.md": """# Idea log

## First idea
Everything is a remix, says [[Kevin Kelly]]. ^remix

## Second idea
Creativity is combinatory uniqueness.

- a list item with a block id ^listed

## Third idea
Not embedded anywhere. ![the cover](../Attachments/out-of-control.jpg) ![gone](nowhere.png)
""",
    "Notes/Loop A.md": "Loop A embeds Loop B:\n\n![[Loop B]]\n",
    "Notes/Loop B.md": "Loop B embeds Loop A:\n\n![[Loop A]]\n",
    **{f"Notes/Depth {n}.md": f"Level {n}.\n\n![[Depth {n + 1}]]\n" for n in range(1, 6)},
    f"Notes/{HOSTILE}.md": f"""---
who: "[[<b>bold</b>]]"
---
## {HOSTILE_HEADING}
Text under the heading. ^blk

[[Kevin Kelly|" onmouseover="alert(3)]] and ![[evil.svg]] and ![[escape.png]]
""",
    "Notes/Links to the hostile note.md": f"""See [[{HOSTILE}#{HOSTILE_HEADING}]].

![[{HOSTILE}#{HOSTILE_HEADING}]]
""",
}
EVIL_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40">'
    '<script>alert(4)</script><rect width="40" height="40" fill="red"/></svg>\n'
)


def obsidian_vault(root: Path) -> tuple[Vault, dict[str, str]]:
    """A copy of kepano's vault plus :data:`OBSIDIAN_NOTES`, adopted in place; ids by title."""
    shutil.copytree(shared(VAULTS / "kepano-obsidian"), root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    root.chmod(0o755)
    for rel, text in OBSIDIAN_NOTES.items():
        (root / rel).write_text(text, encoding="utf-8")
    (root / "Attachments" / "evil.svg").write_text(EVIL_SVG, encoding="utf-8")
    os.symlink("/etc/hostname", root / "Attachments" / "escape.png")
    (root / ".trash").mkdir()
    (root / ".trash" / "hidden.png").write_bytes((root / "Attachments" / "out-of-control.jpg").read_bytes())
    Vault.init(root).close()
    vault = Vault.open(root)
    # an agent's two items beside the person's notes: a typed synapse, and wikilinks in a body
    books = vault.create("Kevin Kelly's books, as an agent noted them", "[[Kevin Kelly]] wrote [[Out of Control]].",
                         domain=["agents"], kind="observation").id
    parts = vault.create("Emergence needs many small parts", "Seen in [[Out of Control]].",
                         domain=["agents"], kind="pattern").id
    vault.link(books, "exemplifies", parts, evidence="the book argues it")
    return vault, {i.title: i.id for i in vault.list(include_hidden=True)}


@pytest.fixture(scope="package")
def obsidian(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    """A viewer over :func:`obsidian_vault` (read only: no test writes to it)."""
    home = tmp_path_factory.mktemp("obsidian-home")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in hermetic_environ(home).items():
            mp.setenv(key, value)
        vault, ids = obsidian_vault(tmp_path_factory.mktemp("obsidian") / "kepano")
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
