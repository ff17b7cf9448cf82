"""The verification ladder with ``probable`` and ``refuted`` (issue 29, item 11).

unverified → plausible → probable → verified, one step per piece of evidence; ``refuted``
beside the ladder, set only on evidence by :func:`engram.lifecycle.freshness.refute`,
which keeps the item and its text and records what was found false. A refuted item is
not lifted by ``upgrade_verification`` nor by an accepted maintenance proposal; only
someone who checked it again (``verify_entry``) reinstates it. Maintenance proposes each
rung on rising evidence. A Co-Engram repository's ``probable`` and ``refuted`` survive
the import.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.lifecycle.maintenance import VERIFY_AFTER
from engram.vault import Vault
from tests.conftest import COMPAT, snapshot


def test_upgrades_climb_through_probable(vault: Vault) -> None:
    item = vault.create("Retention", "Logs are kept 30 days.").item
    seen = [vault.upgrade_verification(item.id, e).verification_status
            for e in ("the config says so", "the bucket rule agrees", "asked the SRE")]
    assert seen == ["plausible", "probable", "verified"]
    assert [(v["from"], v["to"]) for v in vault.get(item.id).verifications or ()] == [
        ("unverified", "plausible"), ("plausible", "probable"), ("probable", "verified")]


def test_refute_records_the_evidence_and_keeps_the_item(vault: Vault) -> None:
    item = vault.create("Retention", "Logs are kept 30 days.", kind="fact").item
    vault.upgrade_verification(item.id, "the config says so")
    got = vault.refute(item.id, "the bucket deletes logs after 7 days")
    assert got.verification_status == "refuted" and got.status == "active"
    assert got.content == item.content and got.title == item.title  # what was found false stays readable
    last = (got.verifications or ())[-1]
    assert (last["from"], last["to"], last["note"]) == ("plausible", "refuted", "the bucket deletes logs after 7 days")
    assert last["by"] == vault.state.actor and got.last_verified_at is None


def test_a_refuted_item_climbs_only_through_a_new_check(vault: Vault) -> None:
    item = vault.create("Retention", "Logs are kept 30 days.").item
    vault.refute(item.id, "the bucket deletes logs after 7 days")
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="refuted") as err:
        vault.upgrade_verification(item.id, "someone said so")
    assert "verify" in (err.value.hint or "") and snapshot(vault) == before
    back = vault.verify_entry(item.id, "the retention was raised to 30 days again")
    assert back.verification_status == "verified" and back.last_verified_at
    assert [v["to"] for v in back.verifications or ()] == ["refuted", "verified"]


@pytest.mark.parametrize("evidence", ["", "  \n\t"])
def test_refute_without_evidence_is_refused_and_changes_nothing(vault: Vault, evidence: str) -> None:
    item = vault.create("Retention", "Logs are kept 30 days.").item
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="evidence") as err:
        vault.refute(item.id, evidence)
    assert err.value.hint and snapshot(vault) == before


def test_maintenance_proposes_each_rung_on_rising_evidence(vault: Vault) -> None:
    item = vault.create("Use connection pooling", "pgbouncer in transaction mode.", domain=["ops"]).item
    climbed = []
    for rung in (1, 2, 3):
        while vault.get(item.id).effective_retrievals < rung * VERIFY_AFTER - 1:
            vault.feedback(item.id, "helped")
            vault.maintain("light")
        vault.maintain("rem")  # one short of the rung: nothing to propose yet
        assert not vault.proposals(kind="verify", target=item.id)
        vault.feedback(item.id, "helped")
        vault.maintain("rem")
        [prop] = vault.proposals(kind="verify", target=item.id)
        vault.accept(prop.id)
        climbed.append(vault.get(item.id).verification_status)
    assert climbed == ["plausible", "probable", "verified"]


def test_an_accepted_verify_proposal_does_not_lift_a_refuted_item(vault: Vault) -> None:
    item = vault.create("Use connection pooling", "pgbouncer in transaction mode.", domain=["ops"]).item
    for _ in range(VERIFY_AFTER):
        vault.feedback(item.id, "helped")
    vault.maintain("rem")
    [prop] = vault.proposals(kind="verify", target=item.id)
    vault.refute(item.id, "pgbouncer breaks prepared statements here")
    with pytest.raises(InvalidInput, match="refuted"):
        vault.accept(prop.id)
    assert vault.get(item.id).verification_status == "refuted"
    vault.dismiss(prop.id, note="refuted since")
    for _ in range(2 * VERIFY_AFTER):
        vault.feedback(item.id, "helped")
    vault.maintain("rem")  # however often it helps, maintenance proposes no rung for it
    assert vault.proposals(kind="verify", target=item.id) == []


def test_co_engram_import_keeps_probable_and_refuted(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "co-engram"
    shutil.copytree(COMPAT, source)
    for path in source.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    first = source / "engineering/python/frozen-dataclass-copy.md"
    second = source / "engineering/python/immutable-value-objects.md"
    first.write_text(first.read_text().replace("verificationStatus: unverified", "verificationStatus: refuted"))
    second.write_text(second.read_text().replace("verificationStatus: plausible", "verificationStatus: probable"))
    report = vault.run_import(vault.read_import(source))
    assert report.counts["NEW"] == 2 and report.counts["BAD"] == 0
    assert vault.get("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ").verification_status == "refuted"
    assert vault.get("01J8ZQ7TRY9F8G7H6J5K4L3M2N").verification_status == "probable"
    assert "verificationStatus: refuted" in (vault.root / "engineering/python/frozen-dataclass-copy.md").read_text()
