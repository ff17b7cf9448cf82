"""engram init lays down the template, git and the merge driver, idempotently."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.team.gitstore import merge_driver_status
from engram.team.template import template_files
from engram.vault import Vault
from tests.conftest import ROOT


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def test_init_creates_a_git_repo_with_the_template(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "memory")
    root = vault.root
    for rel in (".gitattributes", ".gitignore", "README.md", "engram.yaml", ".obsidian/app.json"):
        assert (root / rel).is_file(), rel
    assert (root / ".engram").is_dir()
    assert git(root, "rev-parse", "--is-inside-work-tree").strip() == "true"
    assert git(root, "check-ignore", ".engram/index.sqlite", "private/x.md").split() == [
        ".engram/index.sqlite", "private/x.md",
    ]
    assert git(root, "check-attr", "merge", "ops/a.md", "synapses/extends/syn-1.yaml").splitlines() == [
        "ops/a.md: merge: engram", "synapses/extends/syn-1.yaml: merge: engram",
    ]
    status = merge_driver_status(root)
    assert status.current and status.routed and "-m mergedriver %O %A %B %L %P" in (status.command or "")


def test_adoption_lays_no_obsidian_settings_a_new_vault_gets_them(tmp_path: Path) -> None:
    """A folder of Markdown notes with no .obsidian/ is being adopted: settings laid there
    would turn off link updates on rename and make new links relative for the person
    who opens it in Obsidian later (issue 28). A new, empty vault gets them."""
    notes = tmp_path / "notes"
    (notes / "ideas").mkdir(parents=True)
    (notes / "ideas" / "Alpha.md").write_text("# Alpha\nSee [[Beta]].\n")
    Vault.init(notes).close()
    assert not (notes / ".obsidian").exists()
    assert sorted(p.name for p in notes.iterdir()) == [
        ".engram", ".git", ".gitattributes", ".gitignore", "engram.yaml", "ideas",
    ]
    Vault.init(notes).close()  # and not on a second run either
    assert not (notes / ".obsidian").exists()
    fresh = tmp_path / "fresh"
    Vault.init(fresh).close()
    assert (fresh / ".obsidian" / "app.json").is_file()


def test_init_is_idempotent_and_never_clobbers(tmp_path: Path) -> None:
    root = tmp_path / "existing"
    root.mkdir()
    (root / "README.md").write_text("# Our own readme\n")
    (root / ".gitignore").write_text("node_modules/\n")
    Vault.init(root)
    assert (root / "README.md").read_text() == "# Our own readme\n"
    # The user's .gitignore is theirs; engram's state ignores itself from inside.
    assert (root / ".gitignore").read_text() == "node_modules/\n"
    assert git(root, "check-ignore", ".engram/index.sqlite").split() == [".engram/index.sqlite"]
    with Vault.open(root) as vault:
        vault.create("Kept local", "only here", visibility="private")
    assert git(root, "check-ignore", "private/kept-local.md").split() == ["private/kept-local.md"]
    snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}
    Vault.init(root)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts} == snapshot


def test_init_inside_an_existing_repo_does_not_nest_one(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    Vault.init(tmp_path / "team" / "memory")
    assert not (tmp_path / "team" / "memory" / ".git").exists()


def test_init_on_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    with pytest.raises(InvalidInput, match="is a file"):
        Vault.init(target)


def test_template_ships_in_the_wheel(tmp_path: Path) -> None:
    """A regular (non-editable) install must find vault_template, dotfiles included."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("engram_team_memory-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in template_files():
        assert f"vault_template/{rel}" in names, rel
    assert "mergedriver/codec.py" in names and "engram/cli/__init__.py" in names
    # the viewer's templates and vendored front end, licences included
    viewer = ROOT / "engram" / "viewer"
    for path in [*viewer.glob("templates/*"), *viewer.glob("static/*")]:
        assert path.relative_to(ROOT).as_posix() in names, path.name
    # the semantic extra names the package whose wheel carries the model (docs/recall.md)
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: semantic" in requires
    assert re.search(r"^Requires-Dist: wordllama>=0\.4; extra == \"semantic\"$", requires, re.MULTILINE), requires


def test_a_vault_in_a_folder_another_repository_ignores_gets_its_own(tmp_path: Path) -> None:
    """./engram-demo inside a checkout that ignores it: a vault there could never be
    committed or synced, so it gets a repository of its own; a tracked subfolder shares."""
    outer = tmp_path / "checkout"
    outer.mkdir()
    git(outer, "init", "-q")
    (outer / ".gitignore").write_text("engram-demo/\n")
    with Vault.init(outer / "engram-demo") as demo:
        assert git(demo.root, "rev-parse", "--show-toplevel").strip() == str(demo.root)
        demo.create("Kept in its own history", "x")
        assert demo.sync().committed > 0
        assert "Kept" not in git(outer, "status", "--porcelain", "--ignored")
    with Vault.init(outer / "team-memory") as shared:
        assert git(shared.root, "rev-parse", "--show-toplevel").strip() == str(outer.resolve())
        assert not (shared.root / ".git").exists()


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo"])
def test_init_never_reads_a_gitattributes_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """Reading /dev/zero or a FIFO would hang init; it is a clear error and nothing is laid down."""
    import os

    from engram.errors import UnsafeFile

    root = tmp_path / "notes"
    root.mkdir()
    attributes = root / ".gitattributes"
    if kind == "fifo":
        os.mkfifo(attributes)
    else:
        attributes.symlink_to("/dev/zero")
    with pytest.raises(UnsafeFile, match=r"\.gitattributes"):
        Vault.init(root)
    assert attributes.is_symlink() or attributes.is_fifo()  # left as it was
    assert not (root / ".git").exists()
