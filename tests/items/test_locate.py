"""Which folder --vault PATH opens: a vault above a file, never a file's bare folder."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.vault import Vault


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


def test_a_file_inside_a_vault_opens_that_vault(vault: Vault) -> None:
    item = vault.create("Inside", "x", domain=["ops"]).item
    note = vault.abspath(vault.get(item.id).path or "")
    assert Vault.open(note).root == vault.root


def test_a_file_outside_any_vault_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.txt").write_text("shopping list\n")
    before = _tree(folder)
    out = CliRunner().invoke(cli, ["--vault", str(folder / "notes.txt"), "list"])
    assert out.exit_code != 0 and "is a file, and no engram vault is at or above it" in out.output
    assert "engram init" in out.output and "Traceback" not in out.output
    assert _tree(folder) == before  # no .engram/ laid into someone's folder
    # A folder given explicitly still opens as it is (a Co-Engram repository, say).
    assert Vault.open(folder).root == folder.resolve()


def test_tilde_is_expanded_in_every_path_a_person_gives(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """README's `Vault.open("~/team-memory")`, `--vault ~/…` and ENGRAM_VAULT=~/… (quoted,
    so no shell expands it) all name the folder under HOME."""
    monkeypatch.setenv("HOME", str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # where an unexpanded "~" would be made
    made = Vault.init("~/team-memory")
    assert made.root == (tmp_path / "team-memory").resolve()
    made.close()
    opened = Vault.open("~/team-memory")
    assert opened.root == made.root
    opened.close()
    out = CliRunner().invoke(cli, ["--vault", "~/team-memory", "list"])
    assert out.exit_code == 0, out.output
    out = CliRunner().invoke(cli, ["list"], env={"ENGRAM_VAULT": "~/team-memory"})
    assert out.exit_code == 0, out.output
    assert list(elsewhere.iterdir()) == []
