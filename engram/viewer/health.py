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

While a run goes on, pages show which step it is in and how far it has got ("checking
items: 2,300 of 6,571"), through the progress callback doctor draws its terminal bars
with (:data:`engram.store.progress.Progress`): in the worker, :func:`reporter` gives one
that writes the open step's label and count into a small block of shared memory the
monitor handed the worker at its start (:class:`Step`), and :meth:`Monitor.current` reads
it. A page polls while a run goes on and keeps the last finished report on screen.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import EngramError
from engram.store.model import now
from engram.store.progress import Bar, Progress
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
class Step:
    """Where a running check is: the step it is in (``"checking items"``) and how far
    it has got; ``total`` is 0 between the steps that report (a moment each)."""

    label: str
    done: int
    total: int

    def __str__(self) -> str:
        return f"{self.label}: {self.done:,} of {self.total:,}" if self.label else ""


@dataclass(frozen=True, slots=True)
class Health:
    """A monitor's state: the latest report (None until the first run finishes), and
    while a run goes on, the step it is in (None when the job reports none)."""

    report: Any
    checked_at: str | None
    running: bool
    error: str | None
    step: Step | None = None


#: The bytes of shared memory a step is told through: "done\ttotal\tlabel", UTF-8.
_CELL_BYTES = 256
#: In the worker: the shared memory its monitor handed it (set by :func:`_attach`).
_cell: Any = None


def _attach(cell: Any) -> None:
    """The worker's initializer: keep the monitor's shared memory for :func:`reporter`."""
    global _cell
    _cell = cell


def _tell(cell: Any, label: str, done: int, total: int) -> None:
    text = f"{done}\t{total}\t{label}".encode()[:_CELL_BYTES - 1]
    cell.value = text.decode("utf-8", "ignore").encode()  # never half a character


def _read(cell: Any) -> Step | None:
    raw: bytes = cell.value
    if not raw:
        return None
    done, total, label = raw.decode().split("\t", 2)
    return Step(label, int(done), int(total))


class _Told:
    """One step's bar, told to the monitor: each ``update`` writes the new count."""

    def __init__(self, cell: Any, label: str, total: int) -> None:
        self.cell, self.label, self.total, self.done = cell, label, total, 0

    def update(self, n_steps: int) -> None:
        self.done += n_steps
        _tell(self.cell, self.label, self.done, self.total)


def reporter() -> Progress | None:
    """In a monitor's worker, the :data:`Progress` that tells the monitor each step and
    its count (the steps doctor draws as bars on a terminal); None anywhere else."""
    cell = _cell
    if cell is None:
        return None

    @contextmanager
    def step(label: str, length: int) -> Iterator[Bar]:
        _tell(cell, label, 0, length)
        try:
            yield _Told(cell, label, length)
        finally:
            _tell(cell, "", 0, 0)

    def progress(label: str, length: int) -> AbstractContextManager[Bar]:
        return step(label, length)

    return progress


def run_doctor(root: str, actor: str, progress: Progress | None = None) -> Checkup | str:
    """``doctor`` (no fixes) on the vault at ``root``, in the worker; a string on failure.
    Its steps are told to the monitor (:func:`reporter`), or to ``progress`` when given."""
    try:
        with Vault.open(root, actor=actor) as vault:
            report = vault.doctor(progress=progress if progress is not None else reporter())
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
        self._cell: Any = None  # the running check's shared memory (see reporter)

    def current(self) -> Health:
        """The latest report, starting a check when there is none or it is old; while a
        check runs, the step it is in."""
        with self._lock:
            stale = self._report is None or time.monotonic() - self._checked_mono > MAX_AGE
            if stale and self._thread is None and self._error is None:
                self._start()
            running = self._thread is not None
            step = _read(self._cell) if running and self._cell is not None else None
            return Health(self._report, self._checked_at, running, self._error, step)

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
        name = getattr(self.job, "__name__", "check")
        self._thread = threading.Thread(target=self._run, name=f"engram-viewer-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # spawn, not fork: the server process has threads, and a forked copy of them
        # (locks held mid-request) is not safe.
        context = multiprocessing.get_context("spawn")
        while True:
            try:
                cell = context.Array("c", _CELL_BYTES)  # handed to the worker as it starts
                with self._lock:
                    self._cell = cell
                with ProcessPoolExecutor(1, mp_context=context, initializer=_attach, initargs=(cell,)) as pool:
                    result = pool.submit(self.job, str(self.root), self.actor).result()
            except (OSError, RuntimeError) as exc:  # no processes allowed here, or it died
                result = f"could not run the check: {exc}"
            with self._lock:
                self._cell = None
                if isinstance(result, str):
                    self._error = result
                else:
                    self._report = result
                    self._checked_at, self._checked_mono, self._error = now(), time.monotonic(), None
                if not self._again:
                    self._thread = None
                    return
                self._again = False
