"""learn through the vault: actions, roles, provenance, and what it must never do."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.vault import Vault
from tests.conftest import snapshot


def test_an_extension_keeps_the_original_text_byte_for_byte(vault: Vault) -> None:
    first = vault.learn("Run VACUUM ANALYZE after a bulk load.").item
    assert first is not None
    before = vault.get(first.id).content
    done = vault.learn("Run VACUUM ANALYZE after a bulk load, and raise maintenance_work_mem for the session.")
    assert done.action == "extended" and done.item is not None and done.item.id == first.id
    after = vault.get(first.id)
    assert after.content.startswith(before) and "maintenance_work_mem" in after.content
    assert after.reinforcement_score == 1.0


def test_superseding_records_provenance_edge_and_deactivation(vault: Vault) -> None:
    old = vault.learn("Access tokens are valid for 1 hour.").item
    new = vault.learn("Access tokens are valid for 15 minutes.")
    assert old is not None and new.action == "superseded" and new.item is not None
    gone = vault.get(old.id)
    assert gone.status == "superseded" and gone.superseded_by == new.item.id and gone.deactivated_at
    assert gone.content == old.content
    chain = vault.get(new.item.id).provenance
    assert chain and chain[-1]["id"] == old.id and chain[-1]["action"] == "supersede"
    assert [s.kind for s in vault.synapses(new.item.id)] == ["supersedes"]
    # Recall hands the old item's place to the new one.
    hits = vault.search("access tokens valid", record=False).hits
    assert hits[0].id == new.item.id and old.id in hits[0].explanation.replaces
    # Chains carry on: a third correction inherits the provenance of the second.
    third = vault.learn("Access tokens are valid for 5 minutes.")
    assert third.item is not None
    chain = vault.get(third.item.id).provenance or ()
    assert chain[0]["action"] == "learned"
    assert [p["id"] for p in chain if p["action"] == "supersede"] == [old.id, new.item.id]


def test_contradicting_another_authors_item_is_a_dispute_not_an_overturn(vault: Vault) -> None:
    dana = Vault.open(vault.root, actor="dana")
    original = dana.learn("Interns can deploy to production after a review.").item
    dana.close()
    assert original is not None
    result = vault.learn("Interns cannot deploy to production, even after a review.")
    assert result.action == "disputed" and result.proposal
    assert vault.get(original.id).status == "active"
    draft = vault.get(result.item.id)  # type: ignore[union-attr]
    assert draft.status == "draft" and draft.verification_status == "disputed"
    assert [s.kind for s in vault.synapses(draft.id)] == ["contradicts"]
    proposal = vault.proposal(result.proposal)
    assert proposal.kind == "dispute" and set(proposal.targets) == {original.id, draft.id}
    vault.accept(proposal.id)  # a curator agrees: keep_new
    assert vault.get(original.id).status == "superseded" and vault.get(draft.id).status == "active"
    assert vault.proposal(proposal.id).status == "accepted"


def test_dismissing_a_dispute_keeps_the_old_item(vault: Vault) -> None:
    dana = Vault.open(vault.root, actor="dana")
    original = dana.learn("The assets bucket is public so the CDN can read it.").item
    dana.close()
    result = vault.learn("The assets bucket is private; the CDN reads it through an origin access identity.")
    assert result.proposal
    vault.dismiss(result.proposal, note="the CDN needs it public")
    assert vault.get(original.id).status == "active"  # type: ignore[union-attr]
    assert vault.get(result.item.id).status == "frozen"  # type: ignore[union-attr]
    assert vault.proposal(result.proposal).status == "dismissed"


def test_every_learn_call_is_in_the_audit_log_with_its_verdict(vault: Vault) -> None:
    vault.learn("Health checks run every 10 seconds.")
    vault.learn("Health checks run every 10 seconds.")
    vault.learn("Design reviews happen on Thursdays.", dry_run=True)
    notes = [e.note for e in vault.state.audit.entries() if e.action == "learn"]
    assert notes[0].startswith("novel -> inserted") and notes[1].startswith("duplicate -> reinforced")
    assert len(notes) == 2  # a dry run writes nothing, not even the log


def test_near_duplicate_decision_records_are_never_overwritten_by_create(vault: Vault) -> None:
    body = "Status: accepted. Context: we need a durable store. Decision: use {x}. Consequences: one more system to run."
    a = vault.create("ADR 12: use Postgres", body.format(x="Postgres for the billing ledger")).item
    b = vault.create("ADR 13: use Kafka", body.format(x="Kafka for the order events"))
    assert b.outcome == "NEW" and b.id != a.id
    assert vault.get(a.id).content == a.content and vault.get(a.id).version == a.version


lessons = st.sampled_from([
    "The staging database listens on port 5432.", "Restart the worker after changing its configuration.",
    "Feature flags are evaluated on the server.", "Nightly backups start at 02:00 UTC.",
    "Always squash commits when merging.",
])
others = st.sampled_from([
    "Design reviews happen on Thursdays.", "Screenshots in bug reports must hide customer names.",
    "The office plants are watered on Mondays.", "Lunch is at noon in the big room.",
])


@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(existing=st.lists(lessons, min_size=1, max_size=3, unique=True), new=others)
def test_a_novel_lesson_never_changes_an_existing_item(tmp_path: Path, existing: list[str], new: str) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp, Vault(Path(tmp)) as fresh:
        for text in existing:
            fresh.learn(text)
        before = {p: b for p, b in snapshot(fresh).items() if p.endswith(".md")}
        result = fresh.learn(new)
        assert result.verdict.relation == "novel"
        after = snapshot(fresh)
        assert all(after[p] == b for p, b in before.items())
