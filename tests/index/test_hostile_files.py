"""One hostile file never stops a vault: it is skipped by every read and named by doctor.

Symlinks (to ``/dev/zero``, to an item outside the vault, to another file inside it),
FIFOs, symlinked folders, oversize and binary files, and YAML alias bombs, found by the
full walk and by the incremental refresh alike (``find -cnewer`` in a one-shot process,
the watcher in a long-lived one). Every command must answer: each test would hang or die
with MemoryError without the bounds, so none needs a timing assertion.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engram.errors import FileTooLarge, InvalidInput, UnsafeFile
from engram.store.format import read_bytes
from engram.vault import Vault
from mergedriver import codec
from tests.hostile_helpers import bomb_item, bomb_synapse, nested_item

OUTSIDE_ID = "01UTS1DE000000000000000000"


def problems(vault: Vault) -> dict[str, str]:
    return {p.path: p.code for p in vault.doctor().problems}


def outside_item(tmp_path: Path) -> Path:
    """A valid item file outside the vault, with a word nothing in the vault has."""
    path = tmp_path / "outside.md"
    path.write_bytes(codec.render_engram({"id": OUTSIDE_ID, "title": "Outside secret"}, "zanzibar\n"))
    return path


def plant(vault: Vault, tmp_path: Path) -> dict[str, str]:
    """Every kind of hostile file; returns the doctor code each must get."""
    root = vault.root
    (root / "n").mkdir(exist_ok=True)
    os.symlink("/dev/zero", root / "n/zero.md")
    os.symlink(outside_item(tmp_path), root / "n/outside.md")
    kept = vault.create("Kept", "kept body", domain=["n"]).item
    assert kept.path is not None
    os.symlink(Path(kept.path).name, root / "n/alias-of-kept.md")  # a link inside the vault
    os.mkfifo(root / "n/pipe.md")
    (root / "n/bomb.md").write_bytes(bomb_item())
    (root / "synapses/extends").mkdir(parents=True, exist_ok=True)
    (root / "synapses/extends/syn-0000000000000000.yaml").write_bytes(bomb_synapse())
    (root / "n/deep.md").write_bytes(nested_item(500))
    with open(root / "n/huge.md", "wb") as fh:  # 50 MB, sparse: costs no disk
        fh.truncate(50 * 1024 * 1024)
    (root / "n/binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(64))
    os.symlink(root / "n", root / "linked-folder")
    return {
        "n/zero.md": "unsafe-file",
        "n/outside.md": "unsafe-file",
        "n/alias-of-kept.md": "unsafe-file",
        "n/pipe.md": "unsafe-file",
        "n/bomb.md": "unparseable",
        "synapses/extends/syn-0000000000000000.yaml": "unparseable",
        "n/deep.md": "unparseable",
        "n/huge.md": "oversize-file",
        "n/binary.md": "binary-file",
        "linked-folder": "unsafe-file",
    }


def assert_served_safely(vault: Vault, expected: dict[str, str]) -> None:
    assert [i.title for i in vault.list()] == ["Kept"]
    assert [h.title for h in vault.search("kept body", record=False).hits] == ["Kept"]
    assert vault.search("zanzibar", record=False, min_relevance=0.0).hits == ()
    assert vault.get("Kept").content == "kept body\n"
    found = problems(vault)
    assert {path: found.get(path) for path in expected} == expected
    broken = dict(vault.broken_files())
    assert "YAML aliases (*name) are not allowed" in broken["n/bomb.md"]
    assert "nested more than 64 levels deep" in broken["n/deep.md"]
    assert broken["n/zero.md"] == "is a symbolic link, not a regular file; engram does not follow or read it"
    assert broken["n/huge.md"].startswith("the file is 52,428,800 bytes; engram reads at most 4,194,304")


def test_a_cold_index_skips_and_reports_every_hostile_file(vault: Vault, tmp_path: Path) -> None:
    expected = plant(vault, tmp_path)
    vault.reindex()
    assert_served_safely(vault, expected)


def test_the_incremental_refresh_never_follows_a_link_either(vault: Vault, tmp_path: Path) -> None:
    vault.create("Before", "indexed first", domain=["a"])
    assert len(vault.list()) == 1  # the index exists: the next reads refresh incrementally
    expected = plant(vault, tmp_path)
    vault.delete("Before")
    assert_served_safely(vault, expected)
    reopened = Vault.open(vault.root)  # a one-shot process: `find -cnewer`, then paths
    try:
        assert_served_safely(reopened, expected)
    finally:
        reopened.close()


def test_the_watcher_path_never_follows_a_link(vault: Vault, tmp_path: Path) -> None:
    vault.create("Before", "indexed first", domain=["a"])
    for _ in range(3):  # a long-lived process: the watcher reports the new paths
        vault.list()
    expected = plant(vault, tmp_path)
    vault.delete("Before")
    assert_served_safely(vault, expected)


def test_a_link_replaced_by_the_real_file_is_indexed_again(vault: Vault, tmp_path: Path) -> None:
    vault.create("Before", "x", domain=["a"])
    vault.list()
    link = vault.root / "a/outside.md"
    os.symlink(outside_item(tmp_path), link)
    assert problems(vault) == {"a/outside.md": "unsafe-file"}
    data = (tmp_path / "outside.md").read_bytes()
    link.unlink()
    link.write_bytes(data)
    assert [h.title for h in vault.search("zanzibar", record=False).hits] == ["Outside secret"]
    # A real file where the link was is an ordinary item now; where a person put it is theirs.
    assert problems(vault) == {}


def test_reads_by_path_refuse_links(vault: Vault, tmp_path: Path) -> None:
    kept = vault.create("Kept", "k", domain=["n"]).item
    os.symlink("/dev/zero", vault.root / "n/zero.md")
    (vault.root / "real").mkdir()
    os.symlink(vault.root / "real", vault.root / "n/sub")
    with pytest.raises(InvalidInput, match="resolves outside the vault"):
        vault.get("n/zero.md")
    with pytest.raises(InvalidInput, match="goes through a symbolic link"):
        vault.get("n/sub/x.md")
    with pytest.raises(UnsafeFile, match="is a symbolic link"):
        read_bytes(vault.root / "n/zero.md", "n/zero.md")
    with pytest.raises(FileTooLarge, match="engram reads at most 10"):
        read_bytes(vault.root / str(kept.path), str(kept.path), limit=10)


def test_nesting_the_parser_accepts_but_python_could_not_walk_is_refused(vault: Vault) -> None:
    # libyaml stops at 1,000 levels; recursive walks of a result 990 deep would not.
    (vault.root / "deep.md").write_bytes(nested_item(990))
    (vault.root / "ok.md").write_bytes(nested_item(3, item_id="01DEEP000000000000000000BB"))
    assert [i.id for i in vault.list()] == ["01DEEP000000000000000000BB"]
    assert problems(vault)["deep.md"] == "unparseable"
