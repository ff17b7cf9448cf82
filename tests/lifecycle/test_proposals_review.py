"""Proposals, review and contradiction_resolve: the invariants their docstrings state.

Proposal ids depend only on kind, sorted targets and discriminator; proposing twice
lands in one file, refreshing an open one and never reopening a decided one; broken
files are skipped. Accepting carries out each kind through the normal write path, and
a proposal whose items are (partly) gone is refused with a hint and changes nothing.
Every resolution of a contradiction does what its row in the table says and closes the
dispute proposal about the pair.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import InvalidInput, NotFound
from engram.lifecycle import proposals
from engram.lifecycle.proposals import PROPOSAL_KINDS, proposal_id
from engram.store.format import write_proposal
from engram.store.model import Engram
from engram.vault import Vault
from tests.conftest import snapshot

IDS = st.sampled_from([f"01J8ZQ3K5P7R2V8Y3M4N6ZH0W{c}" for c in "ABCDEFGH"])


@given(st.sampled_from(PROPOSAL_KINDS), st.lists(IDS, min_size=1, max_size=5, unique=True), st.randoms())
def test_a_proposal_id_depends_on_kind_and_the_set_of_targets_only(kind: str, targets: list[str], rnd) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(targets)
    rnd.shuffle(shuffled)
    pid = proposal_id(kind, targets)
    assert pid == proposal_id(kind, shuffled)
    assert pid.startswith("prop-") and len(pid) == 21 and int(pid[5:], 16) >= 0
    assert pid != proposal_id(kind, targets, "other")
    other = next(k for k in PROPOSAL_KINDS if k != kind)
    assert pid != proposal_id(other, targets)


def _two(vault: Vault) -> tuple[Engram, Engram]:
    a = vault.create("Use pgbouncer", "Connect through pgbouncer in transaction mode.", domain=["ops"]).item
    b = vault.create("Pool sizes", "Keep the pool at twenty connections per app.", domain=["ops"]).item
    return a, b


# --------------------------------------------------------------------------- propose


def test_proposing_the_same_thing_twice_is_one_file_refreshed_only_when_it_changed(vault: Vault) -> None:
    a, b = _two(vault)
    first, created = proposals.propose(vault.state, "link", [a.id, b.id], title="Link", reason="r1",
                                       payload={"source": a.id, "target": b.id}, score=0.5)
    assert created and (vault.root / first.path).is_file()
    data = (vault.root / first.path).read_bytes()
    again, created = proposals.propose(vault.state, "link", [b.id, a.id], title="Link", reason="r1",
                                       payload={"source": a.id, "target": b.id}, score=0.5)
    assert not created and again.id == first.id and (vault.root / first.path).read_bytes() == data
    vault.state.actor = "maintenance-bot"
    fresh, created = proposals.propose(vault.state, "link", [a.id, b.id], title="Link", reason="r2",
                                       payload={"source": a.id, "target": b.id}, score=0.75)
    assert not created and (fresh.reason, fresh.score, fresh.updated_by) == ("r2", 0.75, "maintenance-bot")
    assert fresh.created_by == first.created_by and fresh.created_at == first.created_at
    assert [e.action for e in vault.state.audit.entries(first.id)] == ["propose", "repropose"]
    assert len(vault.proposals(status=None)) == 1


def test_a_decided_proposal_is_never_reopened_or_rewritten(vault: Vault) -> None:
    a, b = _two(vault)
    prop, _ = proposals.propose(vault.state, "link", [a.id, b.id], title="Link", reason="r",
                                payload={"source": a.id, "target": b.id})
    vault.dismiss(prop.id, note="they are unrelated")
    data = (vault.root / prop.path).read_bytes()
    again, created = proposals.propose(vault.state, "link", [a.id, b.id], title="Link", reason="new evidence",
                                       payload={"source": a.id, "target": b.id}, score=1.0)
    assert not created and again.status == "dismissed" and again.note == "they are unrelated"
    assert (vault.root / prop.path).read_bytes() == data


def test_an_unknown_kind_is_refused_before_anything_is_written(vault: Vault) -> None:
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="proposal kind") as err:
        proposals.propose(vault.state, "delete", ["x"], title="t", reason="r")
    assert err.value.hint and "archive" in err.value.hint
    with pytest.raises(InvalidInput):
        vault.proposals(kind="delete")
    with pytest.raises(InvalidInput, match="status"):
        vault.proposals(status="closed")
    assert snapshot(vault) == before


def test_listing_sorts_by_score_filters_and_skips_broken_files(vault: Vault) -> None:
    a, b = _two(vault)
    low, _ = proposals.propose(vault.state, "verify", [a.id], title="v", reason="r", payload={"to": "plausible"},
                               score=0.2, discriminator="plausible")
    high, _ = proposals.propose(vault.state, "archive", [b.id], title="a", reason="r", score=0.9)
    broken = vault.root / "proposals" / "archive" / "prop-0000000000000000.yaml"
    broken.write_text("id: [unclosed\n", encoding="utf-8")
    (vault.root / "proposals" / "archive" / "prop-1111111111111111.yaml").write_text("just text\n", encoding="utf-8")
    assert [p.id for p in vault.proposals()] == [high.id, low.id]
    assert [p.id for p in vault.proposals(target=a.id)] == [low.id]
    assert [p.id for p in vault.proposals(kind="archive")] == [high.id]
    vault.dismiss(high.id)
    assert [p.id for p in vault.proposals()] == [low.id]
    assert [p.id for p in vault.proposals(status="dismissed")] == [high.id]
    assert {p.id for p in vault.proposals(status=None)} == {high.id, low.id}


def test_a_proposal_is_found_by_a_prefix_of_eight_and_an_ambiguous_one_is_refused(vault: Vault) -> None:
    for pid in ("prop-abcdef0000000001", "prop-abcdef0000000002"):
        write_proposal(vault.root / "proposals" / "archive" / f"{pid}.yaml", {
            "id": pid, "kind": "archive", "status": "open", "title": "t", "reason": "r", "targets": [],
            "payload": {}, "score": 0.0, "createdBy": "x", "createdAt": "2026-01-01T00:00:00.000Z",
            "updatedBy": "x", "updatedAt": "2026-01-01T00:00:00.000Z",
        })
    assert vault.proposal("prop-abcdef0000000002").id == "prop-abcdef0000000002"
    assert vault.proposal("  prop-abcdef0000000001 ").id == "prop-abcdef0000000001"
    with pytest.raises(InvalidInput, match="2 proposals start with") as err:
        vault.proposal("prop-abcdef")
    assert err.value.hint
    with pytest.raises(NotFound):
        vault.proposal("prop-ab")  # shorter than eight characters: no prefix match
    with pytest.raises(NotFound):
        vault.proposal("prop-ffffffffffffffff")


# --------------------------------------------------------------------------- accept / dismiss


def test_accepting_or_dismissing_a_decided_proposal_is_refused_with_who_decided(vault: Vault) -> None:
    a, _ = _two(vault)
    prop, _ = proposals.propose(vault.state, "archive", [a.id], title="a", reason="r", payload={"status": "frozen"})
    vault.state.actor = "carol"
    vault.accept(prop.id, note="yes")
    before = snapshot(vault)
    for op in (vault.accept, vault.dismiss):
        with pytest.raises(InvalidInput, match="accepted already \\(by carol\\)") as err:
            op(prop.id)
        assert err.value.hint
    assert snapshot(vault) == before
    decided = vault.proposal(prop.id)
    assert (decided.status, decided.decided_by, decided.note) == ("accepted", "carol", "yes") and decided.decided_at


def test_a_resolution_is_refused_for_proposals_that_are_not_disputes(vault: Vault) -> None:
    a, _ = _two(vault)
    prop, _ = proposals.propose(vault.state, "archive", [a.id], title="a", reason="r")
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="resolution applies to dispute"):
        vault.accept(prop.id, resolution="keep_new")
    assert snapshot(vault) == before and vault.get(a.id).status == "active"


def test_accepting_link_retype_stale_and_verify_proposals_changes_what_they_say(vault: Vault) -> None:
    a, b = _two(vault)
    link, _ = proposals.propose(vault.state, "link", [a.id, b.id], title="l", reason="same domain",
                                payload={"source": a.id, "kind": "similar_to", "target": b.id})
    vault.accept(link.id)
    edge = vault.synapses(a.id)[0]
    assert (edge.kind, edge.source, edge.target) == ("similar_to", a.id, b.id)
    assert any(link.id in e.description for e in edge.evidence)
    vault.update(a.id, {"summary": "touch"})  # an unrelated edit in between
    retype, _ = proposals.propose(vault.state, "retype", [a.id, b.id], title="r", reason="they conflict",
                                  payload={"synapse": edge.id, "from": "similar_to", "to": "contradicts",
                                           "source": a.id, "target": b.id}, discriminator="contradicts")
    vault.accept(retype.id)
    assert [(s.kind, s.weight) for s in vault.synapses(a.id)] == [("contradicts", edge.weight)]
    stale, _ = proposals.propose(vault.state, "stale", [b.id], title="s", reason="old", payload={"to": "stale"})
    vault.accept(stale.id)
    got = vault.get(b.id)
    assert got.verification_status == "stale"
    assert got.verifications and got.verifications[-1]["to"] == "stale" and stale.id in got.verifications[-1]["note"]
    verify, _ = proposals.propose(vault.state, "verify", [b.id], title="v", reason="helped",
                                  payload={"to": "plausible"}, discriminator="plausible")
    vault.accept(verify.id)
    assert vault.get(b.id).verification_status == "plausible"
    assert [v["to"] for v in vault.get(b.id).verifications or ()] == ["stale", "plausible"]


def test_accepting_a_pattern_makes_one_item_that_consolidates_its_members(vault: Vault) -> None:
    members = [vault.create(f"Bloat on table {n}", f"pg_repack fixed bloat on table {n}.", domain=["ops"],
                            dedupe=False).item for n in range(3)]
    prop, _ = proposals.propose(vault.state, "pattern", [m.id for m in members], title="p", reason="cluster",
                                payload={"domain": "ops/postgres", "members": [m.id for m in members],
                                         "title": "Pattern: bloat", "content": "- pg_repack fixes bloat"})
    vault.accept(prop.id)
    pattern = next(i for i in vault.list() if i.kind == "pattern")
    assert pattern.title == "Pattern: bloat" and pattern.domain == "ops/postgres"
    assert sorted(s.target for s in vault.synapses(pattern.id, kind="consolidates")) == sorted(m.id for m in members)
    assert all(vault.get(m.id).status == "active" for m in members)  # members are kept, not absorbed


def _merge_of_three(vault: Vault) -> tuple[proposals.Proposal, list[Engram]]:
    group = [vault.create("Retry budgets", "Cap retries at 3 per request and back off.", domain=["eng"],
                          dedupe=False).item for _ in range(3)]
    vault.maintain("deep")
    return vault.proposals(kind="merge")[0], group


@pytest.mark.parametrize("which", ["absorbed-last", "keeper"])
def test_a_merge_with_an_item_gone_is_refused_and_absorbs_nothing(vault: Vault, which: str) -> None:
    """Accepting used to absorb the items before the missing one, and leave the proposal
    open: accepting it again later merged the rest a second time."""
    prop, _ = _merge_of_three(vault)
    gone = prop.payload["absorb"][-1] if which == "absorbed-last" else prop.payload["keep"]
    vault.delete(gone)
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="gone") as err:
        vault.accept(prop.id)
    assert f"engram dismiss {prop.id}" in (err.value.hint or "")
    assert snapshot(vault) == before
    assert vault.dismiss(prop.id).status == "dismissed"


def test_a_pattern_with_a_member_gone_is_refused_and_no_pattern_item_is_made(vault: Vault) -> None:
    members = [vault.create(f"Member {n}", f"member {n} of a pattern, distinct text {n * 7}.", domain=["p"],
                            dedupe=False).item for n in range(3)]
    prop, _ = proposals.propose(vault.state, "pattern", [m.id for m in members], title="p", reason="c",
                                payload={"domain": "p", "members": [m.id for m in members],
                                         "title": "Pattern: members", "content": "- m"})
    vault.delete(members[2].id)
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="gone"):
        vault.accept(prop.id)
    assert snapshot(vault) == before
    assert not [i for i in vault.list() if i.kind == "pattern"]


def test_accepting_a_merge_keeps_every_sentence_and_adds_up_reinforcement(vault: Vault) -> None:
    keep = vault.create("Deploy freeze", "No deploys on Fridays after noon.", domain=["eng"], dedupe=False).item
    other = vault.create("Deploy freeze", "No deploys on Fridays after noon.", domain=["eng"], dedupe=False).item
    vault.update(other.id, {"content": "No deploys on Fridays after noon.\n\nHotfixes need two approvals.\n",
                            "reinforcementScore": 2.0})
    vault.update(keep.id, {"reinforcementScore": 3.0})
    prop, _ = proposals.propose(vault.state, "merge", [keep.id, other.id], title="m", reason="dup",
                                payload={"keep": keep.id, "absorb": [other.id]})
    vault.accept(prop.id)
    kept = vault.get(keep.id)
    assert kept.content.startswith(keep.content.rstrip("\n")) and "Hotfixes need two approvals." in kept.content
    assert kept.reinforcement_score == 6.0  # 3 + its own absorbed 2 + 1 for the merge
    assert kept.provenance and kept.provenance[-1]["action"] == "absorb" and kept.provenance[-1]["id"] == other.id
    assert vault.get(other.id).superseded_by == keep.id
    assert [s.target for s in vault.synapses(keep.id, kind="consolidates")] == [other.id]


# --------------------------------------------------------------------------- contradictions


def _dispute(vault: Vault) -> tuple[Engram, Engram, str]:
    dana = Vault.open(vault.root, actor="dana")
    original = dana.learn("The assets bucket is public so the CDN can read it.").item
    dana.close()
    result = vault.learn("The assets bucket is private; the CDN reads it through an origin access identity.")
    assert original is not None and result.item is not None and result.proposal
    return original, result.item, result.proposal


def test_a_disputed_draft_cannot_be_verified_until_resolved(vault: Vault) -> None:
    _, draft, _ = _dispute(vault)
    before = snapshot(vault)
    for call in (lambda: vault.verify_entry(draft.id), lambda: vault.upgrade_verification(draft.id, "I checked")):
        with pytest.raises(InvalidInput, match="disputed") as err:
            call()
        assert "engram resolve" in (err.value.hint or "")
    assert snapshot(vault) == before


@pytest.mark.parametrize("resolution", ["keep_new", "keep_old", "merge", "archive"])
def test_each_resolution_does_what_its_row_says_and_closes_the_dispute(vault: Vault, resolution: str) -> None:
    old, new, pid = _dispute(vault)
    done = vault.contradiction_resolve(old.id, new.id, resolution, note="checked the bucket policy")
    assert done.proposal == pid
    prop = vault.proposal(pid)
    assert prop.status == ("dismissed" if resolution == "keep_old" else "accepted")
    assert prop.note == f"{resolution}: checked the bucket policy"
    o, n = vault.get(old.id), vault.get(new.id)
    if resolution == "keep_new":
        assert (n.status, n.verification_status) == ("active", "plausible")
        assert o.status == "superseded" and o.superseded_by == n.id
        vault.verify_entry(n.id)  # no longer disputed
    elif resolution == "keep_old":
        assert (n.status, o.status) == ("frozen", "active")
        assert o.verifications and f"kept over {n.id}" in o.verifications[-1]["note"]
    elif resolution == "merge":
        assert o.status == "active" and o.content.startswith(old.content.rstrip("\n"))
        assert "origin access identity" in o.content
        assert n.status == "superseded" and n.superseded_by == o.id
        assert [s.target for s in vault.synapses(o.id, kind="consolidates")] == [n.id]
        assert o.provenance and o.provenance[-1]["action"] == "absorb"
    else:
        assert (o.status, n.status) == ("frozen", "frozen") and done.kept == ()
    assert {i.id for i in (*done.kept, *done.retired)} == {old.id, new.id}


def test_a_merge_keeps_the_claim_in_dispute_marked_and_flags_the_item(vault: Vault) -> None:
    """merge appended only new's sentences with new words: "Use port 9090" (a value, not
    a word, changed) was dropped, so the active item said to use 8080 and that 8080 is
    taken (issue 29, item 8). Both claims are kept, in a marked block, and flagged."""
    old = vault.create("API port", "Use port 8080 for the API.").item
    new = vault.create("API port moved", "Use port 9090 for the API. Port 8080 is taken by the sidecar.",
                       dedupe=False).item
    done = vault.contradiction_resolve(old.id, new.id, "merge")
    merged = vault.get(old.id)
    assert merged.content.startswith(old.content.rstrip("\n"))  # its own text kept byte for byte
    assert "Port 8080 is taken by the sidecar." in merged.content
    block = merged.content[merged.content.index("> [!conflict]"):]
    assert "> Use port 8080 for the API." in block and "> Use port 9090 for the API." in block
    assert "8080 → 9090" in block and f"engram conflicts --resolve {old.id}" in block
    assert merged.merge_conflicts and new.id in merged.merge_conflicts[0]
    assert [f.id for f in vault.conflicts()] == [old.id]
    assert done.to_json()["disputed"] == [
        {"old": "Use port 8080 for the API.", "new": "Use port 9090 for the API.", "conflicts": ["api: 8080 → 9090"]}]
    assert vault.get(new.id).status == "superseded"
    # A sentence that restates a value the item holds is no claim in dispute, and no news.
    again = vault.create("API port again", "Use port 8080 for the API. It serves HTTP/2.", dedupe=False).item
    done = vault.contradiction_resolve(old.id, again.id, "merge")
    assert done.to_json()["disputed"] == [] and vault.get(old.id).content.endswith("It serves HTTP/2.\n")


def test_resolve_refuses_an_unknown_resolution_and_the_same_item_twice(vault: Vault) -> None:
    old, new, pid = _dispute(vault)
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="keep_new, keep_old, merge, archive"):
        vault.contradiction_resolve(old.id, new.id, "keep_both")
    with pytest.raises(InvalidInput, match="same item"):
        vault.contradiction_resolve(old.id, old.id, "keep_new")
    with pytest.raises(InvalidInput):
        vault.accept(pid, resolution="keep_both")
    assert snapshot(vault) == before and vault.proposal(pid).status == "open"


def test_a_dispute_is_accepted_with_a_chosen_resolution(vault: Vault) -> None:
    old, new, pid = _dispute(vault)
    assert vault.accept(pid, resolution="merge").status == "accepted"
    assert vault.get(new.id).superseded_by == old.id


def test_a_dispute_whose_draft_is_gone_can_still_be_dismissed(vault: Vault) -> None:
    """It could not be closed at all: dismiss raised NotFound, and accept's hint said to
    dismiss it."""
    old, new, pid = _dispute(vault)
    vault.delete(new.id)
    with pytest.raises(InvalidInput, match="gone"):
        vault.accept(pid)
    closed = vault.dismiss(pid, note="the draft was deleted")
    assert (closed.status, closed.note) == ("dismissed", "the draft was deleted")
    assert vault.get(old.id).status == "active"
    assert vault.proposals() == []
