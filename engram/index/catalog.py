"""The derived SQLite index: a disposable catalog of the vault's files.

``.engram/index.sqlite`` is rebuilt from the files alone and never committed; deleting it
loses nothing but time. A schema-version mismatch drops and rebuilds it instead of
migrating. A corrupt index file is moved aside (``index.sqlite.broken``) and rebuilt; the
other files under ``.engram/`` (trash, audit log, journals) are never touched by it. On a
read-only vault the index lives in a per-user cache folder (:mod:`engram.index.dbfile`),
or in memory, so reads still work.

Hostile files. Only regular files are read, never through a symlink, up to the codec's
size limits (:mod:`engram.index.rows`); a symlink, device, FIFO, oversize or binary file
with an item or synapse name is recorded with its problem (:meth:`Index.bad_files`, which
``engram doctor`` reports) and left out of every listing and search.

Freshness. :meth:`Index.refresh` walks the vault and compares each file's
``(ctime_ns, size, inode)`` with what it recorded, re-parsing only what differs and
dropping rows for files that are gone. A file modified within the last two seconds is
recorded as "racy" and re-read on the next refresh, so an edit that lands within the file
system's timestamp granularity is never missed. Writes made through the vault update the
index in the same process immediately (:meth:`Index.put_item`), and every engram process
shares the one database, so one process sees another's writes without a walk.
:meth:`Index.ensure_fresh` is what readers call: a full walk in a one-shot process, and
in a long-lived one an inotify watcher (:mod:`engram.index.watcher`) that names exactly the
paths to re-check, so a read costs a few microseconds when nothing changed. The
guarantee is the same either way: a read never sees a file whose change completed before
the read began but is missing from the index.

Contents. ``files`` records every file seen (item, synapse, or a file that failed to
parse, with the error). ``items`` holds each item — every Markdown note, engram's own and
a person's alike (:mod:`engram.store.notes`), with where its id comes from — its
searchable text, filter and ranking columns and full frontmatter as JSON, so listings and
search never touch Markdown. ``links`` holds the wikilinks typed in notes and what they
resolve to (:mod:`engram.index.linktable`), re-resolved in the same transaction as the
notes they name; ``moves`` the ids a refresh saw change path, for the next sync. ``items_fts`` (Porter-stemmed words over title, summary, tags, body) and
``items_tri`` (trigrams over title, tags and the identifier-like and non-Latin tokens of
summary and body, for substrings, ``db_url_v2`` and CJK) are external-content FTS5
tables kept in step by triggers. ``synapses`` holds the edges. The trigram table leaves
out ordinary prose on purpose: trigrams of every body would triple the index size and
halve the indexing rate, and words in prose are found by the word index.

The search primitives recall composes live in :mod:`engram.index.search`, as
``index.search``: BM25 on either FTS table, the short-fragment scan, term matching and
edge lookups. They run their SQL through :meth:`Index.fts_tuples` / :meth:`Index.fts_rows`, so
``sqlite3`` is still imported and its errors translated here only.
Errors from ``sqlite3`` are translated into :class:`~engram.errors.StorageError` (or
:class:`~engram.errors.InvalidInput` for a bad raw FTS5 query) here and nowhere else.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput, StorageError
from engram.index import dbfile
from engram.index.linktable import (
    INSERT_LINK,
    LINK_COLUMNS,
    LinkRow,
    link_rows,
    name_keys,
    resolve_links,
)
from engram.index.rows import (
    BAD_KINDS,
    SKIP_DIRS,
    FileStamp,
    Parsed,
    Wire,
    classify,
    item_values,
    parse_batches,
    parse_file,
    parse_written,
    settle_racy,
    synapse_values,
    vault_files,
)
from engram.index.schema import (
    FILL_FTS,
    FORGET_HASHSIZE,
    INSERT_FILE,
    INSERT_ITEM,
    INSERT_SYNAPSE,
    INSERT_TRIGGER,
    NAME_KEY,
    SCHEMA,
    SCHEMA_VERSION,
)
from engram.index.search import SearchPrimitives
from engram.index.settings import IndexSettings
from engram.index.watcher import (
    SCAN_MARGIN_NS,
    Changes,
    Watcher,
    changed_since,
    relist,
    start_watcher,
)
from engram.store.format import Written
from engram.store.model import Engram, Synapse
from engram.store.progress import Progress, bar

FRESHNESS_MODES = ("auto", "walk")

@dataclass(frozen=True, slots=True)
class FreshnessSettings:
    """How reads keep the index fresh: ``recall.freshness`` in ``engram.yaml`` (``auto``
    watches the files where the platform allows, ``walk`` stats every file per read)."""

    freshness: str = "auto"

    def validated(self) -> FreshnessSettings:
        if self.freshness not in FRESHNESS_MODES:
            raise InvalidInput(
                f"engram.yaml: recall.freshness is {self.freshness!r}.",
                field="recall.freshness", hint="Use auto or walk.",
            )
        return self


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
    kind: str = "bad"  # one of rows.BAD_KINDS


@dataclass(frozen=True, slots=True)
class ItemRow:
    """What the index knows about one item file, without parsing it."""

    path: str
    id: str
    title: str
    derived: str
    fingerprint: str
    by_person: bool  # a person's note, not engram's own item (engram.store.notes.persons_note)


class Index:
    """The index of one vault; see the module docstring."""

    def __init__(self, root: Path, db_path: Path, settings: IndexSettings | None = None) -> None:
        """``settings`` None means the vault's settings could not be read: the index then
        keeps the ignore list it was built with rather than re-deciding what is an item."""
        self.root = root
        self.db_path = db_path
        self._settings = settings
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._reads = 0
        self._stem_cache: dict[str, tuple[str, ...]] = {}
        self._df_cache: dict[str, int] = {}
        self._df_changes = -1  # the 'changes' tally the df cache was filled at
        self._df_items = 0  # and the 'items' tally
        #: Cached counts kept through writes that only added items: lower bounds (see term_stats).
        self._df_floors: set[str] = set()
        self._watcher: Watcher | None = None
        self._watch_failed = False
        self.search = SearchPrimitives(self)

    # ------------------------------------------------------------------ connection

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        conn, self.db_path = dbfile.open_db(self.db_path, self.root, self._prepare)
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        row = None
        with contextlib.suppress(sqlite3.OperationalError):
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != str(SCHEMA_VERSION):
            self._rebuild_schema(conn)
            return
        # The ignore list decides which files are items: when it changed, the index is
        # rebuilt rather than patched.
        row = conn.execute("SELECT value FROM meta WHERE key='ignore'").fetchone()
        stored = row[0] if row else "[]"
        if self._settings is None:
            self._settings = IndexSettings(tuple(json.loads(stored)))
        elif stored != self._ignore_marker():
            self._rebuild_schema(conn, force=True)

    @property
    def settings(self) -> IndexSettings:
        """The ``index`` settings in force (see :meth:`__init__`)."""
        if self._settings is None:
            _ = self.conn  # opening reads the ignore list the index was built with
        return self._settings or IndexSettings()

    def _rebuild_schema(self, conn: sqlite3.Connection, force: bool = False) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not force:  # another process may have built it while we waited
                with contextlib.suppress(sqlite3.OperationalError):
                    row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                    if row is not None and row[0] == str(SCHEMA_VERSION):
                        conn.execute("COMMIT")
                        return
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger'"
            ).fetchall():
                conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
            tables = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'items_fts_%'"
                " AND name NOT LIKE 'items_tri_%'"
            ).fetchall()
            for (name,) in tables:
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for statement in SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
            )
            conn.execute("INSERT INTO meta(key, value) VALUES ('ignore', ?)", (self._ignore_marker(),))
            # Caches in other processes key on this counter: a rebuilt index must never
            # repeat a value the old one had, so it starts from the clock.
            conn.execute("UPDATE tally SET n = ? WHERE key = 'changes'", (time.time_ns(),))
            conn.execute("COMMIT")
        except BaseException:
            dbfile.rollback(conn)
            raise

    def _ignore_marker(self) -> str:
        return json.dumps(list(self._settings.ignore if self._settings is not None else ()))

    def wanted(self, rel: str) -> str | None:
        """``item``/``synapse`` for a file the index reads, None for any other."""
        kind = classify(rel)
        if kind == "item" and self.settings.ignore and self.settings.ignores(rel):
            return None
        return kind

    def close(self) -> None:
        with self._lock:
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._stem_cache.clear()
                self._df_changes = -1

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
            except sqlite3.Error as exc:
                dbfile.rollback(conn)
                raise StorageError(
                    f"index write failed: {exc}.", hint="Check free disk space, then retry."
                ) from exc
            except BaseException:
                dbfile.rollback(conn)
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    dbfile.rollback(conn)
                    raise StorageError(
                        f"index write failed: {exc}.", hint="Check free disk space, then retry."
                    ) from exc

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read query (for other core modules); sqlite errors become StorageError."""
        with self._lock:
            try:
                cur = self.conn.execute(sql, params)
                cur.row_factory = sqlite3.Row
                return list(cur.fetchall())
            except sqlite3.Error as exc:
                raise StorageError(f"index query failed: {exc}.", hint="Run `engram reindex`.") from exc

    # ------------------------------------------------------------------ freshness

    def ensure_fresh(self, mode: str = "auto") -> None:
        """Make the index reflect every file change that completed before this call.

        ``mode`` is ``auto`` (watch when the platform allows, else walk) or ``walk`` (a
        full stat walk before every read). The first read of a process walks without a
        watcher, so one-shot commands pay nothing extra; the second starts the watcher
        and walks once more (closing the gap before the watch existed); later reads only
        re-check the paths the watcher reported.
        """
        with self._lock:
            self._reads += 1
            if mode == "walk" or self._watch_failed or self._reads == 1:
                self.refresh()
                return
            if self._watcher is None:
                self._watcher = start_watcher(self.root, SKIP_DIRS)
                if self._watcher is None:
                    self._watch_failed = True
                self.refresh()
                return
            changes = self._watcher.poll()
            if changes is None:  # overflow, or the root itself went away
                if not self._watcher.resync():
                    self._watcher.close()
                    self._watcher = None
                    self._watch_failed = True
                self.refresh()
            elif changes.files or changes.dirs:
                self.refresh_paths(changes.files, changes.dirs)

    @property
    def watching(self) -> bool:
        """Whether reads are kept fresh by a file watcher (else by a walk per read)."""
        return self._watcher is not None

    # ------------------------------------------------------------------ refresh

    def walk(self, top: str = "") -> Iterator[tuple[str, os.stat_result]]:
        """Every item and synapse path under the root (or under ``top``), as (relpath,
        lstat); see :func:`~engram.index.rows.vault_files`."""
        for rel, entry in vault_files(self.root, top, self.wanted):
            try:
                yield rel, entry.stat(follow_symlinks=False)
            except OSError:
                continue

    def paths(self, top: str = "") -> Iterator[str]:
        """The paths :meth:`walk` yields, without a stat each (a cold build reads every
        file anyway)."""
        return (rel for rel, _ in vault_files(self.root, top, self.wanted))

    def refresh(self, progress: Progress | None = None) -> RefreshStats:
        """Bring the index in line with the files on disk (see module docstring).

        When an earlier refresh completed, only what changed since it started is
        re-checked (found by ``find -cnewer``, see :func:`engram.freshness.changed_since`);
        otherwise, or where ``find`` cannot run, every file is stat'ed. ``progress`` is
        told of each batch of files parsed (a cold build of a big vault takes a while)."""
        with self._lock:
            started = time.time_ns()
            mark = self._scan_mark()
            if mark is not None:
                changes = changed_since(self.root, mark, SKIP_DIRS)
                if changes is not None:
                    stats = self._refresh_changes(changes, progress)
                    self._set_scan_mark(started)
                    return stats
            stats = self._refresh_walk(progress)
            self._set_scan_mark(started)
            return stats

    def _scan_mark(self) -> int | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'scanned'").fetchone()
        return int(row[0]) if row else None

    def _set_scan_mark(self, started_ns: int) -> None:
        """Record that every change completed before ``started_ns`` is indexed (kept at
        the latest such instant any process recorded)."""
        mark = started_ns - SCAN_MARGIN_NS
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('scanned', ?) ON CONFLICT(key) DO UPDATE"
                " SET value = CASE WHEN CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER)"
                " THEN excluded.value ELSE value END",
                (str(mark),),
            )

    def _refresh_changes(self, changes: Changes, progress: Progress | None = None) -> RefreshStats:
        """Re-check reported files; re-list reported folders (:func:`relist`)."""
        dirs: set[str] = set()
        files = set(changes.files)
        for folder in changes.dirs:
            found = relist(self.root, folder, self._under(folder), SKIP_DIRS)
            if found is None:
                return self._refresh_walk(progress)  # the vault root itself is unreadable
            files |= found.files
            dirs |= found.dirs
        return self.refresh_paths(files, sorted(dirs), progress)

    def _under(self, folder: str) -> Iterator[tuple[str, int]]:
        """``(path, ino)`` of every indexed file below ``folder`` (vault-relative; "" is
        the whole vault). A range over the primary key: ``LIKE`` cannot use it (it folds
        case), and a scan of every row per folder made a refresh after a pull quadratic."""
        if not folder:
            yield from self.conn.execute("SELECT path, ino FROM files")
            return
        # Paths below "a/b" are those from "a/b/" up to, not including, "a/b0" ('0'
        # follows '/'); the index compares bytes, and '/' is one byte in UTF-8.
        yield from self.conn.execute(
            "SELECT path, ino FROM files WHERE path >= ? AND path < ?", (folder + "/", folder + "0")
        )

    def _refresh_walk(self, progress: Progress | None = None) -> RefreshStats:
        with self._lock:
            known = self._stamps()
            if not known:  # a cold build: every file is read, no stamp to compare with
                rels = list(self.paths())
                return RefreshStats(len(rels), len(rels), 0, self._apply(rels, [], cold=True, progress=progress))
            seen: set[str] = set()
            changed: list[str] = []
            for rel, st in self.walk():
                seen.add(rel)
                if _stale(known.get(rel), st):
                    changed.append(rel)
            gone = [path for path in known if path not in seen]
            changed = self._restamp_unchanged(changed, known)
            errors = self._apply(changed, gone, progress=progress)
            return RefreshStats(len(seen), len(changed), len(gone), errors)

    def refresh_paths(
        self, files: Iterable[str], dirs: Iterable[str] = (), progress: Progress | None = None
    ) -> RefreshStats:
        """Re-check only the given files and folders (vault-relative), as a watcher reports."""
        with self._lock:
            candidates = {rel for rel in files if self.wanted(rel)}
            known_under: list[str] = []
            for top in dirs:
                candidates.update(self.paths(top))
                known_under += [path for path, _ in self._under(top)]
            candidates.update(known_under)
            if not candidates:
                return RefreshStats()
            known = self._stamps(candidates)
            changed: list[str] = []
            gone: list[str] = []
            for rel in candidates:
                try:
                    st = os.stat(self.root / rel, follow_symlinks=False)
                except OSError:
                    if rel in known:
                        gone.append(rel)
                    continue
                if stat.S_ISDIR(st.st_mode):  # a folder by that name now: no file is there
                    if rel in known:
                        gone.append(rel)
                    continue
                if _stale(known.get(rel), st):
                    changed.append(rel)
            changed = self._restamp_unchanged(changed, known)
            errors = self._apply(changed, gone, progress=progress)
            return RefreshStats(len(candidates), len(changed), len(gone), errors)

    def rebuild(self, progress: Progress | None = None) -> RefreshStats:
        """Drop everything and index from scratch. In place (other processes using the
        index see the rebuild); an index too broken for that is moved aside and made anew."""
        with self._lock:
            try:
                self._rebuild_schema(self.conn, force=True)
            except sqlite3.DatabaseError as exc:
                if not dbfile.corrupt(exc):
                    raise StorageError(f"cannot rebuild the index: {exc}.", hint=dbfile.REBUILD_HINT) from exc
                self.close()
                dbfile.set_aside(self.db_path)
                self._rebuild_schema(self.conn, force=True)
            return self.refresh(progress)

    def _restamp_unchanged(self, changed: list[str], known: dict[str, tuple[int, int, int, int]]) -> list[str]:
        """``changed`` less the racy files whose bytes did not change, which are re-stamped
        instead of parsed (:func:`engram.index.rows.settle_racy`)."""
        rest, still = settle_racy(self.root, changed, known)
        if still:
            with self.transaction() as conn:
                conn.executemany("UPDATE files SET ctime_ns = ?, size = ?, ino = ? WHERE path = ?", still)
        return rest

    def _stamps(self, only: set[str] | None = None) -> dict[str, tuple[int, int, int, int]]:
        # Plain tuples: a full walk compares 100k+ of them, and a dataclass per file costs
        # a fifth of the walk.
        if only is not None and len(only) < 500:
            marks = ",".join("?" * len(only))
            rows = self.conn.execute(
                f"SELECT path, ctime_ns, size, ino, digest FROM files WHERE path IN ({marks})", list(only)
            )
        else:
            rows = self.conn.execute("SELECT path, ctime_ns, size, ino, digest FROM files")
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def _apply(self, changed: list[str], gone: list[str], cold: bool = False, progress: Progress | None = None) -> int:
        """Parse ``changed`` (in worker processes when there are many) and write the
        results in one transaction, taken when the first batch is parsed: a reader never
        sees half a refresh, and small refreshes parse before holding the write lock."""
        if not changed and not gone:
            return 0
        errors = 0
        batches = parse_batches(self.root, changed)
        try:
            with bar(progress, "indexing notes", len(changed)) as shown:
                first = next(batches, [])
                with self.transaction() as conn:
                    # Wikilinks whose answer may change: those naming a note that went,
                    # came or changed (see engram.index.wikilinks).
                    keys = set() if cold else name_keys(conn, [*gone, *changed])
                    was = {} if cold else self._ids_at(conn, gone)
                    if cold:
                        # Indexing text row by row through the trigger costs 3x more than
                        # one FTS5 'rebuild' over the finished table.
                        conn.execute("DROP TRIGGER items_ai")
                    for path in gone:
                        self._forget(conn, path)
                    for batch in itertools.chain([first], batches):
                        errors += self._write_batch(conn, batch, cold, keys)
                        shown.update(len(batch))
                    if cold:
                        for statement in FILL_FTS:
                            conn.execute(statement)
                        with contextlib.suppress(sqlite3.Error):  # a defensive build refuses; the row holds the default
                            for statement in FORGET_HASHSIZE:
                                conn.execute(statement)
                        conn.execute(INSERT_TRIGGER)
                        conn.execute("UPDATE tally SET n = (SELECT count(*) FROM items) WHERE key = 'items'")
                        conn.execute("UPDATE tally SET n = n + 1 WHERE key = 'changes'")
                    resolve_links(conn, keys, everything=cold)
                    if was:
                        self._note_moves(conn, was)
        finally:
            batches.close()
        return errors

    def _write_batch(
        self, conn: sqlite3.Connection, batch: list[Wire], cold: bool, keys: set[str]
    ) -> int:
        items: list[tuple[Any, ...]] = []
        synapses: list[tuple[Any, ...]] = []
        files: list[tuple[Any, ...]] = []
        links: list[tuple[Any, ...]] = []
        errors = 0
        for rel, kind, stamp, values, error, found in batch:
            if not cold:  # a cold build starts empty: nothing to forget
                self._forget(conn, rel)
            if stamp is None:
                continue
            if kind == "item" and values is not None:
                items.append(values)
                links.extend(found)
                keys.add(values[NAME_KEY])
            elif kind == "synapse" and values is not None:
                synapses.append(values)
            errors += kind in BAD_KINDS
            files.append((rel, kind, *stamp, error))
        conn.executemany(INSERT_ITEM, items)
        conn.executemany(INSERT_SYNAPSE, synapses)
        conn.executemany(INSERT_FILE, files)
        conn.executemany(INSERT_LINK, links)
        return errors

    @staticmethod
    def _ids_at(conn: sqlite3.Connection, paths: Sequence[str]) -> dict[str, str]:
        ids: dict[str, str] = {}
        for i in range(0, len(paths), 500):
            part = list(paths[i : i + 500])
            marks = ",".join("?" * len(part))
            ids.update(conn.execute(f"SELECT id, path FROM items WHERE path IN ({marks})", part).fetchall())
        return ids

    @staticmethod
    def _note_moves(conn: sqlite3.Connection, was: dict[str, str]) -> None:
        """Record the ids that left a path in this refresh and are now at another."""
        ids = list(was)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            moved = conn.execute(f"SELECT DISTINCT id FROM items WHERE id IN ({marks})", part).fetchall()
            conn.executemany("INSERT OR IGNORE INTO moves(id) VALUES (?)", moved)

    def take_moves(self) -> list[str]:
        """The ids of items a refresh saw move since the last call (and forget them)."""
        with self.transaction() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM moves ORDER BY id")]
            conn.execute("DELETE FROM moves")
        return ids

    # ------------------------------------------------------------------ writes

    def put_item(self, rel: str, item: Engram, derived: str, written: Written | None = None) -> None:
        """Record an item the vault just wrote at ``rel`` (re-read from the file, so the
        row, its wikilinks and properties are exactly what the file says). A writer that
        holds what it wrote (:func:`engram.store.format.write_note`: the note read from
        the bytes in memory) passes it, and only the file's stamp is read."""
        parsed = parse_written(self.root, rel, written) if written is not None else None
        if parsed is None:
            parsed = parse_file(self.root, rel)
        if parsed.kind != "item" or parsed.values is None or parsed.stamp is None:
            st = (self.root / rel).stat()
            parsed = Parsed(rel, "item", FileStamp.of(st), item_values(rel, item, derived))
        with self.transaction() as conn:
            keys = name_keys(conn, [rel])
            self._write_batch(conn, [parsed.wire()], False, keys)
            resolve_links(conn, keys)

    def put_synapse(self, rel: str, synapse: Synapse) -> None:
        st = (self.root / rel).stat()
        with self.transaction() as conn:
            self._forget(conn, rel)
            conn.execute(INSERT_SYNAPSE, synapse_values(rel, synapse))
            self._put_file(conn, rel, "synapse", FileStamp.of(st), None)

    def drop(self, rel: str) -> None:
        """Forget a file the vault just removed."""
        with self.transaction() as conn:
            keys = name_keys(conn, [rel])
            self._forget(conn, rel)
            resolve_links(conn, keys)

    def _put_file(
        self, conn: sqlite3.Connection, rel: str, kind: str, stamp: FileStamp, error: str | None
    ) -> None:
        conn.execute(INSERT_FILE, (rel, kind, stamp.ctime_ns, stamp.size, stamp.ino, stamp.digest, error))

    def _forget(self, conn: sqlite3.Connection, rel: str) -> None:
        conn.execute("DELETE FROM items WHERE path = ?", (rel,))
        conn.execute("DELETE FROM synapses WHERE path = ?", (rel,))
        conn.execute("DELETE FROM files WHERE path = ?", (rel,))
        conn.execute("DELETE FROM links WHERE src_path = ?", (rel,))

    # ------------------------------------------------------------------ reads

    def item_rows(self, where: str, params: Sequence[Any] = ()) -> list[ItemRow]:
        rows = self.query(
            f"SELECT path, id, title, derived, fingerprint, by_person FROM items WHERE {where}", params
        )
        return [
            ItemRow(r["path"], r["id"], r["title"], r["derived"], r["fingerprint"], bool(r["by_person"])) for r in rows
        ]

    def items(self, where: str = "1", params: Sequence[Any] = (), tail: str = "") -> list[Engram]:
        """Items from the index (no file reads), filtered by a SQL condition."""
        rows = self.query(f"SELECT path, body, meta, by_person FROM items WHERE {where} {tail}", params)
        return [
            Engram.from_meta(json.loads(r["meta"]), r["body"], path=r["path"], by_person=bool(r["by_person"]))
            for r in rows
        ]

    def synapses(self, where: str = "1", params: Sequence[Any] = ()) -> list[Synapse]:
        rows = self.query(f"SELECT data FROM synapses WHERE {where} ORDER BY id", params)
        return [Synapse.from_meta(json.loads(r["data"])) for r in rows]

    def synapse_paths(self, synapse_id: str) -> list[str]:
        return [r["path"] for r in self.query("SELECT path FROM synapses WHERE id = ?", (synapse_id,))]

    def links(self, where: str = "1", params: Sequence[Any] = (), limit: int | None = None) -> list[LinkRow]:
        """Wikilinks typed in notes, filtered by a SQL condition over ``links``, in path
        order (the first ``limit`` of them, when given)."""
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        return link_rows(self.query(f"SELECT {LINK_COLUMNS} FROM links WHERE {where} ORDER BY src_path, text{tail}", params))

    def bad_files(self) -> list[BadFile]:
        marks = ",".join("?" * len(BAD_KINDS))
        rows = self.query(
            f"SELECT path, kind, error FROM files WHERE kind IN ({marks}) ORDER BY path", BAD_KINDS
        )
        return [BadFile(r["path"], r["error"] or "", r["kind"]) for r in rows]

    def counts(self) -> dict[str, int]:
        rows = self.query("SELECT kind, count(*) AS n FROM files GROUP BY kind")
        return {r["kind"]: r["n"] for r in rows}

    # ------------------------------------------------------------------ search support

    def fts_rows(self, sql: str, params: Sequence[Any], raw: bool = False) -> list[dict[str, Any]]:
        """Rows of a search statement as dicts; errors translated (see :meth:`fts_tuples`)."""
        with self._lock:
            try:
                cur = self.conn.execute(sql, params)
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
            except sqlite3.OperationalError as exc:
                self._fts_error(exc, raw)
                raise  # unreachable: _fts_error always raises

    def fts_tuples(self, sql: str, params: Sequence[Any], raw: bool) -> list[tuple[Any, ...]]:
        """Rows of a search statement; a bad ``raw`` FTS5 query is InvalidInput."""
        with self._lock:
            try:
                return list(self.conn.execute(sql, params).fetchall())
            except sqlite3.OperationalError as exc:
                self._fts_error(exc, raw)
                raise  # unreachable: _fts_error always raises

    @staticmethod
    def _fts_error(exc: sqlite3.Error, raw: bool) -> None:
        if raw and not any(w in str(exc) for w in ("locked", "busy", "disk", "I/O", "malformed")):
            raise InvalidInput(
                f"the raw FTS5 query is not valid: {exc}.",
                field="query",
                hint='Drop --raw to search the words as typed, or fix the syntax (e.g. "a b" OR c*).',
            ) from exc
        raise StorageError(f"search failed: {exc}.", hint="Run `engram reindex`.") from exc

    def term_stats(self, words: Sequence[str], above: int | None = None) -> tuple[int, dict[str, int]]:
        """(number of items, {word: number of items containing it}) for plain words,
        stemmed exactly as the word index stems them.

        With ``above``, a count over ``above`` may be one measured before the latest
        writes, when those writes only added items: the word is then still held by more
        than ``above`` items (adding items never lowers a count) and the caller, which
        only needs to know that much (the near-match check skips such words), is spared
        re-counting a long posting list after every write. Counts up to ``above`` are
        always exact."""
        with self._lock:
            try:
                conn = self.conn
                tally = dict(conn.execute("SELECT key, n FROM tally").fetchall())
                total, changes = int(tally["items"]), int(tally["changes"])
                if changes != self._df_changes:  # any item written since: counts moved
                    # Every insert adds one to both tallies and every delete (an update
                    # deletes first) one to 'changes' and minus one to 'items'; a rebuilt
                    # index restarts 'changes' from the clock. Equal steps: inserts only.
                    added = changes - self._df_changes
                    grew_only = self._df_changes >= 0 and added >= 0 and added == total - self._df_items
                    kept = {t: n for t, n in self._df_cache.items() if n > above} if grew_only and above is not None else {}
                    self._df_cache, self._df_floors = kept, set(kept)
                    self._df_changes, self._df_items = changes, total
                if not words:
                    return total, {}
                stems = self._stems(conn, words)
                floors = {t for t in self._df_floors if above is None or self._df_cache[t] <= above}
                wanted = sorted({s for g in stems.values() for s in g} - (set(self._df_cache) - floors))
                if wanted:
                    marks = ",".join("?" * len(wanted))
                    found = dict(
                        conn.execute(
                            f"SELECT term, doc FROM temp.engram_vocab WHERE term IN ({marks})", wanted
                        ).fetchall()
                    )
                    if len(self._df_cache) > 50_000:
                        self._df_cache.clear()
                        self._df_floors.clear()
                    self._df_cache.update({t: int(found.get(t, 0)) for t in wanted})
                    self._df_floors.difference_update(wanted)
                df = self._df_cache
            except sqlite3.Error as exc:
                raise StorageError(f"search failed: {exc}.", hint="Run `engram reindex`.") from exc
        # A word the tokenizer splits (rare for plain words) counts as its rarest part.
        return total, {w: min((df.get(s, 0) for s in stems.get(w, ())), default=0) for w in words}

    def _stems(self, conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        # The word index's own tokenizer stems the words: a tiny temp FTS5 table with the
        # same tokenizer, read back through fts5vocab. No second stemmer to drift from it.
        # Stems never change, so they are cached for the life of the connection.
        missing = [w for w in dict.fromkeys(words) if w not in self._stem_cache]
        if missing:
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_stem USING fts5("
                "t, tokenize='porter unicode61 remove_diacritics 2')"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_stem_v"
                " USING fts5vocab(temp, engram_stem, instance)"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_vocab"
                " USING fts5vocab(main, items_fts, row)"
            )
            conn.execute("DELETE FROM temp.engram_stem")
            conn.executemany(
                "INSERT INTO temp.engram_stem(rowid, t) VALUES (?, ?)",
                list(enumerate(missing, start=1)),
            )
            found: dict[str, list[str]] = {w: [] for w in missing}
            for doc, term in conn.execute("SELECT doc, term FROM temp.engram_stem_v"):
                found[missing[int(doc) - 1]].append(str(term))
            if len(self._stem_cache) > 50_000:
                self._stem_cache.clear()
            self._stem_cache.update({w: tuple(v) for w, v in found.items()})
        return {w: self._stem_cache[w] for w in words}

def _stale(stamp: tuple[int, int, int, int] | None, st: os.stat_result) -> bool:
    """Whether a file must be (re-)read: unknown, racily stamped, or changed."""
    return stamp is None or stamp[0] < 0 or stamp[:3] != (st.st_ctime_ns, st.st_size, st.st_ino)
