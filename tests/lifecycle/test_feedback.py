"""Feedback: bounded steps, Hebbian shares, one-batch folding, the failure path, forgetting."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput, NotFound
from engram.lifecycle.feedback import pending
from engram.vault import Vault
from tests.conftest import snapshot


def test_feedback_is_journaled_explained_and_folded_in_one_batch(vault: Vault) -> None:
    a = vault.create("Use pg_repack", "pg_repack rebuilds tables online.", domain=["ops"]).item
    b = vault.create("Table bloat", "Mass deletes leave bloat behind.", domain=["ops"]).item
    c = vault.create("VACUUM FULL locks", "It takes an exclusive lock.", domain=["ops"]).item
    vault.link(a.id, "derives_from", b.id, weight=0.8)
    vault.link(a.id, "contradicts", c.id, weight=0.9)
    files = snapshot(vault)
    result = vault.feedback(a.id, "helped", confidence=0.5, note="it worked")
    assert snapshot(vault) == files  # nothing rewritten on the spot
    head, share = result.changes
    assert head.importance_delta == pytest.approx(0.1 * 0.5 * 0.5)
    assert share.id == b.id and share.importance_delta == pytest.approx(head.importance_delta * 0.25 * 0.8)
    assert all(ch.id != c.id for ch in result.changes)  # never across contradicts
    assert "0.500 → 0.525" in result.message
    assert pending(vault.state)[a.id].effective == 1
    vault.search("pg_repack rebuilds")  # a retrieval too: both fold together
    folded = vault.fold()
    assert folded.feedback == 1 and folded.usage.retrievals >= 1
    got = vault.get(a.id)
    assert got.importance == pytest.approx(0.525) and got.effective_retrievals == 1 and got.last_effective_at
    assert got.retrieval_count >= 1 and got.version == a.version  # counters are not content
    assert vault.get(b.id).importance == pytest.approx(0.5 + share.importance_delta)
    assert pending(vault.state) == {} and vault.fold().feedback == 0  # nothing counted twice


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["helped", "failed"]), st.floats(0, 1)), min_size=1, max_size=12))
def test_importance_moves_at_most_one_step_per_call_and_stays_in_bounds(vault: Vault, calls: list[tuple[str, float]]) -> None:
    item = vault.create("Bounded", "feedback moves me").item
    for outcome, confidence in calls:
        change = vault.feedback(item.id, outcome, confidence=confidence).changes[0]
        assert abs(change.importance_delta) <= 0.1 + 1e-9
        assert 0.0 <= change.importance_after <= 1.0
    vault.fold()
    assert 0.0 <= vault.get(item.id).importance <= 1.0


def test_repeated_failure_proposes_archive_then_forget_and_nothing_is_deleted(vault: Vault) -> None:
    item = vault.create("Restart the worker after deploys", "Restart it by hand.").item
    made: tuple[str, ...] = ()
    for _ in range(3):
        made = vault.feedback(item.id, "failed").proposals
    assert len(made) == 1 and vault.get(item.id).status == "active"  # proposed, not done
    vault.accept(made[0])
    assert vault.get(item.id).status == "frozen"
    assert vault.search("restart worker deploys", record=False).status == "no_confident_match"
    for _ in range(2):
        made = vault.feedback(item.id, "failed").proposals
    forget = vault.proposal(made[0])
    assert forget.kind == "forget"
    vault.accept(forget.id)
    assert vault.get(item.id).status == "forgotten" and (vault.root / vault.get(item.id).path).is_file()  # type: ignore[operator]
    assert vault.restore(item.id).status == "active"
    vault.forget(item.id)
    gone = vault.purge(item.id)
    assert gone.id == item.id
    with pytest.raises(NotFound):
        vault.get(item.id)
    assert [e.action for e in vault.state.audit.entries(item.id)][-2:] == ["delete", "purge"]


def test_purge_refuses_anything_not_forgotten_and_bad_feedback_changes_nothing(vault: Vault) -> None:
    item = vault.create("Keep me", "still here").item
    with pytest.raises(InvalidInput, match="only forgotten items"):
        vault.purge(item.id)
    with pytest.raises(InvalidInput, match="helped or failed"):
        vault.feedback(item.id, "meh")
    with pytest.raises(InvalidInput):
        vault.feedback(item.id, "helped", confidence=2)
    assert pending(vault.state) == {}


def test_a_skills_success_rate_follows_feedback(vault: Vault) -> None:
    made = vault.create_skill("Rotate the TLS certificate", ["request", "upload", "reload"],
                              preconditions=["the CA is reachable"])
    result = vault.feedback(made.id, "helped")
    assert result.success_rate == pytest.approx(2 / 3, abs=1e-3)
    vault.feedback(made.id, "failed")
    skill = vault.skills()[0]
    assert (skill.successes, skill.failures, skill.steps) == (1, 1, ("request", "upload", "reload"))
    assert vault.find_skill("rotate the tls certificate for the ingress")[0].id == made.id
