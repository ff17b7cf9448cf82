"""The derived index: disposable, versioned, incremental, and its search primitives."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from engram.index import catalog as index_module
from engram.index import rows as indexrows
from engram.index.catalog import SCHEMA_VERSION, Index
from engram.index.settings import IndexSettings
from engram.vault import Vault


def test_deleting_the_state_folder_loses_nothing_but_time(vault: Vault) -> None:
    a = vault.create("Alpha", "First.", domain=["x"]).item
    b = vault.create("Beta", "Second.", domain=["x"]).item
    vault.link(a.id, "extends", b.id)
    vault.close()
    shutil.rmtree(vault.root / ".engram")
    fresh = Vault.open(vault.root)
    try:
        assert {h.id for h in fresh.search("first").hits} == {a.id, b.id}
        counts = fresh.state.index.counts()
        assert (counts["item"], counts["synapse"]) == (2, 1)
    finally:
        fresh.close()


def test_a_schema_version_mismatch_rebuilds_instead_of_migrating(vault: Vault) -> None:
    vault.create("Alpha", "First.")
    db = vault.state.index.db_path
    vault.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    again = Vault.open(vault.root)
    try:
        assert [h.title for h in again.search("first").hits] == ["Alpha"]
        row = again.state.index.query("SELECT value FROM meta WHERE key = 'schema'")[0]
        assert row["value"] == str(SCHEMA_VERSION)
    finally:
        again.close()


def test_a_corrupt_index_file_is_replaced(vault: Vault) -> None:
    vault.create("Alpha", "First.")
    db = vault.state.index.db_path
    vault.close()
    for suffix in ("-wal", "-shm"):
        (db.parent / (db.name + suffix)).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    again = Vault.open(vault.root)
    try:
        assert [h.title for h in again.search("first").hits] == ["Alpha"]
    finally:
        again.close()


def test_identifiers_keep_what_the_word_index_splits() -> None:
    text = "Set `db_url_v2` and X-Batch, call getUser() on k8s; 数据库 v1.2 is fine. Plain words."
    kept = indexrows.identifiers(text).split()
    assert kept == ["db_url_v2", "X-Batch", "getUser", "k8s", "数据库", "v1.2"]


def test_refresh_is_incremental_and_reports_what_changed(vault: Vault) -> None:
    item = vault.create("Alpha", "First.").item
    assert vault.refresh().changed <= 2  # files written within 2 s are re-read (racy)
    path = vault.root / item.path  # type: ignore[operator]
    path.write_text(path.read_text().replace("First.", "Changed."))
    (vault.root / "notes.md").write_text("# just a note\n")
    (vault.root / "broken.md").write_text("---\nid: [unclosed\n---\n")
    stats = vault.refresh()
    assert stats.changed >= 3 and stats.errors == 1
    assert [b.path for b in vault.state.index.bad_files()] == ["broken.md"]
    (vault.root / "broken.md").unlink()
    assert vault.refresh().removed == 1


def test_a_big_refresh_parses_in_worker_processes(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        vault.create(f"Item number {i}", f"Body {i} mentions walrus.", domain=["bulk"])
    vault.close()
    monkeypatch.setattr(indexrows, "PARALLEL_MIN", 10)
    shutil.rmtree(vault.root / ".engram")
    fresh = Index(vault.root, vault.root / ".engram" / "index.sqlite", IndexSettings(ignore=("README.md",)))
    try:
        stats = fresh.rebuild()
        assert stats.changed == 30 and stats.errors == 0  # the vault README is not an item
        assert fresh.counts()["item"] == 30
    finally:
        fresh.close()


def test_term_stats_stem_like_the_word_index(vault: Vault) -> None:
    vault.create("Running pools", "Connections run in pools.")
    vault.create("Other", "Nothing here.")
    total, df = vault.state.index.term_stats(["connection", "running", "absent"])
    assert total == 2 and df == {"connection": 1, "running": 1, "absent": 0}


def test_search_primitives_translate_errors_into_the_tree(vault: Vault) -> None:
    from engram.errors import InvalidInput

    vault.create("Alpha", "First.")
    with pytest.raises(InvalidInput):
        vault.state.index.search.word_hits('"unterminated', (1, 1, 1, 1), "1", (), 5, raw=True)
    assert index_module.SKIP_DIRS  # the walk skips tool folders


def test_each_write_reads_only_the_unresolved_links_not_every_link(vault: Vault) -> None:
    # resolve_links runs after every write; reading the unresolved links by a scan of the
    # whole links table made an import of a linked vault quadratic (issue: import 106/s).
    for i in range(3):
        vault.create(f"Note {i}", f"See [[Note {i + 1}]] and [[Missing {i}]].", domain=["x"])
    conn = vault.state.index.conn
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT rowid, text, key, src_path FROM links WHERE status IS NULL"
    ).fetchall()
    assert any("links_unresolved" in str(row[-1]) for row in plan), plan
    assert conn.execute("SELECT count(*) FROM links WHERE status IS NULL").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM links").fetchone()[0] == 6
