"""The ``links`` table: wikilinks typed in notes, stored and resolved inside the index.

The index calls these inside its own transactions (:mod:`engram.index.catalog`); the
rules of extraction and resolution are :mod:`engram.index.wikilinks`. Each note's links
are inserted unresolved when the note is (re)indexed; :func:`resolve_links` then answers
the unresolved ones and re-answers every link whose file-name key belongs to a note that
appeared, went or changed, which is exactly the set whose answer can have moved.
Nothing here imports ``sqlite3``: the catalog owns the connection and its errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram.index.wikilinks import Candidate, resolve_all

if TYPE_CHECKING:
    import sqlite3

LINK_SCHEMA: tuple[str, ...] = (
    # Wikilinks typed in notes, resolved the way Obsidian resolves them (index/wikilinks.py).
    # Derived: rebuilt from the files, never written to one.
    """
    CREATE TABLE links(
        src_path TEXT NOT NULL,
        src_id TEXT NOT NULL,
        text TEXT NOT NULL,            -- the target as written (no heading, no alias)
        key TEXT NOT NULL,             -- the file name it must match
        embed INTEGER NOT NULL,
        prop INTEGER NOT NULL,         -- 1: in a frontmatter property
        status TEXT,                   -- ok | missing | ambiguous; NULL until resolved
        target_path TEXT,
        target_id TEXT,
        choices TEXT                   -- the paths an ambiguous link could mean
    )
    """,
    "CREATE INDEX links_src ON links(src_path)",
    "CREATE INDEX links_src_id ON links(src_id)",
    "CREATE INDEX links_key ON links(key)",
    "CREATE INDEX links_target ON links(target_id)",
    # The links not resolved yet (only those a write just inserted): resolve_links reads
    # them after every write, and without this index that read scans every link.
    "CREATE INDEX links_unresolved ON links(key) WHERE status IS NULL",
)

INSERT_LINK = "INSERT INTO links(src_path, src_id, text, key, embed, prop) VALUES (?,?,?,?,?,?)"
LINK_COLUMNS = "src_path, src_id, text, embed, prop, status, target_path, target_id, choices"
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One wikilink a note holds, and what it resolved to (see engram.index.wikilinks)."""

    source_path: str
    source_id: str
    text: str
    embed: bool
    in_property: bool
    status: str
    target_path: str | None
    target_id: str | None
    choices: tuple[str, ...]


def link_rows(rows: Iterable[Any]) -> list[LinkRow]:
    """Rows of a ``SELECT {LINK_COLUMNS} FROM links`` (sqlite3.Row or mappings) as values."""
    return [
        LinkRow(
            r["src_path"], r["src_id"], r["text"], bool(r["embed"]), bool(r["prop"]),
            r["status"] or "missing", r["target_path"], r["target_id"],
            tuple(json.loads(r["choices"])) if r["choices"] else (),
        )
        for r in rows
    ]


def _chunks(values: Sequence[str]) -> Iterable[tuple[list[str], str]]:
    for i in range(0, len(values), _CHUNK):
        part = list(values[i : i + _CHUNK])
        yield part, ",".join("?" * len(part))


def name_keys(conn: sqlite3.Connection, paths: Sequence[str]) -> set[str]:
    """The file-name keys of the items at ``paths`` (as the index has them now)."""
    keys: set[str] = set()
    for part, marks in _chunks(paths):
        keys.update(r[0] for r in conn.execute(f"SELECT name_key FROM items WHERE path IN ({marks})", part))
    return keys


def resolve_links(conn: sqlite3.Connection, keys: set[str], everything: bool = False) -> None:
    """(Re-)resolve the links not yet resolved and those whose key is in ``keys``."""
    select = "SELECT rowid, text, key, src_path FROM links"
    if everything:
        rows = conn.execute(select).fetchall()
    else:
        rows = conn.execute(select + " WHERE status IS NULL").fetchall()
        for part, marks in _chunks(sorted(keys)):
            rows += conn.execute(select + f" WHERE key IN ({marks}) AND status IS NOT NULL", part).fetchall()
    if not rows:
        return
    if everything:
        found = conn.execute("SELECT name_key, path, id FROM items").fetchall()
    else:
        found = []
        for part, marks in _chunks(sorted({r[2] for r in rows})):
            found += conn.execute(f"SELECT name_key, path, id FROM items WHERE name_key IN ({marks})", part).fetchall()
    by_key: dict[str, list[Candidate]] = {}
    for key, path, item_id in found:
        by_key.setdefault(key, []).append(Candidate(path, item_id))
    answers = resolve_all(((r[1], r[2], r[3]) for r in rows), by_key)
    conn.executemany(
        "UPDATE links SET status = ?, target_path = ?, target_id = ?, choices = ? WHERE rowid = ?",
        [
            (
                a.status,
                a.target.path if a.target else None,
                a.target.id if a.target else None,
                json.dumps(a.choices, ensure_ascii=False) if a.choices else None,
                r[0],
            )
            for r, a in zip(rows, answers, strict=True)
        ],
    )
