"""How a long step tells an adapter how far it has got, without knowing who watches.

A step that walks many files (indexing a vault, doctor's checks) takes a
:data:`Progress` — given the step's label and length, it opens a context manager whose
value advances with ``update(n)`` (``click.progressbar`` is one) — or ``None``, and
calls :func:`bar` either way. Whether anything is drawn, and when, is the adapter's
business (the CLI draws on a terminal only, and only for a step that runs over a
second: :func:`engram.cli.terminal.terminal_progress`); the core never writes to a
stream itself.

Invariant: a step's result never depends on whether progress is watched.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class Bar(Protocol):
    def update(self, n_steps: int) -> None: ...


#: Opens a progress bar for one long step, given its label and length.
Progress = Callable[[str, int], AbstractContextManager[Bar]]


class _NoBar:
    def update(self, n_steps: int) -> None:
        pass


def bar(progress: Progress | None, label: str, length: int) -> AbstractContextManager[Bar]:
    """``progress``'s bar for the step, or one that draws nothing."""
    return nullcontext(_NoBar()) if progress is None else progress(label, length)
