"""Succession, lineage and forgetting through the vault: what their docstrings promise.

supersede: three audited writes, nothing deleted, the provenance chain carried on, bad
input refused with nothing changed. settle_heads: forked chains converge on the newest
head whatever order they are looked at, and a second run does nothing. lineage: both
directions, every lineage edge kind, cycles end, the current item of the chain.
forgetting: each step restorable, purge only of forgotten items, version checks.
"""

from __future__ import annotations

import itertools

import pytest

from engram.errors import EngramError, InvalidInput, NotFound, VersionConflict
from engram.lifecycle.lineage import LINEAGE_KINDS
from engram.lifecycle.succession import settle_heads
from engram.store.model import Engram
from engram.vault import Vault
from tests.conftest import snapshot


def items(vault: Vault, n: int, stem: str = "Item") -> list[Engram]:
    return [vault.create(f"{stem} {i}", f"{stem} number {i} says something of its own, {i * 17}.",
                         domain=["chain"], dedupe=False).item for i in range(n)]


# --------------------------------------------------------------------------- supersede


def test_supersede_writes_three_audited_changes_and_keeps_the_old_text(vault: Vault) -> None:
    old, new = items(vault, 2)
    old_bytes = (vault.root / old.path).read_bytes()  # type: ignore[operator]
    done = vault.supersede(old.id, new.id, reason="the newer runbook")
    assert done.old.status == "superseded" and done.old.superseded_by == new.id and done.old.deactivated_at
    assert done.old.content == old.content and done.old.version == old.version + 1
    entry = (done.new.provenance or [])[-1]
    assert entry == {**entry, "action": "supersede", "id": old.id, "title": old.title, "version": old.version,
                     "by": vault.state.actor, "why": "the newer runbook"}
    assert done.edge.kind == "supersedes" and (done.edge.source, done.edge.target) == (new.id, old.id)
    assert done.edge.weight == 1.0
    after = (vault.root / old.path).read_bytes()  # type: ignore[operator]
    assert old_bytes.split(b"\n---\n", 1)[1] in after  # the body is there, unchanged
    actions = [e.action for e in vault.state.audit.entries() if e.id in (old.id, new.id)]
    assert actions.count("update") == 2 and any(a.startswith("link") for a in
                                                 (e.action for e in vault.state.audit.entries()))


@pytest.mark.parametrize("case", ["self", "superseded-new", "missing-old", "missing-new"])
def test_supersede_refuses_bad_pairs_and_changes_nothing(vault: Vault, case: str) -> None:
    a, b, c = items(vault, 3)
    vault.supersede(a.id, b.id)
    before = snapshot(vault)
    args = {
        "self": (c.id, c.id), "superseded-new": (c.id, a.id),
        "missing-old": ("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ", c.id), "missing-new": (c.id, "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"),
    }[case]
    with pytest.raises(EngramError) as err:
        vault.supersede(*args)
    assert isinstance(err.value, NotFound if case.startswith("missing") else InvalidInput)
    assert err.value.hint
    if case == "superseded-new":
        assert b.id in err.value.message
    assert snapshot(vault) == before


def test_a_chain_carries_every_predecessor_in_provenance_once(vault: Vault) -> None:
    chain = items(vault, 5)
    for older, newer in itertools.pairwise(chain):
        vault.supersede(older.id, newer.id)
    head = vault.get(chain[-1].id)
    ids = [p["id"] for p in head.provenance or () if p.get("action") == "supersede"]
    assert ids == [c.id for c in chain[:-1]]  # oldest first, none twice
    assert [i.status for i in (vault.get(c.id) for c in chain)] == ["superseded"] * 4 + ["active"]


# --------------------------------------------------------------------------- settle_heads


def _fork(vault: Vault, n: int) -> tuple[Engram, list[Engram]]:
    """An item superseded by ``n`` successors at once, as two merged clones leave it."""
    old, *heads = items(vault, n + 1, "Fork")
    for head in heads:
        vault.link(head.id, "supersedes", old.id, weight=1.0)
    vault.update(old.id, {"status": "superseded", "supersededBy": heads[0].id})
    return old, heads


def test_settle_heads_makes_the_newest_head_current_and_supersedes_the_others_by_it(vault: Vault) -> None:
    old, heads = _fork(vault, 3)
    stamps = ["2026-03-01T00:00:00.000Z", "2026-05-01T00:00:00.000Z", "2026-04-01T00:00:00.000Z"]
    for head, stamp in zip(heads, stamps, strict=True):
        vault.update(head.id, {"activatedAt": stamp})
    done = settle_heads(vault.state)
    winner = heads[1]
    assert sorted(s.old.id for s in done) == sorted(h.id for h in heads if h.id != winner.id)
    assert all(s.new.id == winner.id for s in done)
    for head in heads:
        got = vault.get(head.id)
        assert (got.status == "active") == (head.id == winner.id)
        if head.id != winner.id:
            assert got.superseded_by == winner.id and got.content == head.content
    assert settle_heads(vault.state) == []  # converged: nothing more to do
    assert vault.lineage(old.id).current == winner.id


def test_settle_heads_breaks_an_activation_tie_by_the_larger_id(vault: Vault) -> None:
    _, heads = _fork(vault, 2)
    for head in heads:
        vault.update(head.id, {"activatedAt": "2026-03-01T00:00:00.000Z"})
    settle_heads(vault.state)
    winner = max(heads, key=lambda h: h.id)
    assert [vault.get(h.id).status for h in heads] == ["active" if h.id == winner.id else "superseded" for h in heads]


def test_settle_heads_limited_to_other_items_leaves_a_fork_alone(vault: Vault) -> None:
    _, heads = _fork(vault, 2)
    unrelated = items(vault, 1, "Elsewhere")[0]
    assert settle_heads(vault.state, {unrelated.id}) == []
    assert all(vault.get(h.id).status == "active" for h in heads)
    assert len(settle_heads(vault.state, {heads[0].id})) == 1


def test_a_head_that_is_frozen_is_not_a_head(vault: Vault) -> None:
    _, heads = _fork(vault, 2)
    vault.archive(heads[0].id)
    assert settle_heads(vault.state) == []
    assert vault.get(heads[1].id).status == "active"


# --------------------------------------------------------------------------- lineage


def test_lineage_walks_every_kind_both_ways_with_depths_and_parents(vault: Vault) -> None:
    root, mid, top, source, absorbed = items(vault, 5, "Line")
    vault.supersede(root.id, mid.id)
    vault.supersede(mid.id, top.id)
    vault.link(top.id, "derives_from", source.id)
    vault.link(mid.id, "consolidates", absorbed.id)
    assert set(LINEAGE_KINDS) == {"supersedes", "consolidates", "derives_from"}
    up = {s.id: s for s in vault.lineage(top.id).ancestors}
    assert set(up) == {mid.id, root.id, source.id, absorbed.id}
    assert (up[mid.id].depth, up[root.id].depth, up[absorbed.id].depth) == (1, 2, 2)
    assert up[root.id].parent == mid.id and up[source.id].via == "derives_from"
    assert up[absorbed.id].via == "consolidates"
    down = vault.lineage(root.id)
    assert [s.id for s in down.descendants if s.via in ("supersedes", "supersededBy")][:2] == [mid.id, top.id]
    assert down.current == top.id and down.ancestors == ()
    assert vault.lineage(top.id).current == top.id
    js = vault.lineage(mid.id).to_json()
    assert js["current"] == top.id and {a["id"] for a in js["ancestors"]} == {root.id, absorbed.id}


def test_lineage_ends_on_a_hand_made_cycle_and_names_missing_items(vault: Vault) -> None:
    a, b, c = items(vault, 3, "Loop")
    vault.link(a.id, "derives_from", b.id)
    vault.link(b.id, "derives_from", c.id)
    vault.link(c.id, "derives_from", a.id)
    found = vault.lineage(a.id)
    assert sorted(s.id for s in found.ancestors) == sorted([b.id, c.id])
    assert sorted(s.id for s in found.descendants) == sorted([b.id, c.id])
    assert a.id not in {s.id for s in (*found.ancestors, *found.descendants)}
    vault.update(b.id, {"supersededBy": "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"})
    gone = [s for s in vault.lineage(b.id).descendants if s.id == "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"]
    assert gone and gone[0].status == "missing" and gone[0].path is None


def test_lineage_of_an_unknown_item_is_not_found(vault: Vault) -> None:
    with pytest.raises(NotFound):
        vault.lineage("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ")


# --------------------------------------------------------------------------- forgetting


def test_archive_forget_restore_purge_each_step_undoable_and_audited(vault: Vault) -> None:
    item, other = items(vault, 2, "Trash")
    vault.link(item.id, "similar_to", other.id)
    frozen = vault.archive(item.id)
    assert frozen.status == "frozen" and frozen.version == item.version + 1
    assert vault.restore(item.id).status == "active"
    forgotten = vault.forget(item.id)
    assert forgotten.status == "forgotten" and (vault.root / forgotten.path).is_file()  # type: ignore[operator]
    assert item.id not in {i.id for i in vault.list()}
    assert item.id in {i.id for i in vault.list(include_hidden=True)}
    with pytest.raises(InvalidInput, match="forgotten already") as err:
        vault.archive(item.id)
    assert err.value.hint and "Restore" in err.value.hint
    path = forgotten.path
    gone = vault.purge(item.id)
    assert gone.id == item.id and not (vault.root / path).exists()  # type: ignore[operator]
    assert vault.synapses(other.id) == []  # its edges went with it
    assert vault.in_trash(item.id)
    assert [e.action for e in vault.state.audit.entries(item.id)] == [
        "create", "update", "update", "update", "delete", "purge"]


def test_restore_refuses_an_item_that_is_not_frozen_or_forgotten(vault: Vault) -> None:
    item = items(vault, 1)[0]
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="nothing to restore") as err:
        vault.restore(item.id)
    assert err.value.hint and "--status forgotten" in err.value.hint
    assert snapshot(vault) == before


@pytest.mark.parametrize("status", ["active", "frozen", "draft", "superseded"])
def test_purge_refuses_every_status_but_forgotten(vault: Vault, status: str) -> None:
    item = items(vault, 1)[0]
    if status != "active":
        vault.update(item.id, {"status": status})
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="only forgotten items") as err:
        vault.purge(item.id)
    assert f"engram forget {item.id}" in (err.value.hint or "")
    assert snapshot(vault) == before and vault.get(item.id).status == status


@pytest.mark.parametrize("op", ["archive", "forget", "restore", "purge"])
def test_a_stale_expected_version_is_a_version_conflict_and_changes_nothing(vault: Vault, op: str) -> None:
    item = items(vault, 1)[0]
    if op in ("restore", "purge"):
        item = vault.forget(item.id)
    before = snapshot(vault)
    with pytest.raises(VersionConflict):
        getattr(vault, op)(item.id, expected_version=item.version - 1)
    assert snapshot(vault) == before
    assert getattr(vault, op)(item.id, expected_version=item.version).id == item.id


def test_forgotten_items_are_out_of_recall_and_back_after_restore(vault: Vault) -> None:
    item = vault.create("Kafka retention", "Topic retention on the events cluster is seven days.").item
    assert vault.search("kafka retention events", record=False).hits[0].id == item.id
    vault.forget(item.id)
    assert item.id not in {h.id for h in vault.search("kafka retention events", record=False).hits}
    vault.restore(item.id)
    assert vault.search("kafka retention events", record=False).hits[0].id == item.id


def test_restoring_a_forgotten_superseded_item_keeps_it_superseded(vault: Vault) -> None:
    """It came back active beside its successor: two current items on one chain, and
    `engram doctor` reported 'superseded but still active' for a person to fix."""
    old, new = items(vault, 2, "Restore")
    vault.supersede(old.id, new.id)
    vault.forget(old.id)
    back = vault.restore(old.id)
    assert (back.status, back.superseded_by) == ("superseded", new.id)
    assert vault.lineage(old.id).current == new.id
    assert vault.get(new.id).status == "active"
    assert not [p for p in vault.doctor().problems if p.code == "superseded-active"]
