"""``.engram/`` and ``private/`` hold one machine's files and never reach the shared remote
(issue 28): not from a teammate's clone of a folder that kept its own ``.gitignore``, not
through sync's staging, not through a plain ``git commit``; doctor finds what an older
engram committed; and a sync that pulls a peer's ``.engram/`` never lets it touch this
machine's index, journal, audit log or trash.

Real clones of a bare origin throughout; the leak itself is reproduced with the CLI,
exactly as the issue did.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.git_helpers import git
from tests.mcp_helpers import engram_command


def engram(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(engram_command(*args), cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode in (0, 1), f"engram {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def tree(root: Path, rev: str = "HEAD") -> list[str]:
    return git(root, "ls-tree", "-r", "--name-only", rev).stdout.split()


def local_state(paths: list[str]) -> list[str]:
    return [p for p in paths if p.startswith((".engram/", "private/"))]


def local_files(root: Path) -> dict[str, bytes]:
    """This machine's state that must survive any sync: audit log and trash, byte for byte."""
    state = root / ".engram"
    files = [state / "audit.jsonl", *sorted((state / "trash").rglob("*"))]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files if p.is_file()}


@pytest.fixture
def adopted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The issue's reproduction: a folder of notes with its own ``.gitignore``, adopted
    with ``engram init``, published to a bare origin, and a teammate's plain clone.
    Returns (the owner's folder, the origin, the clone)."""
    notes = tmp_path / "R" / "notes"
    notes.mkdir(parents=True)
    git(notes, "init", "-q", "--initial-branch=main")
    (notes / ".gitignore").write_text(".DS_Store\n")
    (notes / "Alpha.md").write_text("# Alpha\nSee [[Beta]].\n")
    (notes / "Beta.md").write_text("# Beta\nText.\n")
    git(notes, "add", "-A")
    git(notes, "commit", "-qm", "notes")
    engram(notes, "init")
    git(notes.parent, "init", "-q", "--bare", "--initial-branch=main", "origin.git")
    origin = notes.parent / "origin.git"
    engram(notes, "remote", "add", "../origin.git")
    git(notes.parent, "clone", "-q", "origin.git", "clone")
    return notes, origin, notes.parent / "clone"


def leak(root: Path, message: str = "an older engram committed its state") -> None:
    """What engram before issue 28 did in such a clone: commit ``.engram/`` and push it."""
    git(root, "add", "-f", ".engram")
    git(root, "commit", "-q", "--no-verify", "-m", message)
    git(root, "push", "-q", "origin", "HEAD:main")


# ---------------------------------------------------------------------- the leak


def test_a_clone_of_an_adopted_folder_never_publishes_its_state(adopted: tuple[Path, Path, Path]) -> None:
    _, origin, clone = adopted
    engram(clone, "list")
    assert git(clone, "status", "--short").stdout == ""  # the first command made .engram/ ignore itself
    assert "*" in (clone / ".engram" / ".gitignore").read_text().split()
    engram(clone, "sync")
    assert git(clone, "ls-files", ".engram").stdout == ""
    added = engram(clone, "add", "Gamma", "--body", "A note written in the clone.")
    assert added.returncode == 0
    engram(clone, "delete", "Alpha", "--yes")
    assert list((clone / ".engram" / "trash").iterdir())  # the deleted note is kept here …
    engram(clone, "sync")
    published = tree(origin, "main")
    assert "gamma.md" in published and "Alpha.md" not in published
    assert local_state(published) == []  # … and never published
    assert git(origin, "log", "--all", "--format=%H", "--", ".engram").stdout == ""


# ---------------------------------------------------------------------- staging


def test_sync_stages_nothing_under_engram_or_private_whatever_gitignore_says(
    adopted: tuple[Path, Path, Path],
) -> None:
    _, origin, clone = adopted
    with Vault.open(clone, actor="bob") as bob:
        bob.create("Written in the clone", "text")
        # Nothing ignores them any more: no marker, no line in the person's .gitignore.
        (clone / ".engram" / ".gitignore").unlink(missing_ok=True)
        (clone / "private").mkdir()
        (clone / "private" / "mine.md").write_text("# Mine\nOnly on this machine.\n")
        assert git(clone, "status", "--short", "--untracked-files=all").stdout.count("?? .engram/") > 1
        report = bob.sync()
    assert report.pushed
    assert local_state(tree(clone)) == [] and local_state(tree(origin, "main")) == []
    assert "written-in-the-clone.md" in tree(origin, "main")


def test_sync_takes_state_an_older_engram_committed_off_the_branch_and_keeps_the_files(
    adopted: tuple[Path, Path, Path],
) -> None:
    _, origin, clone = adopted
    with Vault.open(clone, actor="bob") as bob:
        gone = bob.create("Soon deleted", "text").item
        bob.sync()
        bob.delete(gone.id)
        leak(clone)
        assert local_state(tree(origin, "main"))
        before = local_files(clone)
        assert any("/trash/" in path for path in before)
        bob.create("After the upgrade", "text")
        assert bob.sync().pushed
    assert local_state(tree(clone)) == [] and local_state(tree(origin, "main")) == []
    after = local_files(clone)
    assert {path: after.get(path, b"")[: len(data)] for path, data in before.items()} == before
    assert git(clone, "status", "--short").stdout == ""


# ---------------------------------------------------------------------- pre-commit hook


@pytest.mark.parametrize("folder", [".engram", "private"])
def test_the_pre_commit_hook_refuses_a_commit_of_machine_state(adopted: tuple[Path, Path, Path], folder: str) -> None:
    notes, _, _ = adopted
    with Vault.open(notes) as owner:
        owner.create("A private thought", "mine", visibility="private")
        owner.create("A shared thought", "ours")
    head = git(notes, "rev-parse", "HEAD").stdout
    git(notes, "add", "-f", folder)
    proc = git(notes, "commit", "-m", "by hand", check=False)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert f"{folder}/" in proc.stderr and "git rm -r --cached" in proc.stderr
    assert git(notes, "rev-parse", "HEAD").stdout == head


# ---------------------------------------------------------------------- doctor


def doctor_codes(root: Path) -> dict[str, str]:
    out = engram(root, "doctor", "--json")
    return {p["code"]: p["message"] for p in json.loads(out.stdout)["problems"]}


def test_doctor_finds_engram_state_in_the_index_and_in_history(adopted: tuple[Path, Path, Path]) -> None:
    _, _, clone = adopted
    engram(clone, "list")
    assert "committed-state" not in doctor_codes(clone)
    leak(clone)
    found = doctor_codes(clone)
    assert "git rm -r --cached .engram" in found["committed-state"]
    git(clone, "rm", "-r", "-q", "--cached", ".engram")
    git(clone, "commit", "-q", "-m", "untrack .engram")
    found = doctor_codes(clone)
    assert "committed-state" not in found
    assert "filter-repo" in found["state-in-history"]


# ---------------------------------------------------------------------- pulling a peer's state


@pytest.mark.parametrize("owner_edits", [False, True], ids=["fast-forward", "merge"])
def test_a_peers_pushed_state_never_touches_this_machines_state(
    adopted: tuple[Path, Path, Path], owner_edits: bool
) -> None:
    notes, origin, clone = adopted
    with Vault.open(notes, actor="alice") as alice:
        dropped = alice.create("Deleted by the owner", "text").item
        alice.sync()
        alice.delete(dropped.id)
        alice.sync()
    with Vault.open(clone, actor="bob") as bob:
        bob.sync()
        bob.delete("Beta")
        bob.create("Peer's note", "text")
        bob.sync()
        leak(clone)  # bob's index, journal, audit log and trash, published
    owners = local_files(notes)
    assert local_state(tree(origin, "main"))
    with Vault.open(notes, actor="alice") as alice:
        if owner_edits:
            alice.create("Owner's new note", "text")
        report = alice.sync()
        assert report.pushed
        assert [r.title for r in alice.list()].count("Peer's note") == 1
    now = local_files(notes)
    assert {path: now.get(path, b"")[: len(data)] for path, data in owners.items()} == owners
    assert not any(path.startswith(".engram/trash/") and path not in owners for path in now)  # not bob's bin
    assert local_state(tree(notes)) == [] and local_state(tree(origin, "main")) == []  # the push healed the remote
    # bob's next sync pulls that heal: his own files stay in place, untracked.
    peers = local_files(clone)
    with Vault.open(clone, actor="bob") as bob:
        bob.sync()
    after = local_files(clone)
    assert {path: after.get(path, b"")[: len(data)] for path, data in peers.items()} == peers
    assert local_state(tree(clone)) == [] and git(clone, "status", "--short").stdout == ""


def private_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "private").rglob("*")) if p.is_file()}


@pytest.mark.parametrize("owner_edits", [False, True], ids=["fast-forward", "merge"])
def test_a_peers_pushed_private_items_never_reach_this_machines_private_scope(
    adopted: tuple[Path, Path, Path], owner_edits: bool
) -> None:
    """A peer's ``private/`` pushed past the hook (``--no-verify``, an older engram) is
    neither checked out over this machine's private items nor added to them, and the
    push that follows takes it off the branch; the peer keeps its files."""
    notes, origin, clone = adopted
    with Vault.open(notes, actor="alice") as alice:
        alice.create("Alice's own diary", "only alice reads this", visibility="private")
        alice.sync()
    (notes / "private" / "plans.md").write_text("# Plans\nAlice's plans, by hand.\n")
    owners = private_files(notes)
    with Vault.open(clone, actor="bob") as bob:
        bob.sync()
        bob.create("Bob's own diary", "only bob reads this", visibility="private")
        (clone / "private" / "plans.md").write_text("# Plans\nBob's plans, by hand.\n")
        bob.create("Bob's shared note", "text")
        bob.sync()
    peers = private_files(clone)
    git(clone, "add", "-f", "private")
    git(clone, "commit", "-q", "--no-verify", "-m", "bob's private items, published")
    git(clone, "push", "-q", "origin", "HEAD:main")
    assert local_state(tree(origin, "main"))
    with Vault.open(notes, actor="alice") as alice:
        if owner_edits:
            alice.create("Owner's new note", "text")
        report = alice.sync()
        assert report.pushed
        titles = [r.title for r in alice.list()]
        assert "Bob's shared note" in titles
        assert "Bob's own diary" not in titles
        assert "Bob's own diary" not in [r.title for r in alice.search("only bob reads this").hits]
    assert private_files(notes) == owners  # nothing of bob's added, nothing of alice's changed
    assert local_state(tree(notes)) == [] and local_state(tree(origin, "main")) == []  # the push healed the remote
    with Vault.open(clone, actor="bob") as bob:
        bob.sync()
        assert "Bob's own diary" in [r.title for r in bob.list()]
    assert private_files(clone) == peers  # bob's files stay where they were, untracked again
    assert local_state(tree(clone)) == [] and git(clone, "status", "--short").stdout == ""
