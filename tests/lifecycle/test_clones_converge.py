"""Lifecycle decisions made apart on real clones converge after ``engram sync``.

Each test is a bare origin and two (or three) real clones (``tests/git_helpers.py``):
what one machine learned, folded, verified, proposed, decided or forgot reaches the
others, the merge driver combines concurrent changes by the rules of docs/merge.md, and
every machine ends with the same tracked bytes and a clean tree. The promises come from
the docstrings: feedback counters add across machines (``feedback``), the same finding
on two machines is one proposal file (``proposals``), a forgotten item can be restored
from any clone (``forgetting``), forked chains and contradictory new lessons settle the
same way everywhere (``succession``, ``reconcile``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, tracked


def pair(tmp: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp)
    alice = first_machine(tmp, origin, "alice")
    return alice, clone_machine(tmp, origin, "bob")


def converge(*vaults: Vault) -> None:
    """Sync round-robin until every machine has seen every other's push (the last
    machine's sync already holds everything), then check one state everywhere."""
    for vault in (*vaults, *vaults[:-1]):
        vault.sync()
    first = tracked(vaults[0].root)
    for vault in vaults:
        assert clean(vault.root), vault.root
        assert tracked(vault.root) == first, vault.root
        vault.refresh()


@pytest.fixture
def clones(tmp_path: Path):  # type: ignore[no-untyped-def]
    alice, bob = pair(tmp_path)
    yield alice, bob
    alice.close()
    bob.close()


def test_feedback_folded_on_two_machines_adds_up(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    item = alice.create("Use pgbouncer", "Connect through pgbouncer in transaction mode.").item
    alice.sync()
    bob.sync()
    a = alice.feedback(item.id, "helped").changes[0]
    alice.feedback(item.id, "failed", confidence=0.5)
    b = bob.feedback(item.id, "helped").changes[0]
    bob.feedback(item.id, "helped")
    converge(alice, bob)
    for vault in (alice, bob):
        got = vault.get(item.id)
        assert (got.effective_retrievals, got.failed_uses) == (3, 1)
        assert 0.5 < got.importance < 0.5 + a.importance_delta + 2 * b.importance_delta + 1e-9
        assert not got.merge_conflicts  # counters never conflict
        assert not (vault.state.state_dir / "feedback.jsonl").exists()  # sync folded it


def test_the_same_finding_on_two_machines_is_one_proposal(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    item = alice.create("Restart the worker by hand", "SSH in and restart it.").item
    alice.sync()
    bob.sync()
    made = []
    for vault in (alice, bob):  # both see it fail three times, offline
        for _ in range(3):
            out = vault.feedback(item.id, "failed").proposals
        made.append(out[0])
    assert made[0] == made[1]  # one id: one file on both machines
    converge(alice, bob)
    for vault in (alice, bob):
        found = vault.proposals(status=None)
        assert [p.id for p in found] == [made[0]] and found[0].status == "open"
        assert vault.get(item.id).failed_uses == 6
    assert (alice.root / found[0].path).read_bytes() == (bob.root / found[0].path).read_bytes()


def test_a_proposal_accepted_on_one_machine_merges_with_an_edit_on_the_other(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    item = alice.create("Flaky cache warmup", "Warm the cache before deploys.").item
    for _ in range(3):
        alice.feedback(item.id, "failed")
    alice.sync()
    bob.sync()
    prop = bob.proposals(kind="archive")[0]
    alice.accept(prop.id, note="freeze it")
    bob.update(item.id, {"summary": "warm it with the script", "tags": ["deploy"]})
    converge(alice, bob)
    for vault in (alice, bob):
        got = vault.get(item.id)
        assert got.status == "frozen" and got.summary == "warm it with the script" and "deploy" in got.tags
        assert vault.proposal(prop.id).status == "accepted"
        assert not got.merge_conflicts


def test_verification_events_from_two_machines_are_all_kept(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    item = alice.create("Log retention", "Application logs are kept for 30 days.", kind="fact").item
    alice.sync()
    bob.sync()
    alice.upgrade_verification(item.id, "the bucket lifecycle rule says 30 days")
    time.sleep(0.01)
    bob.verify_entry(item.id, "checked with the SRE", valid_while="until the 2027 audit")
    converge(alice, bob)
    for vault in (alice, bob):
        got = vault.get(item.id)
        notes = sorted(v.get("note", "") for v in got.verifications or ())
        assert notes == ["checked with the SRE", "the bucket lifecycle rule says 30 days"]
        assert got.last_verified_at and got.valid_while == "until the 2027 audit"
        assert got.verification_status in ("plausible", "verified")


def test_a_forgotten_item_is_restored_from_another_clone(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    item = alice.create("Old VPN setup", "Connect with the legacy VPN profile.").item
    alice.sync()
    bob.sync()
    alice.forget(item.id)
    alice.sync()
    bob.sync()
    bob.refresh()
    assert bob.get(item.id).status == "forgotten" and item.id not in {i.id for i in bob.list()}
    bob.restore(item.id)
    converge(alice, bob)
    for vault in (alice, bob):
        assert vault.get(item.id).status == "active" and vault.get(item.id).content == item.content


def test_a_skill_edited_on_two_machines_keeps_one_whole_procedure_and_is_flagged(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    made = alice.create_skill("Rebuild a bloated table", ["check disk", "run pg_repack"],
                              preconditions=["a primary key"])
    alice.sync()
    bob.sync()
    alice.update(made.id, {"steps": ["check disk", "take a backup", "run pg_repack"],
                           "preconditions": ["a primary key", "off-peak hours"]})
    time.sleep(0.01)
    bob.update(made.id, {"steps": ["check disk", "run pg_repack", "analyze"],
                         "preconditions": ["a primary key", "a healthy replica"]})
    converge(alice, bob)
    for vault in (alice, bob):
        got = vault.get(made.id)
        assert list(got.steps or ()) == ["check disk", "run pg_repack", "analyze"]  # the later edit, whole
        assert set(got.preconditions or ()) == {"a primary key", "off-peak hours", "a healthy replica"}
        assert any(note.startswith("steps:") and "take a backup" in note for note in got.merge_conflicts or ())


def test_contradictory_new_lessons_by_two_authors_become_one_dispute_everywhere(clones: tuple[Vault, Vault]) -> None:
    alice, bob = clones
    older = alice.learn("The nightly backups start at 02:00 UTC.", domain="ops")
    time.sleep(0.01)
    newer = bob.learn("The nightly backups start at 04:00 UTC.", domain="ops")
    assert older.action == newer.action == "inserted"
    converge(alice, bob)
    assert older.item is not None and newer.item is not None
    for vault in (alice, bob):
        old, new = vault.get(older.item.id), vault.get(newer.item.id)
        assert old.status == "active"  # another author's item is never overturned by sync
        assert (new.status, new.verification_status) == ("draft", "disputed")
        disputes = vault.proposals(kind="dispute")
        assert len(disputes) == 1 and set(disputes[0].targets) == {old.id, new.id}
        assert [s.kind for s in vault.synapses(new.id)] == ["contradicts"]
    # a curator on either machine settles it, and the decision travels
    bob.accept(disputes[0].id, resolution="keep_new")
    converge(alice, bob)
    for vault in (alice, bob):
        assert vault.get(older.item.id).superseded_by == newer.item.id
        assert vault.proposal(disputes[0].id).status == "accepted"


def test_three_clones_that_superseded_one_item_agree_on_the_newest(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    machines = [first_machine(tmp_path, origin, "m0")]
    for vault in machines:
        vault.state.actor = "team-bot"
    seed = machines[0].learn("The build server runs at most 4 parallel jobs.", domain="ci").item
    assert seed is not None
    machines[0].sync()
    for name in ("m1", "m2"):
        clone = clone_machine(tmp_path, origin, name)
        clone.state.actor = "team-bot"
        machines.append(clone)
    results = []
    for n, vault in enumerate(machines):
        results.append(vault.learn(f"The build server now runs at most {n + 6} parallel jobs."))
        time.sleep(0.01)
    assert [r.action for r in results] == ["superseded"] * 3
    try:
        converge(*machines)
        newest = results[-1].item
        assert newest is not None
        for vault in machines:
            on_topic = [i for i in vault.list(include_hidden=True) if "parallel jobs" in i.content]
            assert [i.id for i in on_topic if i.status == "active"] == [newest.id]
            assert vault.lineage(seed.id).current == newest.id
            for r in results[:-1]:  # each is superseded, on a chain that ends at the newest
                assert r.item is not None and vault.get(r.item.id).status == "superseded"
                assert vault.lineage(r.item.id).current == newest.id
    finally:
        for vault in machines:
            vault.close()
