"""Links survive the team's git traffic (issue 26): a plain ``git pull`` through the hooks
never takes a live edge for one to a deleted item, and when a merge undoes a delete,
the item's edges come back as the merge of every side's versions, never an older copy.
Real git throughout: a bare origin and clones."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, first_machine, git


def hooked_clone(tmp: Path, origin: Path, name: str) -> Path:
    """A clone set up the documented way without ``engram init``: ``git clone``, then
    ``engram merge-driver install`` and ``engram hooks install``. No index is built."""
    git(tmp, "clone", "--quiet", str(origin), name)
    root = tmp / name
    runner = CliRunner()
    for group in ("merge-driver", "hooks"):
        out = runner.invoke(cli, ["--vault", str(root), group, "install"])
        assert out.exit_code == 0, out.output
    assert not (root / ".engram" / "index.sqlite").exists()
    return root


def evidence_at(repo: Path, ref: str, rel: str) -> list[str]:
    data = git(repo, "show", f"{ref}:{rel}").stdout.encode()
    return [str(e["description"]) for e in codec.parse_synapse(data)["evidence"]]


def trashed(root: Path) -> list[str]:
    trash = root / ".engram" / "trash"
    return sorted(p.name for p in trash.rglob("*") if p.is_file()) if trash.exists() else []


def test_a_plain_pull_on_a_clone_without_an_index_keeps_a_changed_link(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    x = alice.create("Item X", "x body\n", domain=["team"]).item
    y = alice.create("Item Y", "y body\n", domain=["team"]).item
    edge = alice.link(x.id, "extends", y.id, evidence="E-seed")
    alice.sync()
    bob = hooked_clone(tmp_path, origin, "bob")
    alice.link(x.id, "extends", y.id, evidence="E-more")  # alice adds evidence
    alice.sync()
    rel = alice.state.index.synapse_paths(edge.id)[0]
    proc = git(bob, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    said = proc.stdout + proc.stderr
    assert "moved to the trash" not in said
    assert (bob / rel).is_file() and trashed(bob) == []
    assert git(bob, "status", "--porcelain").stdout == ""
    with Vault.open(bob, actor="bob") as vault:
        vault.sync()
    assert evidence_at(origin, "main", rel) == ["E-seed", "E-more"]



def test_a_pull_keeps_a_link_to_an_item_a_stale_index_does_not_know(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    x = alice.create("Item X", "x body\n").item
    alice.sync()
    bob = hooked_clone(tmp_path, origin, "bob")
    with Vault.open(bob, actor="bob") as vault:
        vault.refresh()  # bob's index is built now …
    z = alice.create("Item Z", "z body\n").item
    edge = alice.link(x.id, "causes", z.id, evidence="E-seed")
    alice.sync()
    # … and goes stale: this pull runs no hook, so nothing tells the index about Z.
    git(bob, "-c", f"core.hooksPath={tmp_path / 'no-hooks'}", "pull", "--quiet", "--no-rebase", "origin", "main")
    alice.link(x.id, "causes", z.id, evidence="E-more")  # only the edge file changes
    alice.sync()
    rel = alice.state.index.synapse_paths(edge.id)[0]
    proc = git(bob, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    assert "moved to the trash" not in proc.stdout + proc.stderr
    assert (bob / rel).is_file() and trashed(bob) == []
    with Vault.open(bob, actor="bob") as vault:
        vault.sync()
    assert evidence_at(origin, "main", rel) == ["E-seed", "E-more"]
