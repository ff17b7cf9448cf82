"""A first-come, first-served queue in front of an exclusive ``flock``.

Why. ``flock`` is not fair: when the holder lets go, the kernel wakes every waiter and
whoever runs first wins — on a busy machine that is nearly always the process that just
let go and asks again for its next write. Eight writers making items at once saw one of
them wait 6.5 s while the others wrote a few milliseconds each; under a heavier load a
writer gave up after the lock's 30 s budget (issue 30; ``benchmarks/bench_lock.py``).

How. A process that finds the lock taken, or others already waiting, joins the queue: a
file in ``<lock>.queue/`` named by its arrival (nanoseconds, pid, a random suffix, so
names sort in arrival order and never collide), which it holds an exclusive ``flock``
on while it waits and while it holds the lock. It takes the lock only when no earlier
entry is left, and it leaves (unlink, then close) right after letting the lock go, so
the next in line is free at once. Waiters poll (flock has no timeout, and a writer's
budget must hold), the first in line every millisecond, each further back a millisecond
more for each writer ahead of it: 32 waiters polling at the head's rate took CPU from
the writer they waited for, and waiters polling far more slowly than the lock changes
hands reached the head asleep (``engram.store.fsio``). Arrivals that find waiters queue behind them rather
than trying the lock: the one that just let go cannot jump the queue.

Invariants:
- An entry appears by ``rename`` only once its owner holds its ``flock``, so an entry
  whose ``flock`` can be taken belongs to a process that died (the kernel drops a dead
  process's locks): the next waiter removes it, and nobody waits for the dead.
- The lock itself stays the one ``flock`` every engram process takes; the queue only
  orders who asks. A process that never queues (an older engram) still excludes and is
  excluded; it can only go first.
- POSIX only (``fcntl``); elsewhere the lock is taken by polling as before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import time
from pathlib import Path


def try_flock(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` if nobody holds one; whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


def waiting(folder: Path) -> bool:
    """Whether anyone is queued (cheap: one directory read)."""
    try:
        with os.scandir(folder) as entries:
            return any(not e.name.startswith(".") for e in entries)
    except FileNotFoundError:
        return False


class Entry:
    """This process's place in the queue, held from :meth:`join` until :meth:`leave`."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
        staging = folder / f".{self.name}"
        self._fd: int | None = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # a new file: nobody else can hold it
        os.rename(staging, folder / self.name)  # now visible, and visibly alive

    def ahead(self) -> int:
        """How many are queued ahead of this entry (0: its turn). Only the nearest live
        one is looked at (it is behind any other); dead ones on the way are removed."""
        try:
            names = sorted((n for n in os.listdir(self.folder) if not n.startswith(".") and n < self.name), reverse=True)
        except FileNotFoundError:
            return 0
        for i, name in enumerate(names):
            path = self.folder / name
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue  # left meanwhile
            try:
                if not try_flock(fd):
                    return len(names) - i  # alive, and ahead
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()  # its owner died (or has just left): not waited for
            finally:
                os.close(fd)
        return 0

    def leave(self) -> None:
        """Take this entry out of the queue (unlink first: whoever opens it afterwards
        finds it gone or unlocked)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            (self.folder / self.name).unlink()
        os.close(self._fd)
        self._fd = None
