"""The store's reads are bounded: engram.yaml, vault files, and writes over links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engram.errors import FileTooLarge, InvalidInput, UnsafeFile
from engram.store.fsio import atomic_write, read_regular
from engram.store.paths import resolve_inside
from engram.store.settings import MAX_SETTINGS_BYTES
from engram.vault import Vault
from tests.hostile_helpers import ALIAS_BOMB


def settings_problem(vault: Vault) -> str:
    """What every command that needs a setting answers; doctor still runs and names it."""
    reopened = Vault.open(vault.root)
    try:
        with pytest.raises(InvalidInput) as err:
            reopened.search("anything", record=False)
        with pytest.raises(InvalidInput):
            reopened.create("New", "x")
        # Reads that need no setting go on, and say what is wrong.
        assert [i.title for i in reopened.list()] == ["Kept"] and reopened.get("Kept").title == "Kept"
        assert reopened.broken_files()[0][0] == "engram.yaml"
        (problem,) = [p for p in reopened.doctor().problems if p.code == "bad-settings"]
        assert problem.path == "engram.yaml" and not problem.fixable
        assert problem.message in str(err.value)
        assert str(reopened.root / "engram.yaml") in str(err.value)
        return problem.message
    finally:
        reopened.close()


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda p: p.write_text("recall:\n  freshness: walk\n" + ALIAS_BOMB + "\n"), "engram.yaml is not valid YAML: YAML aliases (*name) are not allowed"),
        (lambda p: os.symlink("/dev/zero", p), "engram.yaml is a symbolic link, not a regular file"),
        (lambda p: os.mkfifo(p), "engram.yaml is a named pipe (FIFO), not a regular file"),
        (lambda p: p.write_bytes(b"# " + b"x" * MAX_SETTINGS_BYTES), f"engram.yaml is larger than {MAX_SETTINGS_BYTES:,} bytes"),
        (lambda p: p.write_bytes(b"recall:\n  weights: caf\xe9\n"), "engram.yaml is not UTF-8 (byte 22 is invalid)"),
        (lambda p: p.write_text("- a\n- list\n"), "engram.yaml must be a mapping of settings"),
    ],
)
def test_a_hostile_settings_file_is_an_error_naming_it_never_a_hang(vault: Vault, plant: object, message: str) -> None:
    vault.create("Kept", "k")
    path = vault.root / "engram.yaml"
    path.unlink()
    plant(path)  # type: ignore[operator]
    assert settings_problem(vault).startswith(message)


def test_read_regular_reads_only_regular_files_up_to_the_limit(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"12345")
    assert read_regular(tmp_path / "f", "f", 5)[1] == b"12345"
    with pytest.raises(FileTooLarge, match="the file is 5 bytes; engram reads at most 4"):
        read_regular(tmp_path / "f", "f", 4)
    os.symlink(tmp_path / "f", tmp_path / "link")
    with pytest.raises(UnsafeFile, match="is a symbolic link"):
        read_regular(tmp_path / "link", "link", 100)
    (tmp_path / "dir").mkdir()
    with pytest.raises(UnsafeFile, match="is a folder"):
        read_regular(tmp_path / "dir", "dir", 100)
    with pytest.raises(UnsafeFile, match="is a device"):
        read_regular("/dev/zero", "zero", 100)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "f" / "under-a-file", "x", 100)


def test_a_write_replaces_a_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"someone else's file")
    link = tmp_path / "item.md"
    os.symlink(target, link)
    assert atomic_write(link, b"new bytes")
    assert not link.is_symlink() and link.read_bytes() == b"new bytes"
    assert target.read_bytes() == b"someone else's file"


def test_paths_through_a_symlink_inside_the_vault_are_refused(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "real").mkdir()
    os.symlink(root / "real", root / "alias")
    assert resolve_inside(root, "real/x.md") == root / "real/x.md"
    with pytest.raises(InvalidInput, match="goes through a symbolic link"):
        resolve_inside(root, "alias/x.md")
    os.symlink("/etc", root / "out")
    with pytest.raises(InvalidInput, match="resolves outside the vault"):
        resolve_inside(root, "out/passwd")
