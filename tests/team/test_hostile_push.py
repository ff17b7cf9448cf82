"""Acceptance: hostile files pushed by a peer never stop the other clone.

A peer commits an alias bomb (an item and a synapse), a symlink to ``/dev/zero`` and a
symlink to a file outside the repository, and pushes (git carries symlinks as links).
On the other clone every command still answers — run as real processes with a generous
timeout (a hang fails the test; no timing is asserted) — and doctor names each file. A
bomb that reaches the merge driver (both sides edited the item) becomes a conflict git
reports, not a driver that runs for minutes. A broken ``engram.yaml`` makes the commands
that need a setting answer with an error naming it; plain reads go on; doctor names it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.git_helpers import bare_origin, clone_machine, commit_all, first_machine, git
from tests.hostile_helpers import ALIAS_BOMB, bomb_item, bomb_synapse
from tests.mcp_helpers import engram_command

TIMEOUT = 60  # seconds: generous; each command normally answers in well under one


def engram(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        engram_command("--vault", str(root), *args), capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    alice.create("Shared runbook", "restart the otter service", domain=["ops"])
    assert alice.sync().pushed
    bob = clone_machine(tmp_path, origin, "bob")
    assert bob.sync().offline is None
    return alice, bob


def push_hostile_files(alice: Vault, tmp_path: Path) -> None:
    root = alice.root
    (root / "ops/bomb.md").write_bytes(bomb_item())
    (root / "synapses/extends").mkdir(parents=True, exist_ok=True)
    (root / "synapses/extends/syn-0000000000000000.yaml").write_bytes(bomb_synapse())
    os.symlink("/dev/zero", root / "ops/zero.md")
    os.symlink("/etc/hostname", root / "ops/host.md")
    commit_all(alice, "hostile files")  # git itself: sync may refuse some of them
    git(root, "push", "--quiet", "origin", "HEAD:main")


EXPECTED = {
    "ops/bomb.md": "unparseable",
    "synapses/extends/syn-0000000000000000.yaml": "unparseable",
    "ops/zero.md": "unsafe-file",
    "ops/host.md": "unsafe-file",
}


def test_every_command_answers_and_doctor_names_each_file(pair: tuple[Vault, Vault], tmp_path: Path) -> None:
    alice, bob = pair
    push_hostile_files(alice, tmp_path)
    bob.close()
    synced = engram(bob.root, "sync")
    assert synced.returncode == 0, synced.stderr
    assert os.path.islink(bob.root / "ops/zero.md")  # it did arrive

    listed = engram(bob.root, "list")
    assert listed.returncode == 0 and "ops/shared-runbook.md" in listed.stdout, listed.stderr
    assert "4 file(s) could not be read; run `engram doctor`." in listed.stderr
    found = engram(bob.root, "search", "otter")
    assert found.returncode == 0 and "Shared runbook" in found.stdout
    got = engram(bob.root, "get", "Shared runbook")
    assert got.returncode == 0 and "restart the otter service" in got.stdout
    assert engram(bob.root, "get", "ops/zero.md").returncode == 2  # refused, not read
    doctor = engram(bob.root, "doctor", "--json")
    assert doctor.returncode == 1
    problems = {p["path"]: p["code"] for p in json.loads(doctor.stdout)["problems"]}
    assert {path: problems.get(path) for path in EXPECTED} == EXPECTED
    assert engram(bob.root, "reindex").returncode == 0
    added = engram(bob.root, "add", "After the push", "-d", "ops", "--body", "still writable")
    assert added.returncode == 0, added.stderr
    again = engram(bob.root, "sync")
    assert again.returncode == 0, again.stderr


def test_a_bomb_through_the_merge_driver_is_a_conflict_not_a_hang(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.get("Shared runbook")
    assert item.path is not None
    bomb = (alice.root / item.path).read_bytes().replace(b"\n---\n", f"\n{ALIAS_BOMB}\n---\n".encode(), 1)
    (alice.root / item.path).write_bytes(bomb)
    commit_all(alice, "bomb in a shared item")
    git(alice.root, "push", "--quiet", "origin", "HEAD:main")
    bob.update("Shared runbook", {"summary": "bob's edit"})
    commit_all(bob, "bob edits")
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "--quiet", "origin", "main"], cwd=bob.root,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert pulled.returncode != 0  # git stops on the conflict: no side was dropped
    assert "YAML aliases (*name) are not allowed" in pulled.stderr
    merged = (bob.root / item.path).read_bytes()
    assert b"bob's edit" in merged and b"*l8" in merged
    git(bob.root, "merge", "--abort")


def test_a_broken_settings_file_is_named_and_reads_go_on(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    with open(alice.root / "engram.yaml", "a", encoding="utf-8") as fh:
        fh.write("\n" + ALIAS_BOMB + "\n")
    commit_all(alice, "bomb in the settings")
    git(alice.root, "push", "--quiet", "origin", "HEAD:main")
    git(bob.root, "pull", "--quiet", "--no-rebase", "origin", "main")
    listed = engram(bob.root, "list")  # needs no setting: answers, and says what is wrong
    assert listed.returncode == 0 and "ops/shared-runbook.md" in listed.stdout
    assert "1 file(s) could not be read; run `engram doctor`." in listed.stderr
    assert engram(bob.root, "get", "Shared runbook").returncode == 0
    for args in (["search", "otter"], ["add", "x", "--body", "y"]):
        proc = engram(bob.root, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("error: engram.yaml is not valid YAML: YAML aliases (*name) are not allowed"), (
            args, proc.stderr)
    assert engram(bob.root, "reindex").returncode == 0  # needs no setting
    doctor = engram(bob.root, "doctor")
    assert doctor.returncode == 1
    assert doctor.stdout.startswith("bad-settings       engram.yaml: engram.yaml is not valid YAML"), doctor.stdout
