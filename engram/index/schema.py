"""The tables of the derived index and the statements that fill them.

``SCHEMA_VERSION`` names this layout; an index built with another is dropped and rebuilt
(:mod:`engram.index.catalog`), never migrated. See the catalog's docstring for what
each table holds; the ``links`` table is :mod:`engram.index.linktable`'s.
"""

from __future__ import annotations

from engram.index.linktable import LINK_SCHEMA

SCHEMA_VERSION = 10

SCHEMA: tuple[str, ...] = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # Item count kept by triggers: BM25's IDF needs N on every query, and count(*) scans.
    "CREATE TABLE tally(key TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    "INSERT INTO tally(key, n) VALUES ('items', 0), ('changes', 0)",
    """
    CREATE TABLE files(
        path TEXT PRIMARY KEY,
        kind TEXT NOT NULL,            -- item | synapse | other | bad
        ctime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        digest INTEGER NOT NULL DEFAULT 0,  -- of the bytes read (0: unknown), see rows.digest
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
        ident TEXT NOT NULL,           -- identifier-like, non-Latin tokens of summary+body
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
        retrieval_count INTEGER NOT NULL,
        effective_retrievals INTEGER NOT NULL,
        failed_uses INTEGER NOT NULL,
        reinforcement REAL NOT NULL,
        last_retrieved_at TEXT,
        last_effective_at TEXT,
        updated_ts REAL,               -- updated_at as epoch seconds (ranking needs no parsing)
        retrieved_ts REAL,             -- last_retrieved_at as epoch seconds
        version INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        derived TEXT NOT NULL,
        meta TEXT NOT NULL,
        identity TEXT NOT NULL,        -- file (the id is in the frontmatter) | derived (from the path)
        by_person INTEGER NOT NULL,    -- 1: a person's note, not engram's own item (engram.store.notes)
        name_key TEXT NOT NULL,        -- the file name as wikilinks match it (folded, no .md)
        path_key TEXT NOT NULL,        -- the path as wikilinks match it
        body_hash TEXT NOT NULL,       -- sha256 of the content as it is (contentHash is what the file says)
        findings TEXT                  -- JSON: frontmatter engram read around (clashes, not YAML)
    )
    """,
    "CREATE INDEX items_id ON items(id)",
    "CREATE INDEX items_name_key ON items(name_key)",
    "CREATE INDEX items_title_key ON items(title_key)",
    "CREATE INDEX items_fingerprint ON items(fingerprint)",
    "CREATE INDEX items_domain ON items(domain)",
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
    "CREATE INDEX synapses_id ON synapses(id)",
    "CREATE INDEX synapses_source ON synapses(source, kind)",
    "CREATE INDEX synapses_target ON synapses(target, kind)",
    *LINK_SCHEMA,
    # Items a refresh saw change path (renamed or moved outside engram): the next write
    # path (sync) regenerates the derived links that name their old path.
    "CREATE TABLE moves(id TEXT PRIMARY KEY)",
    # Semantic recall's item vectors (engram.index.vectors), dropped with their item row.
    "CREATE TABLE vectors(rowid INTEGER PRIMARY KEY, model TEXT NOT NULL, vec BLOB NOT NULL)",
    """
    CREATE VIRTUAL TABLE items_fts USING fts5(
        title, summary, tags_text, body,
        content='items', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE VIRTUAL TABLE items_tri USING fts5(
        title, tags_text, ident,
        content='items', content_rowid='rowid',
        tokenize='trigram'
    )
    """,
    """
    CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
        INSERT INTO items_fts(rowid, title, summary, tags_text, body)
            VALUES (new.rowid, new.title, new.summary, new.tags_text, new.body);
        INSERT INTO items_tri(rowid, title, tags_text, ident)
            VALUES (new.rowid, new.title, new.tags_text, new.ident);
        UPDATE tally SET n = n + 1 WHERE key = 'items';
        UPDATE tally SET n = n + 1 WHERE key = 'changes';
    END
    """,
    """
    CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
        INSERT INTO items_fts(items_fts, rowid, title, summary, tags_text, body)
            VALUES ('delete', old.rowid, old.title, old.summary, old.tags_text, old.body);
        INSERT INTO items_tri(items_tri, rowid, title, tags_text, ident)
            VALUES ('delete', old.rowid, old.title, old.tags_text, old.ident);
        DELETE FROM vectors WHERE rowid = old.rowid;
        UPDATE tally SET n = n - 1 WHERE key = 'items';
        UPDATE tally SET n = n + 1 WHERE key = 'changes';
    END
    """,
)

INSERT_TRIGGER = next(st for st in SCHEMA if "CREATE TRIGGER items_ai" in st)

#: How a cold build fills the FTS tables, after the rows are in: one 'rebuild' each (a
#: third of the cost of indexing row by row), buffering up to 16 MB of postings in memory
#: (FTS5's ``hashsize``, 1 MB by default) so that it writes fewer, larger segments and
#: merges less: a third less CPU again (4.4 -> 2.8 s at 100k items), for the same terms,
#: positions and sizes; a larger buffer saved no more and held more memory. Then the
#: default is put back and (:data:`FORGET_HASHSIZE`) its configuration row dropped, so the
#: tables are configured as a build row by row leaves them.
#:
#: Between the two, an 'optimize' merges what the rebuild wrote into one segment, so a
#: query reads each term's postings from one b-tree rather than from every segment the
#: rebuild left: at 100k items recall p95 fell from 24-27 to 16-20 ms and p50 from
#: 8.2-8.8 to 5.9-8.0 ms (interleaved runs on a busy machine), for ~2 s more CPU per
#: build. Later writes add small segments again, which FTS5's automerge keeps in check.
FTS5_HASHSIZE, COLD_HASHSIZE = 1 << 20, 16 << 20
FILL_FTS: tuple[str, ...] = tuple(
    statement
    for table in ("items_fts", "items_tri")
    for statement in (
        f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', {COLD_HASHSIZE})",
        f"INSERT INTO {table}({table}) VALUES ('rebuild')",
        f"INSERT INTO {table}({table}) VALUES ('optimize')",
        f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', {FTS5_HASHSIZE})",
    )
)
FORGET_HASHSIZE = tuple(f"DELETE FROM {table}_config WHERE k = 'hashsize'" for table in ("items_fts", "items_tri"))

ITEM_COLUMNS = (
    "path, id, title, title_key, summary, tags_text, body, ident, domain, kind, status,"
    " visibility, importance, confidence, created_at, updated_at, activated_at,"
    " deactivated_at, superseded_by, retrieval_count, effective_retrievals, failed_uses,"
    " reinforcement, last_retrieved_at, last_effective_at, updated_ts, retrieved_ts, version,"
    " content_hash,"
    " fingerprint, derived, meta, identity, by_person, name_key, path_key, body_hash, findings"
)
INSERT_ITEM = (
    f"INSERT INTO items({ITEM_COLUMNS}) VALUES ({','.join('?' * (ITEM_COLUMNS.count(',') + 1))})"
)
INSERT_SYNAPSE = (
    "INSERT OR REPLACE INTO synapses(path, id, source, target, kind, weight, data)"
    " VALUES (?,?,?,?,?,?,?)"
)
NAME_KEY = ITEM_COLUMNS.replace(" ", "").split(",").index("name_key")
INSERT_FILE = (
    "INSERT OR REPLACE INTO files(path, kind, ctime_ns, size, ino, digest, error) VALUES (?,?,?,?,?,?,?)"
)
