"""Maintenance on a schedule, inside a long-running server (``engram serve``).

``lifecycle.schedule`` in ``engram.yaml`` gives minutes between runs per stage (0 = off,
the default). A :class:`Scheduler` thread wakes every ``tick`` seconds and runs the
largest stage that is due (``rem`` includes ``deep``, which includes ``light``), under
the vault lock like any write, so several servers on one vault simply take turns. The
time of each stage's last run is kept in ``.engram/maintenance.json`` (machine-local),
shared by every process on the machine, so five servers do not run five deep passes.
A failing run is logged and retried at the next due time; it never stops the server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable

from engram.errors import EngramError
from engram.items.state import VaultState
from engram.lifecycle.maintenance import STAGES, maintain
from engram.lifecycle.settings import lifecycle_settings
from engram.store.fsio import atomic_write

STATE_FILE = "maintenance.json"
log = logging.getLogger("engram.lifecycle")


def _last_runs(state: VaultState) -> dict[str, float]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((state.state_dir / STATE_FILE).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))}
    return {}


def due_stage(state: VaultState, at: float | None = None) -> str | None:
    """The largest stage whose interval has passed since its last run, or None."""
    schedule = lifecycle_settings(state).schedule
    runs = _last_runs(state)
    current = time.time() if at is None else at
    for stage in reversed(STAGES):
        minutes = float(schedule.get(stage, 0) or 0)
        if minutes > 0 and current - runs.get(stage, 0.0) >= minutes * 60:
            return stage
    return None


def run_due(state: VaultState, at: float | None = None) -> str | None:
    """Run the due stage, if any, and record it (and the stages it includes); returns it."""
    with state.lock.hold():
        stage = due_stage(state, at)
        if stage is None:
            return None
        maintain(state, stage)
        runs = _last_runs(state)
        stamp = time.time() if at is None else at
        for included in STAGES[: STAGES.index(stage) + 1]:
            runs[included] = stamp
        atomic_write(state.state_dir / STATE_FILE, json.dumps(runs, sort_keys=True).encode("utf-8"))
        return stage


class Scheduler:
    """A daemon thread that runs due maintenance stages (see the module docstring)."""

    def __init__(self, current: Callable[[], VaultState | None], tick: float = 30.0) -> None:
        self._current = current
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="engram-maintenance", daemon=True)

    def start(self) -> Scheduler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self._tick):
            state = self._current()
            if state is None:
                continue
            try:
                stage = run_due(state)
                if stage:
                    log.info("maintenance: ran %s", stage)
            except EngramError as exc:
                log.warning("maintenance: %s", exc)
            except Exception:
                log.exception("maintenance failed")
