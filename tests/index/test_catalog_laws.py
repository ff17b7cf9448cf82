"""The catalog's contract with the files: what an item is, moves, links, many readers.

Each test edits real files the way a person, a tool or git would, and checks what
:class:`engram.index.catalog.Index` then answers (through the vault where a user would
ask, directly where another module relies on the index).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest

from engram.errors import StorageError
from engram.index.catalog import Index
from engram.index.settings import IndexSettings
from engram.vault import Vault


def index_at(root: Path, tmp: Path, ignore: tuple[str, ...] = ()) -> Index:
    return Index(root, tmp / "index.sqlite", IndexSettings(ignore))


def paths(index: Index) -> list[str]:
    return [r["path"] for r in index.query("SELECT path FROM items ORDER BY path")]


def link_status(index: Index, src: str) -> list[tuple[str, str, str | None]]:
    return [(link.text, link.status, link.target_path) for link in index.links("src_path = ?", (src,))]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "Templates").mkdir(parents=True)
    (folder / "Templates" / "Daily.md").write_text("---\ndate: {{date}}\n---\n")
    (folder / "Trip.md").write_text("Went to [[Lisbon]].\n")
    (folder / "a.excalidraw.md").write_text("drawing\n")
    return folder


def test_the_ignore_list_decides_what_is_an_item_and_a_change_rebuilds(root: Path, tmp_path: Path) -> None:
    index = index_at(root, tmp_path)
    index.refresh()
    assert paths(index) == ["Templates/Daily.md", "Trip.md", "a.excalidraw.md"]
    index.close()
    index = index_at(root, tmp_path, ("Templates/", "*.excalidraw.md"))
    index.refresh()
    assert paths(index) == ["Trip.md"]
    assert index.wanted("Templates/Other.md") is None and index.wanted("x/Trip.md") == "item"
    assert index.wanted("synapses/extends/s.yaml") == "synapse" and index.wanted("notes.txt") is None
    index.close()
    kept = Index(root, tmp_path / "index.sqlite", None)  # settings unreadable: keep the list it was built with
    try:
        kept.refresh()
        assert kept.settings.ignore == ("Templates/", "*.excalidraw.md")
        assert paths(kept) == ["Trip.md"]
    finally:
        kept.close()


def test_a_note_whose_id_lives_in_the_file_is_a_move_when_renamed(root: Path, tmp_path: Path) -> None:
    (root / "Owned.md").write_text("---\nid: 01JOWNED00000000000000000A\ntitle: Owned\n---\nbody\n")
    index = index_at(root, tmp_path)
    try:
        index.refresh()
        assert index.take_moves() == []
        os.replace(root / "Owned.md", root / "Templates" / "Owned moved.md")
        os.replace(root / "Trip.md", root / "Trip renamed.md")  # a derived id: a new note, not a move
        index.refresh()
        assert index.take_moves() == ["01JOWNED00000000000000000A"]
        assert index.take_moves() == []  # taken once
        rows = index.query("SELECT id, path FROM items WHERE id = '01JOWNED00000000000000000A'")
        assert [r["path"] for r in rows] == ["Templates/Owned moved.md"]
    finally:
        index.close()


def test_wikilinks_follow_the_notes_they_name_as_they_come_and_go(root: Path, tmp_path: Path) -> None:
    index = index_at(root, tmp_path)
    try:
        index.refresh()
        assert link_status(index, "Trip.md") == [("Lisbon", "missing", None)]
        (root / "Places").mkdir()
        (root / "Places" / "Lisbon.md").write_text("A city.\n")
        index.refresh()
        assert link_status(index, "Trip.md") == [("Lisbon", "ok", "Places/Lisbon.md")]
        (root / "Old").mkdir()
        (root / "Old" / "lisbon.md").write_text("Another.\n")  # a second note by that name
        index.refresh()
        assert link_status(index, "Trip.md")[0][1] == "ambiguous"
        (root / "Old" / "lisbon.md").unlink()
        index.refresh()
        assert link_status(index, "Trip.md") == [("Lisbon", "ok", "Places/Lisbon.md")]
        os.replace(root / "Places" / "Lisbon.md", root / "Places" / "Porto.md")
        index.refresh()
        assert link_status(index, "Trip.md") == [("Lisbon", "missing", None)]
    finally:
        index.close()


def test_a_decomposed_file_name_answers_a_composed_link(root: Path, tmp_path: Path) -> None:
    name = unicodedata.normalize("NFD", "Café")  # as macOS writes file names
    (root / f"{name}.md").write_text("Coffee.\n")
    (root / "Menu.md").write_text("See [[Café]] and [[cafe\u0301]].\n")
    index = index_at(root, tmp_path)
    try:
        index.refresh()
        statuses = link_status(index, "Menu.md")
        assert [s for _, s, _ in statuses] == ["ok", "ok"]
        assert {t for _, _, t in statuses} == {f"{name}.md"}
        # Its derived id does not depend on how the name was normalised on disk.
        composed = index.query("SELECT id FROM items WHERE path = ?", (f"{name}.md",))[0]["id"]
        from engram.store.notes import derived_id

        assert composed == derived_id("Café.md")
    finally:
        index.close()


def test_a_note_replaced_by_a_folder_of_the_same_name_is_dropped(root: Path, tmp_path: Path) -> None:
    index = index_at(root, tmp_path)
    try:
        index.refresh()
        (root / "Trip.md").unlink()
        (root / "Trip.md").mkdir()
        (root / "Trip.md" / "inner.md").write_text("inside\n")
        index.refresh()
        assert "Trip.md" not in paths(index) and "Trip.md/inner.md" in paths(index)
        assert index.query("SELECT count(*) AS n FROM files WHERE path = 'Trip.md'")[0]["n"] == 0
    finally:
        index.close()


def test_a_folder_replaced_by_a_note_of_the_same_name_drops_its_notes(root: Path, tmp_path: Path) -> None:
    index = index_at(root, tmp_path)
    try:
        index.refresh()
        (root / "Templates" / "Daily.md").unlink()
        (root / "Templates").rmdir()
        (root / "Templates").write_text("now a file without .md\n")
        index.refresh()
        assert paths(index) == ["Trip.md", "a.excalidraw.md"]
    finally:
        index.close()


def test_put_item_records_what_the_file_says_not_what_the_caller_thought(vault: Vault) -> None:
    item = vault.create("Recorded", "first").item
    assert item.path is not None
    path = vault.root / item.path
    path.write_text(path.read_text().replace("first", "edited under the caller"))
    vault.state.index.put_item(item.path, item, "")
    (row,) = vault.state.index.query("SELECT body FROM items WHERE id = ?", (item.id,))
    assert row["body"] == "edited under the caller\n"
    vault.state.index.drop(item.path)
    assert vault.state.index.query("SELECT count(*) AS n FROM items WHERE id = ?", (item.id,))[0]["n"] == 0


def test_dropping_a_note_re_resolves_the_links_to_it(vault: Vault) -> None:
    target = vault.create("Lisbon", "A city.", domain=["places"]).item
    vault.create("Trip", "Went to [[Lisbon]].", domain=["log"])
    index = vault.state.index
    assert link_status(index, "log/trip.md") == [("Lisbon", "ok", "places/lisbon.md")]
    vault.delete(target.id)
    assert link_status(index, "log/trip.md") == [("Lisbon", "missing", None)]


def test_a_failing_query_is_a_storage_error_with_what_to_do(vault: Vault) -> None:
    with pytest.raises(StorageError) as err:
        vault.state.index.query("SELECT nope FROM items")
    assert "reindex" in (err.value.hint or "") and err.value.exit_code == 7


REFRESHER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engram.index.catalog import Index
    from engram.index.settings import IndexSettings
    root, db, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    index = Index(root, db, IndexSettings())
    for _ in range(rounds):
        index.ensure_fresh("walk")
        index.query("SELECT count(*) FROM items_fts WHERE items_fts MATCH 'otter'")
    index.close()
    """
)


def test_processes_refreshing_one_database_while_files_change_agree_at_the_end(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    db = tmp_path / "shared.sqlite"
    Index(root, db, IndexSettings()).refresh()
    procs = [
        subprocess.Popen([sys.executable, "-c", REFRESHER, str(root), str(db), "40"], env=dict(os.environ),
                         stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    try:
        for n in range(60):
            folder = root / f"f{n % 4}"
            folder.mkdir(exist_ok=True)
            (folder / f"n{n}.md").write_text(f"otter number {n}\n")
            if n % 5 == 4:
                (root / f"f{(n - 2) % 4}" / f"n{n - 2}.md").unlink()
    finally:
        errors = []
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            errors.append((proc.returncode, err))
    assert all(code == 0 for code, _ in errors), errors
    shared = Index(root, db, IndexSettings())
    reference = Index(root, tmp_path / "reference.sqlite", IndexSettings())
    try:
        shared.refresh()
        reference.rebuild()
        query = "SELECT path, id, body FROM items ORDER BY path"
        assert [tuple(r) for r in shared.query(query)] == [tuple(r) for r in reference.query(query)]
        assert shared.query("SELECT n FROM tally WHERE key = 'items'")[0]["n"] == 48
    finally:
        shared.close()
        reference.close()
