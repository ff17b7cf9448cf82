"""Vectors filled in the background by the processes that live long (``engram serve``,
the viewer), so a search never waits for an embedding.

A daemon thread embeds the items that have no vector yet, a small batch at a time
(:meth:`engram.recall.vectors.Space.fill`), then looks again every few seconds for items
written since. It runs beside searches: the encoder works outside the space's lock and a
search uses whatever vectors are in already (saying how many are missing). It gives up
quietly when the encoder cannot run (searches say why) and idles while
``recall.meaning`` is 0. ``stop`` ends it at the next batch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from engram.errors import EngramError, ModelUnavailable
from engram.items.state import VaultState
from engram.recall.meaning import target
from engram.recall.settings import recall_settings

log = logging.getLogger(__name__)

#: Items per batch: a few hundred milliseconds of one core, so stopping is prompt.
BATCH = 16
#: Seconds between looks for items written since the last fill.
PAUSE = 5.0


class Filler:
    """The background fill of one process (see the module docstring)."""

    def __init__(self, current: Callable[[], VaultState | None], pause: float = PAUSE) -> None:
        self._current = current
        self._pause = pause
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engram-embed", daemon=True)
        #: Set each time a look found nothing left to embed (tests wait on it).
        self.idle = threading.Event()

    def start(self) -> Filler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self._round():
                    return
            except EngramError as exc:  # a busy or broken index: try again later
                log.warning("background embedding paused: %s", exc)
            self._stop.wait(self._pause)

    def _round(self) -> bool:
        """Embed until nothing is missing; False when the encoder cannot run here."""
        state = self._current()
        if state is None or recall_settings(state).meaning <= 0:
            self.idle.set()
            return True
        # No refresh here: the index is brought up to the files by the searches and writes
        # of the main thread; this thread embeds what the index holds.
        vectors = target(state, recall_settings(state))
        while not self._stop.is_set():
            try:
                if vectors.fill(limit=BATCH, batch=BATCH) == 0:
                    self.idle.set()
                    return True
            except ModelUnavailable as exc:
                log.warning("no background embedding: %s", exc)
                self.idle.set()
                return False
            self.idle.clear()
        return True
