"""Capture in the agent loop: needs, and the two-layer filter that decides what is worth
proposing."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import InvalidInput
from engram.vault import Vault
from tests.trust.settings import add_settings

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


def test_a_need_recorded_again_for_another_reason_reinforces_one_item_and_keeps_both_reasons(vault: Vault) -> None:
    """The same need with a different ``why`` was a second need (issue 29, item 5)."""
    first = vault.record_need("No seed data for staging", "every migration test starts empty")
    again = vault.record_need("No seed data for staging", "the sales demo needs realistic customers")
    assert again.id == first.id and again.outcome == "EXTENDED" and again.note and "reason" in again.note
    (need,) = vault.list()
    assert need.reinforcement_score == 1.0
    assert "**Why it matters:** every migration test starts empty" in need.content
    assert "**Why it matters:** the sales demo needs realistic customers" in need.content
    assert need.content.startswith(first.item.content)  # the first text is kept byte for byte
    known = vault.record_need("No seed data for staging", "The sales demo needs realistic customers.")
    assert (known.outcome, known.id) == ("DUPLICATE", first.id)
    assert vault.get(first.id).content == need.content and vault.get(first.id).reinforcement_score == 2.0
    assert [h.id for h in vault.search("sales demo customers", record=False).hits] == [first.id]


def test_a_writer_adds_a_reason_to_another_authors_need_as_an_endorsement(vault: Vault) -> None:
    """A writer may not reword another author's item, so its reason is kept where it may
    write: an endorsement of the need (who, when, why) — never a second need."""
    add_settings(vault.root, 'roles:\n  "*": writer\n')
    with Vault.open(vault.root, actor="ana") as ana:
        first = ana.record_need("No seed data for staging", "every migration test starts empty")
    with Vault.open(vault.root, actor="bo") as bo:
        again = bo.record_need("No seed data for staging", "the sales demo needs realistic customers")
        assert again.id == first.id and again.outcome == "EXTENDED"
        need = bo.get(first.id)
        assert need.content == first.item.content and need.reinforcement_score == 1.0
        assert [(e["by"], e["note"]) for e in need.endorsements or ()] == [
            ("bo", "the sales demo needs realistic customers")]
        assert bo.audit(refused=True) == []
        assert len(bo.list()) == 1


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


def test_the_cli_says_a_known_need_kept_the_new_reason(vault: Vault) -> None:
    runner = CliRunner()
    args = ["--vault", str(vault.root), "need", "No seed data for staging", "--json", "--why"]
    first = json.loads(runner.invoke(cli, [*args, "tests start empty"]).stdout)
    again = json.loads(runner.invoke(cli, [*args, "the sales demo needs customers"]).stdout)
    assert again["id"] == first["id"] and again["outcome"] == "EXTENDED" and "reason was added" in again["note"]
