"""File-system primitives: bounded reads, atomic replace, append-only lines, the write lock.

Invariants:

- Vault files are read only through :func:`read_regular`: a regular file, opened without
  following a symlink (``O_NOFOLLOW``) and never blocking (``O_NONBLOCK``: a FIFO cannot
  hang a read), and at most a given number of bytes. A symlink, device, FIFO or socket is
  :class:`~engram.errors.UnsafeFile` and is never opened; a file above the limit is
  :class:`~engram.errors.FileTooLarge` and is not read at all. Files arrive from teammates
  through git, so a link to ``/dev/zero`` or a 50 MB note must cost an error, not a hang.

- A file the vault writes is either its old bytes or its new bytes, never a mix: the new
  bytes go to a hidden temp file in the same folder, are flushed and fsynced, and then
  renamed over the target (``os.replace`` is atomic on POSIX and Windows).
- Writing bytes identical to what is on disk does nothing (no new mtime, no churn for
  git, Obsidian or the index).
- The write lock is one ``flock`` on ``.engram/write.lock``. Every read-modify-write of
  vault files runs under it, so concurrent processes (one MCP server per agent session)
  serialise their writes and none is lost. It is re-entrant within a process, and a
  process that dies releases it (the kernel drops the lock with the descriptor). Those
  who find it taken queue for it first come, first served (:mod:`engram.store.lockqueue`),
  each for up to its stated budget.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from engram.errors import Busy, FileTooLarge, StorageError, UnsafeFile

TEMP_SUFFIX = ".engram-tmp"

try:  # POSIX
    import fcntl

    from engram.store import lockqueue

    _try_lock = lockqueue.try_flock

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    lockqueue = None  # type: ignore[assignment]

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]


_READ_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def too_large(relpath: str, size: int, limit: int) -> FileTooLarge:
    return FileTooLarge(
        relpath,
        f"the file is {size:,} bytes; engram reads at most {limit:,} "
        "(split the item, or move the large part out of the vault)",
    )


def read_regular(path: str | os.PathLike[str], relpath: str, limit: int) -> tuple[os.stat_result, bytes]:
    """(stat, bytes) of the regular file at ``path``, read as the module docstring says.

    Raises FileNotFoundError (nothing there, or a parent is not a folder), UnsafeFile,
    FileTooLarge, StorageError (any other I/O failure). ``relpath`` names the file in errors.
    """
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(relpath, f"is {file_kind(st.st_mode)}, not a regular file; engram does not follow or read it")
        if st.st_size > limit:
            raise too_large(relpath, st.st_size, limit)
        fd = os.open(path, _READ_FLAGS)
    except NotADirectoryError as exc:
        raise FileNotFoundError(str(path)) from exc
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a symlink since the lstat
            raise UnsafeFile(relpath, "is a symbolic link; engram does not follow it") from exc
        raise StorageError(f"cannot read {relpath}: {exc.strerror}.", hint="Check permissions.") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(relpath, f"is {file_kind(st.st_mode)}, not a regular file")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise StorageError(f"cannot read {relpath}: {exc.strerror}.", hint="Check permissions.") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # grew since the stat
        raise too_large(relpath, len(data), limit)
    return st, data


def _fsync_enabled() -> bool:
    return os.environ.get("ENGRAM_FSYNC", "1") != "0"


def atomic_write(path: Path, data: bytes) -> bool:
    """Replace ``path`` with ``data`` atomically; return False when nothing changed.

    A symlink or other non-regular file at ``path`` is replaced, never written through.
    """
    try:
        if read_regular(path, str(path), len(data))[1] == data:
            return False
    except (FileNotFoundError, UnsafeFile, FileTooLarge):
        pass
    tmp = path.parent / f".{path.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if _fsync_enabled():
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StorageError(
            f"cannot write {path}: {exc.strerror or exc}.",
            hint="Check free space and permissions; the old file is unchanged.",
        ) from exc
    return True


def append_line(path: Path, line: str) -> None:
    """Append one line with a single ``write`` on an ``O_APPEND`` descriptor."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StorageError(f"cannot append to {path}: {exc.strerror}.", hint="Check permissions.") from exc


def remove(path: Path) -> bool:
    """Delete a file; return False when it was already gone."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StorageError(f"cannot delete {path}: {exc.strerror}.", hint="Check permissions.") from exc
    return True


def prune_empty_dirs(path: Path, stop: Path) -> None:
    """Remove ``path`` and its parents while they are empty, stopping at ``stop``."""
    current = path
    while current != stop and stop in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent


class VaultLock:
    """An inter-process, re-entrant exclusive lock on one file."""

    def __init__(self, path: Path, timeout: float = 30.0, prepare: Callable[[], None] | None = None) -> None:
        """``prepare`` runs once, before the first acquisition and outside the lock: what
        a writer loads on first use (imports, compiled patterns, a model) is then not
        loaded while every other writer waits."""
        self.path = path
        self.timeout = timeout
        self._prepare = prepare
        self._fd: int | None = None
        self._entry: lockqueue.Entry | None = None
        self._depth = 0
        self._thread_lock = threading.RLock()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._thread_lock:
            if self._depth == 0:
                if self._prepare is not None:
                    prepare, self._prepare = self._prepare, None
                    prepare()
                self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()

    def _acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(
                f"cannot open the lock file {self.path}: {exc.strerror}.",
                hint="Writes need a writable vault folder (reads work without one).",
            ) from exc
        deadline = time.monotonic() + self.timeout
        queue = self.path.with_name(self.path.name + ".queue")
        if lockqueue is not None and not lockqueue.waiting(queue) and _try_lock(fd):
            self._fd = fd
            return
        # Taken, or others wait: first come, first served (engram.store.lockqueue), so
        # the writer that just let go cannot take it again ahead of those waiting.
        try:
            entry = lockqueue.Entry(queue) if lockqueue is not None else None
        except OSError as exc:
            os.close(fd)
            raise StorageError(
                f"cannot queue for the lock in {queue}: {exc.strerror}.",
                hint="Writes need a writable vault folder (reads work without one).",
            ) from exc
        delay = 0.0005
        while True:
            ahead = entry.ahead() if entry is not None else 0
            if not ahead and _try_lock(fd):
                break
            if time.monotonic() >= deadline:
                if entry is not None:
                    entry.leave()
                os.close(fd)
                queued = f" ({ahead} more writer(s) queued ahead)" if ahead else ""
                raise Busy(
                    f"waited {self.timeout:.0f}s for the vault lock: another process holds it{queued}.",
                    hint=f"Wait and retry; `fuser {self.path}` names the process. The lock "
                    "is released when that process exits: do not delete the file.",
                )
            time.sleep(delay)
            # The first in line looks every millisecond (the lock idles while it sleeps);
            # the rest a millisecond more for each writer ahead of them, so each is
            # looking often by the time it reaches the head. (At 4 ms a place, the
            # second in line slept through most of the head's write and took the lock
            # ~4-9 ms late: 8 writers made 68-78 items/s in all; now 132-157.)
            delay = min(delay * 2, 0.001 * (1 + min(ahead, 10)))
        self._fd, self._entry = fd, entry

    def _release(self) -> None:
        if self._fd is not None:
            try:
                _unlock(self._fd)
            finally:
                os.close(self._fd)
                self._fd = None
                if self._entry is not None:  # after the lock: the next in line finds it free
                    self._entry.leave()
                    self._entry = None


def ensure_ignored(folder: Path) -> None:
    """Make git ignore ``folder`` from inside it (a ``.gitignore`` of ``*``), whatever the
    vault's own ``.gitignore`` says: local state and private items must never be
    committed, and a person's ``.gitignore`` is theirs to keep byte for byte."""
    marker = folder / ".gitignore"
    if marker.is_file():
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {folder}: {exc.strerror}.", hint="Check permissions.") from exc
    atomic_write(marker, b"# engram: never committed (see docs/format.md)\n*\n")
