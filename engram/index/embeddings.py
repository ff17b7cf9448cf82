"""The vector cache: item vectors by the content they were computed from.

``.engram/vectors.sqlite`` (beside the derived index, wherever that lives) maps a cache
key — the model and the text an item's vectors were computed from, hashed
(:func:`engram.recall.encoder.cache_key`) — to the item's vectors: one or more rows of
float16, one per passage, as opaque bytes (this layer never imports numpy or the model).

Why a file of its own, keyed by content and not by the index's rows: the index is
disposable (a schema change, ``engram reindex`` or a corrupt file drops it), and
embedding costs a thousand times what indexing does. Keyed by content, a rebuild, a
renamed file, a counter bumped by recall or a clone that already holds the same item
never embeds the same text twice.

Invariants: an entry is never wrong (its key names the model and the text; a changed
text has another key); writing is best effort (a busy or read-only cache costs the
embedding again next time, never an answer); a corrupt file is set aside and started
afresh like the index. Entries are never deleted: a vector no item uses any more costs
1.5 KB per passage on disk until the file is removed (it is derived, like the index).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from engram.errors import StorageError
from engram.index import dbfile

SCHEMA = "CREATE TABLE IF NOT EXISTS vectors(key TEXT PRIMARY KEY, n INTEGER NOT NULL, vec BLOB NOT NULL) WITHOUT ROWID"
NAME = "vectors.sqlite"


class VectorCache:
    """One vault's vector cache (see the module docstring); thread-safe."""

    def __init__(self, index_path: Path) -> None:
        self.path = index_path if dbfile.in_memory(index_path) else index_path.parent / NAME
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        with self._lock:
            if self._conn is None:
                self._conn = self._open()
            return self._conn

    def _open(self) -> sqlite3.Connection:
        if not dbfile.in_memory(self.path) and dbfile.writable(self.path):
            for attempt in range(2):
                try:
                    conn = dbfile.connect(self.path)
                    conn.execute(SCHEMA)
                    return conn
                except sqlite3.DatabaseError as exc:
                    if attempt or not dbfile.corrupt(exc):
                        break
                    with contextlib.suppress(StorageError):
                        dbfile.set_aside(self.path)  # derived: start afresh, keep the broken file
        # A read-only or broken place: vectors last as long as this process.
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.execute(SCHEMA)
        return conn

    def get(self, keys: Sequence[str]) -> dict[str, tuple[int, bytes]]:
        """``{key: (passages, bytes)}`` for each of ``keys`` the cache holds."""
        out: dict[str, tuple[int, bytes]] = {}
        wanted = list(dict.fromkeys(keys))
        with self._lock:
            if self._conn is None and not dbfile.in_memory(self.path) and not self.path.exists():
                return out  # nothing cached yet: the file is made by the first vector stored
            try:
                for i in range(0, len(wanted), 500):
                    chunk = wanted[i : i + 500]
                    marks = ",".join("?" * len(chunk))
                    for key, n, vec in self.conn.execute(f"SELECT key, n, vec FROM vectors WHERE key IN ({marks})", chunk):
                        out[key] = (int(n), bytes(vec))
            except sqlite3.Error as exc:
                raise StorageError(f"cannot read the vector cache {self.path}: {exc}.", hint=dbfile.REBUILD_HINT) from exc
        return out

    def put(self, entries: Iterable[tuple[str, int, bytes]]) -> bool:
        """Store ``(key, passages, bytes)`` entries; False when the cache could not take
        them now (busy, read-only): best effort, see the module docstring."""
        rows = list(entries)
        if not rows:
            return True
        with self._lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                self.conn.executemany("INSERT OR REPLACE INTO vectors(key, n, vec) VALUES (?, ?, ?)", rows)
                self.conn.execute("COMMIT")
            except sqlite3.Error:
                dbfile.rollback(self.conn)
                return False
        return True

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            if self._conn is not None:
                self._conn.close()
            self._conn = None
