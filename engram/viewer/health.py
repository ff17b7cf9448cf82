"""Health from ``doctor``, checked in the background so no page waits for it.

``engram doctor`` reads every item file (hashes, derived sections, paths): about half a
second per thousand items, far over a page's budget at 10k. The monitor runs it in a
thread, on its own :class:`~engram.vault.Vault` (its own SQLite connection, so pages
never queue behind it), when a page first asks, when the last report is older than
:data:`MAX_AGE` seconds, and after every change made through the viewer. Pages show the
latest report with its age and say when a check is running. Only one check runs at a
time; it never fixes anything (``doctor --fix`` stays a deliberate act on the CLI).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engram.doctor import Report
from engram.errors import EngramError
from engram.store.model import now
from engram.vault import Vault

MAX_AGE = 300.0


@dataclass(frozen=True, slots=True)
class Health:
    report: Report | None  # None until the first check finishes
    checked_at: str | None
    running: bool
    error: str | None


class HealthMonitor:
    def __init__(self, root: Path, actor: str) -> None:
        self.root = root
        self.actor = actor
        self._lock = threading.Lock()
        self._report: Report | None = None
        self._checked_at: str | None = None
        self._checked_mono = 0.0
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self._again = False

    def current(self) -> Health:
        """The latest report, starting a check when there is none or it is old."""
        with self._lock:
            stale = self._report is None or time.monotonic() - self._checked_mono > MAX_AGE
            running = self._thread is not None
            if stale and not running and self._error is None:
                self._start()
                running = True
            return Health(self._report, self._checked_at, running, self._error)

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
        self._thread = threading.Thread(target=self._run, name="engram-viewer-doctor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            report: Report | None = None
            error: str | None = None
            try:
                with Vault.open(self.root, actor=self.actor) as vault:
                    report = vault.doctor()
            except EngramError as exc:
                error = str(exc)
            with self._lock:
                if report is not None:
                    self._report, self._checked_at = report, now()
                    self._checked_mono = time.monotonic()
                self._error = error
                if not self._again:
                    self._thread = None
                    return
                self._again = False
