"""The derived SQLite index: a disposable catalog of the vault's files.

``.engram/index.sqlite`` is rebuilt from the files alone and never committed; deleting it
loses nothing but time. A schema-version mismatch drops and rebuilds it instead of
migrating.

Freshness. :meth:`Index.refresh` walks the vault and compares each file's
``(mtime_ns, size, inode)`` with what it recorded, re-parsing only what differs and
dropping rows for files that are gone. A file modified within the last two seconds is
recorded as "racy" and re-read on the next refresh, so an edit that lands within the file
system's timestamp granularity is never missed. Writes made through the vault update the
index in the same process immediately (:meth:`Index.put_item`), and every engram process
shares the one database, so one process sees another's writes without a walk.

Contents. ``files`` records every file seen (item, synapse, plain note, or a file that
failed to parse, with the error). ``items`` holds each item's searchable text, filter
columns and full frontmatter as JSON, so listings and search never touch Markdown.
``items_fts`` (Porter-stemmed words) and ``items_tri`` (trigrams, for substrings,
identifiers and CJK) are external-content FTS5 tables kept in step by triggers.
``synapses`` holds the edges.

Errors from ``sqlite3`` are translated into :class:`~engram.errors.StorageError` here and
nowhere else.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.dedup import fingerprint
from engram.errors import FormatError, StorageError
from engram.format import parse_engram, parse_synapse
from engram.model import Engram, Synapse

SCHEMA_VERSION = 1
RACY_NS = 2_000_000_000
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})

_SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)
    """,
    """
    CREATE TABLE files(
        path TEXT PRIMARY KEY,
        kind TEXT NOT NULL,            -- item | synapse | other | bad
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        error TEXT
    )
    """,
    """
    CREATE TABLE items(
        rowid INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        id TEXT NOT NULL,
        title TEXT NOT NULL,
        title_key TEXT NOT NULL,
        summary TEXT NOT NULL,
        tags_text TEXT NOT NULL,
        body TEXT NOT NULL,
        domain TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        visibility TEXT NOT NULL,
        importance REAL NOT NULL,
        confidence REAL NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        activated_at TEXT,
        deactivated_at TEXT,
        superseded_by TEXT,
        version INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        derived TEXT NOT NULL,
        meta TEXT NOT NULL
    )
    """,
    """
    CREATE INDEX items_id ON items(id)
    """,
    """
    CREATE INDEX items_title_key ON items(title_key)
    """,
    """
    CREATE INDEX items_fingerprint ON items(fingerprint)
    """,
    """
    CREATE INDEX items_domain ON items(domain)
    """,
    """
    CREATE TABLE synapses(
        path TEXT PRIMARY KEY,
        id TEXT NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        kind TEXT NOT NULL,
        weight REAL NOT NULL,
        data TEXT NOT NULL
    )
    """,
    """
    CREATE INDEX synapses_id ON synapses(id)
    """,
    """
    CREATE INDEX synapses_source ON synapses(source)
    """,
    """
    CREATE INDEX synapses_target ON synapses(target)
    """,
    """
    CREATE VIRTUAL TABLE items_fts USING fts5(
        title, summary, tags_text, body,
        content='items', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE VIRTUAL TABLE items_tri USING fts5(
        title, summary, tags_text, body,
        content='items', content_rowid='rowid',
        tokenize='trigram'
    )
    """,
    """
    CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
        INSERT INTO items_fts(rowid, title, summary, tags_text, body)
            VALUES (new.rowid, new.title, new.summary, new.tags_text, new.body);
        INSERT INTO items_tri(rowid, title, summary, tags_text, body)
            VALUES (new.rowid, new.title, new.summary, new.tags_text, new.body);
    END
    """,
    """
    CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
        INSERT INTO items_fts(items_fts, rowid, title, summary, tags_text, body)
            VALUES ('delete', old.rowid, old.title, old.summary, old.tags_text, old.body);
        INSERT INTO items_tri(items_tri, rowid, title, summary, tags_text, body)
            VALUES ('delete', old.rowid, old.title, old.summary, old.tags_text, old.body);
    END
    """,
)


@dataclass(frozen=True, slots=True)
class FileStamp:
    mtime_ns: int
    size: int
    ino: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        mtime = st.st_mtime_ns
        if time.time_ns() - mtime < RACY_NS:
            mtime = -1  # racily clean: re-read on the next refresh
        return cls(mtime, st.st_size, st.st_ino)


@dataclass(frozen=True, slots=True)
class RefreshStats:
    scanned: int = 0
    changed: int = 0
    removed: int = 0
    errors: int = 0


@dataclass(frozen=True, slots=True)
class BadFile:
    path: str
    error: str


@dataclass(frozen=True, slots=True)
class ItemRow:
    """What the index knows about one item file, without parsing it."""

    path: str
    id: str
    title: str
    derived: str
    fingerprint: str


def classify(relpath: str) -> str | None:
    """``item``, ``synapse`` or None for a vault-relative path (no I/O)."""
    parts = relpath.split("/")
    if any(p.startswith(".") for p in parts):
        return None
    top = parts[1] if parts[0] == "private" and len(parts) > 1 else parts[0]
    if top == "synapses":
        return "synapse" if relpath.endswith(".yaml") else None
    if relpath.endswith(".md"):
        return "item"
    return None


def is_plain_note(data: bytes) -> bool:
    """A Markdown file that is not an engram: no frontmatter, or frontmatter without id."""
    head = data.lstrip(b"\xef\xbb\xbf")
    if not head.startswith(b"---"):
        return True
    end = head.find(b"\n---", 3)
    front = head[: end if end > 0 else len(head)]
    return b"\nid:" not in front and not front.startswith(b"---\r\nid:")


class Index:
    def __init__(self, root: Path, db_path: Path) -> None:
        self.root = root
        self.db_path = db_path
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ connection

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.db_path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            row = None
            with contextlib.suppress(sqlite3.OperationalError):
                row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or row[0] != str(SCHEMA_VERSION):
                self._rebuild_schema(conn)
            return conn
        except sqlite3.DatabaseError as exc:
            # A corrupt or foreign file: it is derived, so start over.
            with contextlib.suppress(OSError):
                for suffix in ("", "-wal", "-shm"):
                    Path(str(self.db_path) + suffix).unlink(missing_ok=True)
            try:
                conn = sqlite3.connect(
                    self.db_path, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                self._rebuild_schema(conn)
                return conn
            except sqlite3.Error as again:
                raise StorageError(
                    f"cannot open the index {self.db_path}: {again}.",
                    hint="Delete the .engram/ folder and run `engram reindex`.",
                ) from exc
        except OSError as exc:
            raise StorageError(
                f"cannot create {self.db_path.parent}: {exc.strerror}.",
                hint="The vault folder must be writable.",
            ) from exc

    def _rebuild_schema(self, conn: sqlite3.Connection, force: bool = False) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not force:  # another process may have built it while we waited
                with contextlib.suppress(sqlite3.OperationalError):
                    row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                    if row is not None and row[0] == str(SCHEMA_VERSION):
                        conn.execute("COMMIT")
                        return
            tables = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'items_fts_%'"
                " AND name NOT LIKE 'items_tri_%'"
            ).fetchall()
            for (name,) in tables:
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self.conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageError(f"index is busy: {exc}.", hint="Retry in a moment.") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    raise StorageError(f"index write failed: {exc}.", hint="Retry.") from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read query (for other core modules); sqlite errors become StorageError."""
        with self._lock:
            try:
                cur = self.conn.execute(sql, params)
                cur.row_factory = sqlite3.Row
                return list(cur.fetchall())
            except sqlite3.Error as exc:
                raise StorageError(f"index query failed: {exc}.", hint="Run `engram reindex`.") from exc

    # ------------------------------------------------------------------ refresh

    def walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every item and synapse file under the root, as (relpath, stat)."""
        stack = [("", self.root)]
        while stack:
            prefix, folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name in SKIP_DIRS:
                    continue
                rel = prefix + name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((rel + "/", Path(entry.path)))
                    elif entry.is_file(follow_symlinks=False) and classify(rel):
                        yield rel, entry.stat(follow_symlinks=False)
                except OSError:
                    continue

    def refresh(self) -> RefreshStats:
        """Bring the index in line with the files on disk (see module docstring)."""
        with self._lock:
            known = {
                row[0]: FileStamp(row[1], row[2], row[3])
                for row in self.conn.execute("SELECT path, mtime_ns, size, ino FROM files")
            }
            seen: set[str] = set()
            changed: list[tuple[str, os.stat_result]] = []
            for rel, st in self.walk():
                seen.add(rel)
                stamp = known.get(rel)
                if stamp is None or stamp.mtime_ns < 0 or stamp != FileStamp(
                    st.st_mtime_ns, st.st_size, st.st_ino
                ):
                    changed.append((rel, st))
            gone = [path for path in known if path not in seen]
            errors = 0
            if changed or gone:
                with self.transaction() as conn:
                    for path in gone:
                        self._forget(conn, path)
                    for rel, st in changed:
                        errors += not self._load_file(conn, rel, st)
            return RefreshStats(len(seen), len(changed), len(gone), errors)

    def rebuild(self) -> RefreshStats:
        """Drop everything and index from scratch."""
        with self._lock:
            self._rebuild_schema(self.conn, force=True)
            return self.refresh()

    def _load_file(self, conn: sqlite3.Connection, rel: str, st: os.stat_result) -> bool:
        stamp = FileStamp.of(st)
        try:
            data = (self.root / rel).read_bytes()
        except OSError:
            self._forget(conn, rel)
            return True
        try:
            if classify(rel) == "synapse":
                self._put_synapse(conn, rel, parse_synapse(data, rel), stamp)
            elif is_plain_note(data):
                self._forget(conn, rel)
                self._put_file(conn, rel, "other", stamp, None)
            else:
                item, derived = parse_engram(data, rel)
                self._put_item(conn, rel, item, derived, stamp)
        except FormatError as exc:
            self._forget(conn, rel)
            self._put_file(conn, rel, "bad", stamp, exc.problem)
            return False
        return True

    # ------------------------------------------------------------------ writes

    def put_item(self, rel: str, item: Engram, derived: str) -> None:
        """Record an item the vault just wrote at ``rel``."""
        st = (self.root / rel).stat()
        with self.transaction() as conn:
            self._forget(conn, rel)
            self._put_item(conn, rel, item, derived, FileStamp.of(st))

    def put_synapse(self, rel: str, synapse: Synapse) -> None:
        st = (self.root / rel).stat()
        with self.transaction() as conn:
            self._forget(conn, rel)
            self._put_synapse(conn, rel, synapse, FileStamp.of(st))

    def drop(self, rel: str) -> None:
        """Forget a file the vault just removed."""
        with self.transaction() as conn:
            self._forget(conn, rel)

    def _put_file(
        self, conn: sqlite3.Connection, rel: str, kind: str, stamp: FileStamp, error: str | None
    ) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO files(path, kind, mtime_ns, size, ino, error)"
            " VALUES (?,?,?,?,?,?)",
            (rel, kind, stamp.mtime_ns, stamp.size, stamp.ino, error),
        )

    def _forget(self, conn: sqlite3.Connection, rel: str) -> None:
        conn.execute("DELETE FROM items WHERE path = ?", (rel,))
        conn.execute("DELETE FROM synapses WHERE path = ?", (rel,))
        conn.execute("DELETE FROM files WHERE path = ?", (rel,))

    def _put_item(
        self, conn: sqlite3.Connection, rel: str, item: Engram, derived: str, stamp: FileStamp
    ) -> None:
        conn.execute("DELETE FROM items WHERE path = ?", (rel,))
        conn.execute(
            "INSERT INTO items(path, id, title, title_key, summary, tags_text, body, domain,"
            " kind, status, visibility, importance, confidence, created_at, updated_at,"
            " activated_at, deactivated_at, superseded_by, version, content_hash,"
            " fingerprint, derived, meta)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                rel,
                item.id,
                item.title,
                item.title.casefold(),
                item.summary,
                " ".join(item.tags + item.domain_tags),
                item.content,
                item.domain,
                item.kind,
                item.status,
                item.visibility,
                item.importance,
                item.confidence,
                item.created_at,
                item.updated_at,
                item.activated_at,
                item.deactivated_at,
                item.superseded_by,
                item.version,
                item.content_hash,
                fingerprint(item.title, item.content),
                derived,
                json.dumps(item.to_meta(), ensure_ascii=False),
            ),
        )
        self._put_file(conn, rel, "item", stamp, None)

    def _put_synapse(
        self, conn: sqlite3.Connection, rel: str, synapse: Synapse, stamp: FileStamp
    ) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO synapses(path, id, source, target, kind, weight, data)"
            " VALUES (?,?,?,?,?,?,?)",
            (
                rel,
                synapse.id,
                synapse.source,
                synapse.target,
                synapse.kind,
                synapse.weight,
                json.dumps(synapse.to_meta(), ensure_ascii=False),
            ),
        )
        self._put_file(conn, rel, "synapse", stamp, None)

    # ------------------------------------------------------------------ reads

    def item_rows(self, where: str, params: Sequence[Any] = ()) -> list[ItemRow]:
        rows = self.query(
            f"SELECT path, id, title, derived, fingerprint FROM items WHERE {where}", params
        )
        return [ItemRow(r["path"], r["id"], r["title"], r["derived"], r["fingerprint"]) for r in rows]

    def items(self, where: str = "1", params: Sequence[Any] = (), tail: str = "") -> list[Engram]:
        """Items from the index (no file reads), filtered by a SQL condition."""
        rows = self.query(f"SELECT path, body, meta FROM items WHERE {where} {tail}", params)
        return [Engram.from_meta(json.loads(r["meta"]), r["body"], path=r["path"]) for r in rows]

    def synapses(self, where: str = "1", params: Sequence[Any] = ()) -> list[Synapse]:
        rows = self.query(f"SELECT data FROM synapses WHERE {where} ORDER BY id", params)
        return [Synapse.from_meta(json.loads(r["data"])) for r in rows]

    def synapse_paths(self, synapse_id: str) -> list[str]:
        return [r["path"] for r in self.query("SELECT path FROM synapses WHERE id = ?", (synapse_id,))]

    def bad_files(self) -> list[BadFile]:
        rows = self.query("SELECT path, error FROM files WHERE kind = 'bad' ORDER BY path")
        return [BadFile(r["path"], r["error"] or "") for r in rows]

    def counts(self) -> dict[str, int]:
        rows = self.query("SELECT kind, count(*) AS n FROM files GROUP BY kind")
        return {r["kind"]: r["n"] for r in rows}
