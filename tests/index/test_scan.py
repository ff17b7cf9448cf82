"""One-shot processes re-check only what changed since the last scan, and miss nothing.

Each case edits the vault the way a person or a tool would, then opens the vault afresh
(a new process has no watcher: its first read scans with ``find -cnewer``) and checks
that the index holds exactly what is on disk.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from engram.index.watcher import changed_since
from engram.vault import Vault


def fresh(vault: Vault) -> Vault:
    """The same vault as a new process would open it."""
    vault.close()
    return Vault.open(vault.root)


def titles(vault: Vault) -> set[str]:
    return {i.title for i in vault.list()}


@pytest.fixture
def seeded(vault: Vault) -> Vault:
    vault.create("Alpha note", "alpha body", domain=["a"])
    vault.create("Beta note", "beta body", domain=["b", "deep"])
    vault.refresh()  # records the scan mark
    assert vault.state.index._scan_mark() is not None
    return vault


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(seeded: Vault) -> None:
    path = seeded.root / "a/alpha-note.md"
    st = path.stat()
    path.write_text(path.read_text().replace("alpha body", "ALPHA BODY"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as cp -p / rsync -t leave it
    assert path.stat().st_size == st.st_size
    assert fresh(seeded).get("Alpha note").content == "ALPHA BODY\n"


def test_new_deleted_and_renamed_files(seeded: Vault) -> None:
    root = seeded.root
    (root / "b/deep/beta-note.md").unlink()
    item = seeded.create("Gamma note", "gamma body", domain=["a"]).item
    assert item.path is not None
    (root / "a/gamma-note.md").rename(root / "a/renamed-gamma.md")
    vault = fresh(seeded)
    assert titles(vault) == {"Alpha note", "Gamma note"}
    assert vault.get("Gamma note").path == "a/renamed-gamma.md"


def test_a_folder_moved_in_from_outside_is_indexed(seeded: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    other = Vault.init(outside)
    other.create("Imported note", "came with a folder", domain=["imports", "old"])
    other.close()
    os.utime(outside / "imports/old/imported-note.md", ns=(0, 0))  # an old file
    shutil.move(str(outside / "imports"), str(seeded.root / "imports"))
    assert "Imported note" in titles(fresh(seeded))


def test_a_folder_renamed_or_removed_inside_the_vault(seeded: Vault) -> None:
    root = seeded.root
    (root / "b").rename(root / "c")
    vault = fresh(seeded)
    assert vault.get("Beta note").path == "c/deep/beta-note.md"
    shutil.rmtree(root / "c")
    assert titles(fresh(vault)) == {"Alpha note"}


def test_changed_since_reports_only_recent_changes(seeded: Vault) -> None:
    mark = seeded.state.index._scan_mark()
    assert mark is not None
    later = changed_since(seeded.root, mark + 10**12)  # far in the future: nothing newer
    assert later is not None and not later.files and not later.dirs
    earlier = changed_since(seeded.root, 0)
    assert earlier is not None and "a/alpha-note.md" in earlier.files and "a" in earlier.dirs


def test_a_second_scan_rechecks_only_what_changed(seeded: Vault) -> None:
    for n in range(30):
        seeded.create(f"Filler {n}", f"filler body number {n}", domain=["fill"])
    full = fresh(seeded).state.index._refresh_walk()
    assert full.scanned == 32  # 32 items (the vault README is ignored: engram.yaml)
    vault = fresh(seeded)
    # Files written in the last seconds are inside the safety margin and re-checked;
    # move the mark to now, as if the last scan had happened well after them.
    with vault.state.index.transaction() as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'scanned'", (str(time.time_ns()),))
    (vault.root / "a/alpha-note.md").write_text((vault.root / "a/alpha-note.md").read_text() + "more\n")
    stats = vault.refresh()
    assert stats.changed == 1 and stats.scanned < 5


def test_a_save_by_rename_rechecks_that_note_not_its_whole_folder(seeded: Vault) -> None:
    """Editors and engram save by renaming a temporary file over the note, which changes
    the folder: the folder is re-listed, but only the note is re-checked (at a million
    items a pull's refresh re-checked every note of every folder it touched)."""
    made = [seeded.create(f"Filler {n}", f"filler body number {n}", domain=["fill"]).item for n in range(30)]
    paths = [str(item.path) for item in made]
    vault = fresh(seeded)
    with vault.state.index.transaction() as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'scanned'", (str(time.time_ns()),))
    note = vault.root / paths[3]
    temp = note.with_name(f".{note.name}.tmp")
    temp.write_text(note.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
    os.replace(temp, note)
    stats = vault.refresh()
    assert stats.changed == 1 and stats.scanned < 5
    assert vault.get(made[3].id).content.endswith("more\n")
    # A note renamed over another and one removed, in the same folder: the index holds
    # what the folder holds.
    os.replace(vault.root / paths[4], vault.root / paths[5])
    (vault.root / paths[6]).unlink()
    again = fresh(vault)
    again.refresh()
    assert sorted(str(i.path) for i in again.list(domain="fill")) == sorted(
        f"fill/{p.name}" for p in (again.root / "fill").glob("*.md")
    )
    assert "Filler 5" not in titles(again) and "Filler 6" not in titles(again)
    assert {i.path for i in again.list(domain="fill") if i.title == "Filler 4"} == {paths[5]}
