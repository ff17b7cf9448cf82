"""A cold build is a shortcut to the index a build row by row makes, never another index.

A build from nothing (``engram reindex``, a fresh clone) parses in worker processes,
sends rows back as plain tuples, leaves the text indexes' trigger out while the rows go
in and then fills both FTS tables with one 'rebuild' each, with a large FTS5 buffer
(:data:`engram.index.schema.FILL_FTS`). A refresh of the same files through the path
every later change takes — row by row, the trigger indexing each row's text — must leave
the same thing: every column of ``items``, ``synapses``, ``files`` and ``links``, the
same terms at the same positions in both FTS tables, the same document sizes and
averages, the same FTS configuration. The vault mixes engram items and synapses (the
benchmark's generator), people's notes with wikilinks and properties, and files that do
not parse.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.synth import generate
from engram.index import rows as indexrows
from engram.index.catalog import Index
from engram.index.settings import IndexSettings
from mergedriver import yamlio

PEOPLES_NOTES = {
    "People/Alice.md": "---\ntags: [person]\nmet: '[[Bob]]'\n# a comment\n---\nAlice runs [[Ops]] and ![[map.png]].\n",
    "People/Bob.md": "---\naliases:\n  - Robert\nstatus: \"[[Published]]\"\ncreated: 1700000000000\n---\nBob, see [[Alice|her]].\n",
    "Ops.md": "\ufeff---\r\ntitle: Ops\r\ndesc: Runbooks\r\n---\r\nCRLF body with db_url_v2 and 東京 and ``[[not a link]]``.\r\n",
    "Templates/Daily.md": "---\ndate: {{date}}\n---\n# {{title}}\n",
    "plain.md": "Just words, a camelCase name, v1.2.3 and x86_64.\n\n## Synapses (derived)\n- → [[Ops]]\nafter\n",
    "broken.md": "---\nid: 01JBROKEN000000000000000000\ntitle: [unclosed\n---\nbody\n",
    "binary.md": "\x00\x01",
    "synapses/extends/bad.yaml": "- not a mapping\n",
}


def build_vault(root: Path) -> None:
    generate(120, seed=3, root=root)
    for rel, text in PEOPLES_NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())


def dump(index: Index) -> dict[str, Any]:
    """Everything a build leaves that does not depend on row ids or the clock."""
    conn = index.conn
    q = lambda sql: conn.execute(sql).fetchall()  # noqa: E731
    for table in ("items_fts", "items_tri"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_v USING fts5vocab(main, {table}, instance)")
    columns = [r[1] for r in q("PRAGMA table_info(items)") if r[1] != "rowid"]
    out: dict[str, Any] = {
        "items": q(f"SELECT {', '.join(columns)} FROM items ORDER BY path"),
        "synapses": q("SELECT * FROM synapses ORDER BY path"),
        "files": q("SELECT path, kind, size, ino, error FROM files ORDER BY path"),
        "links": q("SELECT * FROM links ORDER BY src_path, text"),
        "tally": q("SELECT n FROM tally WHERE key = 'items'"),
        "meta": q("SELECT * FROM meta WHERE key IN ('schema', 'ignore') ORDER BY key"),
    }
    for table in ("items_fts", "items_tri"):
        out[table] = q(
            f"SELECT i.path, v.term, v.col, v.offset FROM temp.{table}_v v JOIN items i ON i.rowid = v.doc"
            " ORDER BY i.path, v.col, v.offset, v.term"
        )
        out[f"{table} sizes"] = q(f"SELECT i.path, d.sz FROM {table}_docsize d JOIN items i ON i.rowid = d.id ORDER BY i.path")
        out[f"{table} averages"] = q(f"SELECT block FROM {table}_data WHERE id = 1")
        out[f"{table} config"] = q(f"SELECT * FROM {table}_config ORDER BY k")
    stamps = q("SELECT path, ctime_ns FROM files")
    for path, ctime in stamps:  # racy (-1) or the file's own ctime, whichever build it was
        assert ctime in (-1, os.lstat(index.root / path).st_ctime_ns), path
    return out


def clear_memos() -> None:
    for memo in (yamlio._LINE_MEMO, yamlio._SCALAR_MEMO, yamlio._GOOD_KEYS, indexrows._BARREN):
        memo.clear()


def test_a_cold_build_in_workers_equals_a_build_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "vault"
    build_vault(root)
    monkeypatch.setattr(indexrows, "PARALLEL_MIN", 50)  # worker processes, several batches
    clear_memos()
    cold = Index(root, tmp_path / "cold.sqlite", IndexSettings())
    by_row = Index(root, tmp_path / "by-row.sqlite", IndexSettings())
    try:
        stats = cold.rebuild()
        assert stats.changed > 150 and stats.errors == 3
        rels = [rel for rel, _ in by_row.walk()]
        by_row.refresh_paths(rels[:1])  # then the rest as a later refresh: row by row, the trigger on
        monkeypatch.setattr(indexrows, "PARALLEL_MIN", 10**9)  # in this process, memos warm
        by_row.refresh_paths(rels[1:])
        assert cold.query("SELECT count(*) AS n FROM links")[0]["n"] > 0
        assert dump(cold) == dump(by_row)
    finally:
        cold.close()
        by_row.close()
