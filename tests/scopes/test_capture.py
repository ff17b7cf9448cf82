"""Capture in the agent loop: needs, and the two-layer filter that decides what is worth
proposing."""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.vault import Vault

KEPT = [
    "We chose pg_repack over VACUUM FULL because VACUUM FULL locks the table for the whole rewrite.",
    "Turns out the flaky test raced the clock; freezing time in the fixture fixed it for good.",
    "Never retry a payment write without its idempotency key, otherwise customers are charged twice.",
    "Use the read replica for reports instead of the primary, since long scans starve the writers.",
]
MECHANICAL = [
    ("Ran the tests again and they pass now.", "rules"),
    ("Edited app.py and saved the file in the editor.", "rules"),
    ("git push origin main --force-with-lease", "rules"),
    ("ok", "rules"),
    ("Let me check the logs for the deployment job first.", "rules"),
    ("{'status': 200, 'items': [1, 2, 3], 'next': None, 'took_ms': 12}", "rules"),
    ("This morning I looked at the dashboard and the numbers for the week.", "necessity"),
    ("The service has three replicas and a load balancer in front of them.", "necessity"),
]


@pytest.mark.parametrize("text", KEPT)
def test_reusable_decisions_and_lessons_pass_both_layers(vault: Vault, text: str) -> None:
    verdict = vault.screen_observation(text)
    assert verdict.decision == "proposed", verdict
    assert verdict.score >= 1.0 and verdict.markers


@pytest.mark.parametrize(("text", "layer"), MECHANICAL)
def test_mechanical_repetition_and_episodes_are_rejected(vault: Vault, text: str, layer: str) -> None:
    verdict = vault.screen_observation(text)
    assert (verdict.decision, verdict.layer) == ("rejected", layer), verdict


def test_what_the_vault_holds_already_is_rejected_by_the_rules(vault: Vault) -> None:
    vault.create(KEPT[0], KEPT[0])
    verdict = vault.screen_observation(KEPT[0])
    assert (verdict.decision, verdict.layer, verdict.reason) == ("rejected", "rules", "the vault holds this already")


def test_bad_observations_are_refused(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="must be text"):
        vault.screen_observation(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="8,000 characters"):
        vault.screen_observation("because " * 2000)


def test_needs_are_team_items_and_a_repeat_reinforces(vault: Vault) -> None:
    first = vault.record_need("No seed data for staging", "every migration test starts empty", tags=["staging"])
    assert first.outcome == "NEW" and first.item.kind == "need" and first.item.visibility == "team"
    assert first.item.domain == "needs" and "**Why it matters:** every migration test" in first.item.content
    again = vault.record_need("No seed data for staging", "every migration test starts empty", tags=["staging"])
    assert again.outcome == "DUPLICATE" and again.id == first.id
    with pytest.raises(InvalidInput, match="the need is empty"):
        vault.record_need("   ")


def test_observe_files_a_proposal_never_an_item_and_accepting_it_makes_the_item(vault: Vault) -> None:
    verdict = vault.observe(KEPT[0], domain=["ops", "postgres"], tags=["postgres"])
    assert verdict.decision == "proposed" and verdict.proposal is not None
    assert vault.list() == []  # nothing written as an item
    (proposal,) = vault.proposals(kind="capture")
    assert proposal.id == verdict.proposal and proposal.payload["kind"] == "decision"
    assert (vault.root / proposal.path).is_file()  # a committed, mergeable proposal file
    again = vault.observe(KEPT[0])
    assert (again.decision, again.reason) == ("rejected", "observed before (the same text)")
    vault.accept(proposal.id, note="true")
    (item,) = vault.list()
    assert item.title == KEPT[0] and item.domain == "ops/postgres" and "observed" in item.tags
    assert item.source["system"] == "observe"


def test_observe_rejects_without_filing(vault: Vault) -> None:
    verdict = vault.observe("Ran the tests again and they pass now.")
    assert verdict.decision == "rejected" and verdict.proposal is None
    assert vault.proposals(status=None) == []
