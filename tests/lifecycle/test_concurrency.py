"""Concurrent learners: on one machine (eight processes, one lock) and across machines
(two clones that learned contradictory lessons offline, then synced both ways)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.conftest import ROOT
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, tracked

WORKER = """
import sys, time
from pathlib import Path
from engram.vault import Vault
root, n, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
while time.time() < start:
    time.sleep(0.005)
with Vault.open(root, actor="build-team") as vault:
    lesson = "The build server runs at most %d parallel jobs." % (n % 6 + 1)
    result = vault.learn(lesson)
    print(result.action, result.item.id if result.item else "")
"""


def topic(vault: Vault) -> list[object]:
    return [i for i in vault.list(include_hidden=True) if "parallel jobs" in i.content]


@pytest.mark.slow
def test_eight_processes_learning_conflicting_lessons_leave_one_active_item(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", actor="build-team")
    vault.learn("The build server runs at most 4 parallel jobs.")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.time() + 2.0
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(vault.root), str(n), str(start)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for n in range(8)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]
    actions = [out.split()[0] for out, _ in outputs]
    assert set(actions) <= {"superseded", "reinforced"}, actions
    items = topic(vault)
    active = [i for i in items if i.status == "active"]  # type: ignore[attr-defined]
    assert len(active) == 1
    for item in items:
        if item is not active[0]:
            assert item.status == "superseded" and item.superseded_by  # type: ignore[attr-defined]
    # None lost: every lesson's number is in some item's text, and the audit log has a
    # learn entry for each of the nine calls with its verdict.
    for n in range(8):
        assert any(f"at most {n % 6 + 1} parallel" in i.content for i in items)  # type: ignore[attr-defined]
    learned = [e for e in vault.state.audit.entries() if e.action == "learn"]
    assert len(learned) == 9 and all(e.note and "decided_by=offline" in e.note for e in learned)
    # The chain is one line: every superseded item's successor is on the topic.
    ids = {i.id for i in items}  # type: ignore[attr-defined]
    assert all(i.superseded_by in ids for i in items if i.status == "superseded")  # type: ignore[attr-defined]
    assert vault.lineage(active[0].id).ancestors  # type: ignore[attr-defined]
    vault.close()


def test_two_clones_learning_contradictory_lessons_converge_on_one_current_item(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    alice.state.actor = "team-bot"
    seed = alice.learn("The staging database listens on port 5432.", domain="ops").item
    assert seed is not None
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    bob.state.actor = "team-bot"
    # Offline, each corrects the port differently; bob's lesson is the later one.
    first = alice.learn("The staging database now listens on port 6432.")
    time.sleep(0.01)
    second = bob.learn("The staging database now listens on port 7432.")
    assert first.action == second.action == "superseded"
    for vault in (alice, bob, alice, bob):
        vault.sync()
    assert tracked(alice.root) == tracked(bob.root)
    assert clean(alice.root) and clean(bob.root)
    for vault in (alice, bob):
        vault.refresh()
        on_topic = [i for i in vault.list(include_hidden=True) if "staging database" in i.content]
        active = [i for i in on_topic if i.status == "active"]
        assert [i.id for i in active] == [second.item.id]  # type: ignore[union-attr]
        assert vault.get(first.item.id).superseded_by == second.item.id  # type: ignore[union-attr]
        assert vault.get(seed.id).status == "superseded"
        assert not vault.conflicts()
    alice.close()
    bob.close()


def test_two_clones_with_new_contradictory_lessons_settle_the_same_way(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    bob = clone_machine(tmp_path, origin, "bob")
    for vault in (alice, bob):
        vault.state.actor = "team-bot"
    older = alice.learn("The nightly backups start at 02:00 UTC.", domain="ops")
    time.sleep(0.01)
    newer = bob.learn("The nightly backups start at 04:00 UTC.", domain="ops")
    assert older.action == newer.action == "inserted"
    for vault in (alice, bob, alice, bob):
        vault.sync()
    assert tracked(alice.root) == tracked(bob.root)
    for vault in (alice, bob):
        vault.refresh()
        active = [i.id for i in vault.list() if "nightly backups" in i.content and i.status == "active"]
        assert active == [newer.item.id]  # type: ignore[union-attr]
        assert vault.get(older.item.id).superseded_by == newer.item.id  # type: ignore[union-attr]
    alice.close()
    bob.close()


def test_items_added_without_learn_are_never_settled_by_sync(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    bob = clone_machine(tmp_path, origin, "bob")
    a = alice.create("Backups at two", "The nightly backups start at 02:00 UTC.").item
    b = bob.create("Backups at four", "The nightly backups start at 04:00 UTC.").item
    for vault in (alice, bob, alice, bob):
        report = vault.sync()
        assert report.settled == []
    for vault in (alice, bob):
        vault.refresh()
        assert vault.get(a.id).status == vault.get(b.id).status == "active"
    alice.close()
    bob.close()
