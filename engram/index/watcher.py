"""Knowing which vault files changed, without walking the vault: an inotify watcher.

A long-lived process (an MCP server, the viewer) reads the index thousands of times; a
full stat walk before each read costs O(files) — hundreds of milliseconds at 100k items.
On Linux, :class:`InotifyWatcher` (inotify through ``ctypes``, no dependency) watches
every visible folder of the vault and reports the paths that changed since the last
:meth:`~InotifyWatcher.poll`; the index re-checks exactly those.

Why this is exact: the kernel queues an inotify event before the system call that caused
it (write, rename, unlink, mkdir) returns. So any change that completed before a read
began is in the queue when the read polls it — edits by other processes, editors that
save by writing a temp file and renaming it, Obsidian, ``git checkout`` and ``git pull``
alike. New folders are watched as they appear and scanned in full (files may land in them
before the watch exists). When the queue overflows (``IN_Q_OVERFLOW``), the caller falls
back to one full walk; if the vault folder itself is moved or deleted, the watcher is
dropped and every later read walks.

Limits, stated honestly: inotify does not see changes made on another machine to a
network file system (NFS, SMB, some FUSE mounts) — use ``freshness: walk`` there; a
process that exceeds ``fs.inotify.max_user_watches`` falls back to walking; on other
platforms :func:`start_watcher` returns None and readers walk.

Hidden folders (``.git``, ``.engram``, ``.obsidian``) and names starting with a dot (the
vault's own temp files) are ignored: they hold nothing the index reads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000

_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
    | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")


@dataclass(slots=True)
class Changes:
    """Vault-relative paths to re-check: files, and folders to re-scan recursively."""

    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)


class Watcher(Protocol):
    def poll(self) -> Changes | None:
        """What changed since the last poll; None when the caller must walk everything."""

    def resync(self) -> bool:
        """Re-watch every folder after an overflow; False if the watcher is unusable."""

    def close(self) -> None: ...


class _Libc:
    """The three inotify calls, loaded once (ctypes is imported then: a one-shot command
    never watches, so it never pays for it)."""

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        self.get_errno = ctypes.get_errno
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.init1 = lib.inotify_init1
        self.init1.argtypes = [ctypes.c_int]
        self.init1.restype = ctypes.c_int
        self.add_watch = lib.inotify_add_watch
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.add_watch.restype = ctypes.c_int


_libc: _Libc | None = None


def _load() -> _Libc | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            _libc = _Libc()
    return _libc


class InotifyWatcher:
    """Watches every visible folder under ``root``; see the module docstring."""

    def __init__(self, root: Path, skip: Iterable[str], libc: _Libc) -> None:
        self.root = root
        self.skip = frozenset(skip)
        self._libc = libc
        fd = libc.init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(libc.get_errno(), "inotify_init1 failed")
        self.fd: int | None = fd
        self._dirs: dict[int, str] = {}  # watch descriptor -> folder ("" is the root)
        self._root_lost = False
        self._pending = Changes()

    def watch_tree(self, top: str) -> None:
        """Watch ``top`` and every visible folder below it. Raises OSError (e.g. ENOSPC
        when the per-user watch limit is reached)."""
        stack = [top]
        while stack:
            rel = stack.pop()
            self._add(rel)
            try:
                entries = list(os.scandir(self.root / rel if rel else self.root))
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in self.skip:
                    continue
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(f"{rel}/{entry.name}" if rel else entry.name)

    def _add(self, rel: str) -> None:
        assert self.fd is not None
        path = os.fsencode(self.root / rel if rel else self.root)
        wd = self._libc.add_watch(self.fd, path, _MASK)
        if wd < 0:
            err = self._libc.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                return  # gone or unreadable already; its parent's event covers it
            raise OSError(err, os.strerror(err))
        self._dirs[wd] = rel

    def poll(self) -> Changes | None:
        if self.fd is None:
            return None
        overflow = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                return None
            if not data:
                break
            overflow |= self._parse(data)
        if overflow or self._root_lost:
            self._pending = Changes()
            return None
        out, self._pending = self._pending, Changes()
        return out

    def _parse(self, data: bytes) -> bool:
        overflow = False
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
            offset += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                overflow = True
                continue
            folder = self._dirs.get(wd)
            if folder is None:
                continue
            if mask & IN_IGNORED:  # the folder was removed or unmounted
                del self._dirs[wd]
                if folder:
                    self._pending.dirs.add(folder)
                else:
                    self._root_lost = True
                continue
            name = os.fsdecode(raw.rstrip(b"\0"))
            if not name:  # an event on the watched folder itself
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                    if folder:
                        self._pending.dirs.add(folder)
                    else:
                        self._root_lost = True  # the vault moved: paths no longer match
                continue
            if name.startswith(".") or name in self.skip:
                continue
            rel = f"{folder}/{name}" if folder else name
            if mask & IN_ISDIR:
                if mask & (IN_CREATE | IN_MOVED_TO):
                    try:
                        self.watch_tree(rel)
                    except OSError:
                        overflow = True  # cannot watch it: make the caller walk
                self._pending.dirs.add(rel)
            else:
                self._pending.files.add(rel)
        return overflow

    def resync(self) -> bool:
        if self.fd is None or self._root_lost or not self.root.is_dir():
            return False
        try:
            self.watch_tree("")
        except OSError:
            return False
        return True

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
            self._dirs.clear()

    def __del__(self) -> None:
        self.close()


def start_watcher(root: Path, skip: Iterable[str] = ()) -> Watcher | None:
    """A watcher over ``root``, or None where none can run (not Linux, no inotify, too
    many watches); the caller then walks before every read."""
    libc = _load()
    if libc is None:
        return None
    try:
        watcher = InotifyWatcher(root, skip, libc)
    except OSError:
        return None
    try:
        watcher.watch_tree("")
    except OSError:
        watcher.close()
        return None
    return watcher


# --------------------------------------------------------------------------- one-shot processes

#: Subtracted from a scan's start when it is recorded: file systems with coarse timestamps
#: and a little clock jitter must not let a change slip between two scans.
SCAN_MARGIN_NS = 2_000_000_000


def relist(root: Path, folder: str, known: Iterable[tuple[str, int]], skip: Collection[str]) -> Changes | None:
    """What to re-check in a folder :func:`changed_since` or the watcher reported: an
    entry was added, removed or renamed in it (vault-relative; "" is the root). ``known``
    is every indexed ``(path, inode)`` below it. None when the root cannot be listed.

    An atomic save renames, so a folder is reported for every note saved in it. Of its
    entries only those the index does not hold, or holds with another inode (a file
    renamed over a note), are re-checked, with the names that vanished: a note written in
    place has a new ctime and is reported itself. The inodes come with ``scandir``, so
    re-listing a folder of thousands of notes costs its listing, not a ``stat`` of each.
    """
    prefix = folder + "/" if folder else ""
    known_children: dict[str, int] = {}
    known_subdirs: set[str] = set()
    for path, ino in known:
        head, sep, _ = path[len(prefix):].partition("/")
        if sep:
            known_subdirs.add(head)
        else:
            known_children[head] = ino
    out = Changes()
    try:
        entries = list(os.scandir(root / folder if folder else root))
    except OSError:
        if not folder:
            return None
        out.dirs.add(folder)  # the folder itself went away: drop what it held
        return out
    present: set[str] = set()
    for entry in entries:
        if entry.name.startswith(".") or entry.name in skip:
            continue
        present.add(entry.name)
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in known_subdirs:
                out.dirs.add(prefix + entry.name)  # new or moved in: its files are unknown
            if entry.name in known_children:
                out.files.add(prefix + entry.name)  # a note that became a folder: drop it
        else:
            if known_children.get(entry.name) != entry.inode():
                out.files.add(prefix + entry.name)  # new here, or another file under its name
            if entry.name in known_subdirs:
                out.dirs.add(prefix + entry.name)  # a folder that became a file: drop its notes
    out.files.update(prefix + name for name in known_children.keys() - present)
    out.dirs.update(prefix + name for name in known_subdirs - present)
    return out


def changed_since(root: Path, since_ns: int, skip: Iterable[str] = ()) -> Changes | None:
    """Files and folders whose inode changed after ``since_ns``, found by ``find -cnewer``.

    A one-shot process has no watcher; a stat walk in Python costs ~10 µs a file (1.5 s
    at 100k items). ``find`` does the same stats in C. It compares *ctime*, which the
    kernel sets on every write, rename, link or permission change and which no tool can
    set back — so copies that preserve mtime (``cp -p``, ``rsync -t``, ``tar x``) are
    still seen. A folder is reported when entries were added, removed or renamed in it;
    the caller re-lists it. Returns None when ``find`` is not available or fails: the
    caller walks.
    """
    import shutil
    import subprocess
    import tempfile

    finder = shutil.which("find")
    if finder is None or os.name != "posix":
        return None
    fd, reference = tempfile.mkstemp(prefix=".engram-scan-")
    os.close(fd)
    try:
        os.utime(reference, ns=(since_ns, since_ns))
        prune: list[str] = ["-name", ".*"]
        for name in skip:
            prune += ["-o", "-name", name]
        # -H: a root given as a symlink is entered (links below it are still not followed).
        proc = subprocess.run(
            [finder, "-H", str(root), "-mindepth", "1", "(", *prune, ")", "-prune",
             "-o", "-cnewer", reference, "-print0"],
            capture_output=True, check=False,
        )
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(reference)
    if proc.returncode != 0:
        return None
    changes = Changes()
    prefix = len(str(root)) + 1
    for raw in proc.stdout.split(b"\0"):
        if not raw:
            continue
        path = os.fsdecode(raw)
        rel = path[prefix:].replace(os.sep, "/")
        if os.path.isdir(path) and not os.path.islink(path):
            changes.dirs.add(rel)
        else:
            changes.files.add(rel)
    try:
        if os.stat(root).st_ctime_ns > since_ns:
            changes.dirs.add("")
    except OSError:
        return None
    return changes
