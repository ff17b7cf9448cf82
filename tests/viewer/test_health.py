"""The Health page while doctor runs (issue 28): the step and how far it has got, the
last finished report kept on screen during a re-check, seen in Chromium.

A real doctor runs in the monitor's real worker process; :func:`paused_doctor` only
stops it half way through "checking items" until the test lets it go, by a FIFO: the
worker blocks opening it until the test opens it too, so the test sees the page at a
known point of a run without sleeping or racing it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from engram.store.progress import Bar, Progress
from engram.vault import Vault
from engram.viewer import health
from engram.viewer.health import Checkup, Monitor
from tests.viewer.conftest import Viewer, browse, shot, start, stop

NOTES = 6
PAUSE_AT = 3  # of NOTES: where "checking items" waits for the test
WORKER = 120_000  # ms: a worker process starting and opening the vault, on a busy machine


def gate_of(root: str | Path) -> Path:
    return Path(root).parent / "gate"


class _Pausing:
    """A step's bar that, in "checking items", waits at :data:`PAUSE_AT` for the gate."""

    def __init__(self, inner: AbstractContextManager[Bar], label: str, root: str) -> None:
        self.inner, self.label, self.root, self.done = inner, label, root, 0

    def __enter__(self) -> _Pausing:
        self.bar = self.inner.__enter__()
        return self

    def update(self, n_steps: int) -> None:
        self.bar.update(n_steps)
        self.done += n_steps
        if self.label == "checking items" and self.done == PAUSE_AT:
            try:
                with open(gate_of(self.root), encoding="utf-8") as gate:  # blocks until the test opens it
                    gate.read()
            except FileNotFoundError:
                pass  # no gate laid: run through

    def __exit__(self, *exc: object) -> None:
        self.inner.__exit__(*exc)  # type: ignore[arg-type]


def paused_doctor(root: str, actor: str) -> Checkup | str:
    """The viewer's doctor job, its progress told to the monitor as usual, pausing half way."""
    told = health.reporter()
    assert told is not None, "a monitor's worker has a reporter"

    def progress(label: str, length: int) -> AbstractContextManager[Bar]:
        return _Pausing(told(label, length), label, root)

    pausing: Progress = progress
    return health.run_doctor(root, actor, pausing)


def lay_gate(root: Path) -> None:
    os.mkfifo(gate_of(root))


def open_gate(root: Path) -> None:
    """Let a paused run go on: open the FIFO (read-write never blocks, and frees a worker
    blocked opening it), take it away (a worker not there yet runs through), close it."""
    gate = gate_of(root)
    if not gate.exists():
        return
    fd = os.open(gate, os.O_RDWR)
    gate.unlink()
    os.write(fd, b"go")
    os.close(fd)


@pytest.fixture
def paused(tmp_path: Path) -> Iterator[Viewer]:
    root = tmp_path / "vault"
    vault = Vault.init(root)
    for n in range(NOTES):
        vault.create(f"Note {n}", f"Body of note {n}.", domain=["notes"], dedupe=False)
    lay_gate(root)
    viewer = start(vault, {})
    state = viewer.server.config.app.state.viewer  # type: ignore[union-attr]
    state.health = Monitor(vault.root, vault.actor, paused_doctor)  # before any page asks
    try:
        yield viewer
    finally:
        open_gate(root)  # never leave a worker waiting, whatever the test did
        stop(viewer)
        vault.close()


def test_the_health_page_shows_the_step_and_keeps_the_last_report_while_a_check_runs(
    browser: Browser, paused: Viewer
) -> None:
    """The reproduction: the page said "Checking…" for the whole run (minutes on 6.6k notes)."""
    root = paused.vault.root
    with browse(browser, paused.url) as page:
        page.goto("/health")
        step = page.locator("#health-panel .health-step")
        expect(step).to_have_text(f"Checking (engram doctor) — checking items: {PAUSE_AT} of {NOTES}…", timeout=WORKER)
        expect(page.locator("#health-panel progress")).to_have_attribute("value", str(PAUSE_AT))
        shot(page, "health-checking")
        open_gate(root)
        expect(page.locator("#health-panel")).to_contain_text(f"{NOTES} items, 0 synapses · checked", timeout=WORKER)
        expect(step).to_have_count(0)  # the run is over: the panel stops polling
        expect(page.locator("#health-panel")).to_contain_text("No problems.")

        lay_gate(root)
        page.get_by_role("button", name="Check again").click()
        expect(step).to_have_text(f"Checking again (engram doctor) — checking items: {PAUSE_AT} of {NOTES}…",
                                  timeout=WORKER)
        # the last finished report stays on screen while the re-check runs
        expect(page.locator("#health-panel")).to_contain_text(f"{NOTES} items, 0 synapses · checked")
        expect(page.locator("#health-panel")).to_contain_text("No problems.")
        shot(page, "health-checking-again")
        open_gate(root)
        expect(step).to_have_count(0, timeout=WORKER)

        # the overview's box tells the same
        lay_gate(root)
        page.get_by_role("button", name="Check again").click()
        expect(step).to_have_count(1)
        page.goto("/")
        expect(page.locator("#health-status")).to_contain_text(f"checking items: {PAUSE_AT} of {NOTES}", timeout=WORKER)
        expect(page.locator("#health-status")).to_contain_text("No problems")
        open_gate(root)
        expect(page.locator("#health-status .health-step")).to_have_count(0, timeout=WORKER)


def test_a_step_told_by_the_worker_reads_back_in_the_server(paused: Viewer) -> None:
    """Over plain HTTP: the first run, paused, is told as its step; nothing is drawn
    once it is over."""
    root = paused.vault.root
    state = paused.server.config.app.state.viewer  # type: ignore[union-attr]
    page = paused.get("/health").text
    assert "Checking (engram doctor)" in page and 'hx-get="/health"' in page
    # the worker tells its step as it reaches it: wait for that state
    deadline = time.monotonic() + 60
    seen = state.health.current()
    while seen.step is None or seen.step.label != "checking items" or seen.step.done < PAUSE_AT:
        assert seen.running and seen.error is None, seen
        assert time.monotonic() < deadline, f"the run never reached the pause: {seen}"
        time.sleep(0.02)
        seen = state.health.current()
    assert str(seen.step) == f"checking items: {PAUSE_AT} of {NOTES}"
    assert f"checking items: {PAUSE_AT} of {NOTES}" in paused.get("/health").text
    open_gate(root)
    assert state.health.wait(60)
    done = state.health.current()
    assert not done.running and done.step is None and done.report.items == NOTES
    page = paused.get("/health").text
    assert "health-step" not in page and 'hx-get="/health"' not in page
