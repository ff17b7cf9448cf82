"""Reports that read the whole vault, made in the background so no page waits for them.

``engram doctor`` reads every item file (hashes, derived sections, paths) and the stale
report weighs every shared item's freshness: seconds at 10k items, far over a page's
budget. A :class:`Monitor` runs one such job (a module-level function of the vault's
root and actor, :func:`run_doctor` or :func:`run_stale`) in a separate process (one
worker, started for the job and gone after it), so it neither holds a page up nor
competes with page requests for the interpreter: when a page first asks, when the last
report is older than :data:`MAX_AGE` seconds and a page asks again, after every change
made through the viewer, and when a person presses "Check again". Pages show the latest
report with its age and say when a run is going on. One run at a time per job; none
changes anything (``doctor --fix`` stays a deliberate act on the command line).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import EngramError
from engram.store.model import now
from engram.vault import Vault

MAX_AGE = 600.0


@dataclass(frozen=True, slots=True)
class Finding:
    """One doctor problem as the pages show it."""

    code: str
    path: str
    message: str
    fixable: bool


@dataclass(frozen=True, slots=True)
class Checkup:
    items: int
    synapses: int
    problems: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class Health:
    """A monitor's state: the latest report (None until the first run finishes)."""

    report: Any
    checked_at: str | None
    running: bool
    error: str | None


def run_doctor(root: str, actor: str) -> Checkup | str:
    """``doctor`` (no fixes) on the vault at ``root``, in the worker; a string on failure."""
    try:
        with Vault.open(root, actor=actor) as vault:
            report = vault.doctor()
    except EngramError as exc:
        return str(exc)
    problems = tuple(Finding(p.code, p.path, p.message, p.fixable) for p in report.problems)
    return Checkup(report.items, report.synapses, problems)


def run_stale(root: str, actor: str) -> Any:
    """The stale report (the 200 oldest-verified), in the worker; a string on failure."""
    try:
        with Vault.open(root, actor=actor) as vault:
            return vault.stale_report(limit=STALE_LIMIT)
    except EngramError as exc:
        return str(exc)


STALE_LIMIT = 200


class Monitor:
    def __init__(self, root: Path, actor: str, job: Callable[[str, str], Any]) -> None:
        self.root = root
        self.actor = actor
        self.job = job
        self._lock = threading.Lock()
        self._report: Any = None
        self._checked_at: str | None = None
        self._checked_mono = 0.0
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self._again = False

    def current(self) -> Health:
        """The latest report, starting a check when there is none or it is old."""
        with self._lock:
            stale = self._report is None or time.monotonic() - self._checked_mono > MAX_AGE
            if stale and self._thread is None and self._error is None:
                self._start()
            return Health(self._report, self._checked_at, self._thread is not None, self._error)

    def invalidate(self) -> None:
        """The vault changed: check again (after the running check, if one is)."""
        with self._lock:
            self._error = None
            if self._thread is not None:
                self._again = True
            else:
                self._start()

    def wait(self, timeout: float) -> bool:
        """Wait for a running check to finish (for tests and benchmarks); True if none runs."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self._thread is None

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"engram-viewer-{self.job.__name__}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                # spawn, not fork: the server process has threads, and a forked copy of
                # them (locks held mid-request) is not safe.
                with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                    result = pool.submit(self.job, str(self.root), self.actor).result()
            except (OSError, RuntimeError) as exc:  # no processes allowed here, or it died
                result = f"could not run the check: {exc}"
            with self._lock:
                if isinstance(result, str):
                    self._error = result
                else:
                    self._report = result
                    self._checked_at, self._checked_mono, self._error = now(), time.monotonic(), None
                if not self._again:
                    self._thread = None
                    return
                self._again = False
