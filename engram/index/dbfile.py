"""The index database file: where it lives, opening it, and what happens when it is broken.

- Location. ``.engram/index.sqlite`` in the vault. When that folder cannot be written (a
  read-only mount, a checkout another user owns), :func:`fallback_location` puts the
  index in a per-user cache folder named by the vault's path
  (``$XDG_CACHE_HOME/engram/indexes/<hash>/``), else in memory: reads still work and
  nothing is written into the vault.
- Damage. A file SQLite calls corrupt or not a database is moved aside to
  ``index.sqlite.broken`` (replacing an older copy) and a new index is built: only the
  index files move, never the trash, the audit log or the journals beside them. Any
  other failure (busy, disk full, unreadable) is a StorageError that says so — the file
  is not touched, since another process may be using it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from engram.errors import StorageError

REBUILD_HINT = (
    "Check free disk space and that the folder is writable, then run `engram reindex`: it "
    "rebuilds only the index (the trash, the audit log and the usage journal are kept)."
)
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_SUFFIXES = ("", "-wal", "-shm")


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA cache_size=-32000")  # 32 MB: the hot part of a 100k index
    conn.execute("PRAGMA temp_store=MEMORY")
    # Reads through a memory map skip a copy per page: ~0.4 ms of a 100k-item recall.
    conn.execute("PRAGMA mmap_size=1073741824")
    return conn


def open_db(
    db_path: Path, root: Path, prepare: Callable[[sqlite3.Connection], None]
) -> tuple[sqlite3.Connection, Path]:
    """(connection, actual path) of the index meant for ``db_path``, ``prepare``\\ d (the
    schema checked or built). Raises StorageError."""
    if not in_memory(db_path) and not writable(db_path):
        db_path = fallback_location(root)
    try:
        conn = connect(db_path)
        prepare(conn)
        return conn, db_path
    except sqlite3.DatabaseError as exc:
        if not corrupt(exc):
            raise StorageError(f"cannot open the index {db_path}: {exc}.", hint=REBUILD_HINT) from exc
        set_aside(db_path)  # derived: start over, keeping the broken file for a look
        try:
            conn = connect(db_path)
            prepare(conn)
            return conn, db_path
        except sqlite3.Error as again:
            raise StorageError(f"cannot create a new index at {db_path}: {again}.", hint=REBUILD_HINT) from exc


def in_memory(db_path: Path) -> bool:
    return db_path.name.startswith(":")


def corrupt(exc: sqlite3.Error) -> bool:
    """A damaged or foreign database file (not a busy, full or unreadable one)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return not isinstance(exc, sqlite3.OperationalError)
    return (code & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def rollback(conn: sqlite3.Connection) -> None:
    # A failed statement may already have ended the transaction; that must not mask the
    # error that caused the rollback ("cannot rollback - no transaction is active").
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def set_aside(db_path: Path) -> None:
    """Move the index files (closed by the caller) to ``<name>.broken*``."""
    if in_memory(db_path):
        return
    for suffix in _SUFFIXES:
        source = Path(f"{db_path}{suffix}")
        try:
            os.replace(source, Path(f"{db_path}.broken{suffix}"))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StorageError(
                f"cannot move the broken index {source} aside: {exc.strerror}.", hint=REBUILD_HINT
            ) from exc


def writable(db_path: Path) -> bool:
    """Whether the index can live at ``db_path`` (creating its folder if need be)."""
    folder = db_path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):  # also False on a read-only file system, for root
        return False
    return all(os.access(f, os.W_OK) for f in (Path(f"{db_path}{s}") for s in _SUFFIXES) if f.exists())


def fallback_location(root: Path) -> Path:
    """Where the index of a read-only vault lives (see the module docstring)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "engram" / "indexes" / hashlib.sha256(str(root).encode()).hexdigest()[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return Path(":memory:")
    db_path = folder / "index.sqlite"
    return db_path if writable(db_path) else Path(":memory:")
