"""Freshness, verification, the lifecycle settings and the maintenance schedule.

Freshness is ``2^(−age / halfLife)`` (properties: 1 at age 0, ½ at one half-life,
monotone in age, in [0, 1]); the half-life grows with importance and never drops under
a day; verification moves only on evidence, one event per move; the stale report lists
shared active items only and changes nothing; settings of the wrong type or range are
refused naming the key; the schedule runs the largest due stage, records the stages it
includes, survives a corrupt state file, and its thread keeps going after a failure.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.lifecycle import schedule
from engram.lifecycle.freshness import UPGRADE, freshness, half_life_days
from engram.lifecycle.settings import DEFAULT_HALF_LIVES, LifecycleSettings, lifecycle_settings
from engram.store.model import Engram
from engram.vault import Vault
from tests.conftest import snapshot

SETTINGS = LifecycleSettings()
KINDS = st.sampled_from(sorted(DEFAULT_HALF_LIVES))
CREATED = "2026-01-01T00:00:00.000Z"


def at_days(days: float) -> str:
    from datetime import UTC, datetime, timedelta

    from mergedriver.codec import format_time

    return format_time(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=days))


@given(KINDS, st.floats(0, 1), st.floats(0, 3000), st.floats(0, 3000))
def test_freshness_is_one_at_creation_halves_per_half_life_and_falls_with_age(
    kind: str, importance: float, a: float, b: float
) -> None:
    item = Engram(id="x", title="A plain title", kind=kind, importance=importance, created_at=CREATED)
    days = half_life_days(item, SETTINGS)
    assert freshness(item, SETTINGS, CREATED) == (1.0, 0.0)
    half, age = freshness(item, SETTINGS, at_days(days))
    assert half == pytest.approx(0.5, abs=1e-3) and age == pytest.approx(days, abs=0.01)
    early, late = sorted((a, b))
    f_early = freshness(item, SETTINGS, at_days(early))[0]
    f_late = freshness(item, SETTINGS, at_days(late))[0]
    assert 0.0 <= f_late <= f_early <= 1.0


@given(KINDS, st.floats(0, 1), st.floats(0, 1))
def test_the_half_life_grows_with_importance_and_is_at_least_a_day(kind: str, a: float, b: float) -> None:
    low, high = sorted((a, b))
    item = Engram(id="x", title="Plain", kind=kind, importance=low)
    more = Engram(id="x", title="Plain", kind=kind, importance=high)
    assert 1.0 <= half_life_days(item, SETTINGS) <= half_life_days(more, SETTINGS)
    tiny = LifecycleSettings(half_life_days={kind: 0.01}, version_half_life_factor=0.0)
    assert half_life_days(Engram(id="x", title="uses v1.2", kind=kind), tiny) == 1.0


def test_freshness_counts_from_the_last_verification_and_a_future_stamp_is_fresh() -> None:
    verified = Engram(id="x", title="t", kind="fact", created_at="2020-01-01T00:00:00.000Z",
                      last_verified_at="2025-12-31T00:00:00.000Z")
    assert freshness(verified, SETTINGS, CREATED)[1] == 1.0
    future = Engram(id="x", title="t", kind="fact", created_at="2027-01-01T00:00:00.000Z")
    assert freshness(future, SETTINGS, CREATED) == (1.0, 0.0)  # a skewed clock never ages below zero
    assert freshness(Engram(id="x", title="t"), SETTINGS, CREATED) == (1.0, 0.0)  # no stamp at all


def test_an_unknown_kind_ages_like_an_observation() -> None:
    odd = Engram(id="x", title="t", kind="runbook-step", importance=0.5)
    obs = Engram(id="x", title="t", kind="observation", importance=0.5)
    assert half_life_days(odd, SETTINGS) == half_life_days(obs, SETTINGS) == 60.0


# --------------------------------------------------------------------------- verification


def test_upgrades_walk_the_ladder_one_step_per_piece_of_evidence(vault: Vault) -> None:
    item = vault.create("Retention", "Logs are kept 30 days.").item
    seen = []
    for evidence in ("the config says so", "the bucket lifecycle rule", "asked the SRE"):
        got = vault.upgrade_verification(item.id, evidence)
        seen.append(got.verification_status)
    assert seen == ["plausible", "probable", "verified"]
    got = vault.get(item.id)
    assert [(v["from"], v["to"], v["note"]) for v in got.verifications or ()] == [
        ("unverified", "plausible", "the config says so"), ("plausible", "probable", "the bucket lifecycle rule"),
        ("probable", "verified", "asked the SRE")]
    assert got.last_verified_at and all(v["by"] == vault.state.actor for v in got.verifications or ())
    assert UPGRADE["stale"] == "plausible"


def test_empty_evidence_is_refused_and_changes_nothing(vault: Vault) -> None:
    item = vault.create("Evidence", "needs evidence").item
    before = snapshot(vault)
    for evidence in ("", "   \n\t"):
        with pytest.raises(InvalidInput, match="evidence") as err:
            vault.upgrade_verification(item.id, evidence)
        assert err.value.hint
    assert snapshot(vault) == before


def test_verify_entry_records_the_premise_and_takes_the_item_off_the_stale_report(vault: Vault) -> None:
    item = vault.create("Node version", "CI builds with Node 18.19.", kind="fact").item
    vault.update(item.id, {"lastVerifiedAt": "2020-01-01T00:00:00Z"})
    assert [e.id for e in vault.stale_report().entries] == [item.id]
    got = vault.verify_entry(item.id, valid_while={"image": "ci-node18", "until": "2027"})
    assert got.valid_while == {"image": "ci-node18", "until": "2027"} and got.verification_status == "verified"
    assert got.verifications and got.verifications[-1]["note"] == "checked: still holds"
    assert vault.stale_report().entries == ()
    assert vault.stale_report(include_fresh=True).entries[0].premises == {"image": "ci-node18", "until": "2027"}


def test_the_stale_report_lists_shared_active_items_only(vault: Vault) -> None:
    old = "2019-01-01T00:00:00Z"
    shown = vault.create("Team fact", "The team fact ages.", kind="fact").item
    org = vault.create("Org fact", "The org fact ages.", kind="fact", visibility="org").item
    private = vault.create("Private fact", "My own fact ages.", kind="fact", visibility="private").item
    frozen = vault.create("Frozen fact", "A frozen fact ages.", kind="fact").item
    marked = vault.create("Marked stale", "Fresh but marked stale.", kind="fact").item
    for item in (shown, org, private, frozen):
        vault.update(item.id, {"lastVerifiedAt": old})
    vault.update(org.id, {"lastVerifiedAt": "2018-06-01T00:00:00Z"})
    vault.archive(frozen.id)
    vault.update(marked.id, {"verificationStatus": "stale"})
    before = snapshot(vault)
    report = vault.stale_report()
    assert [e.id for e in report.entries] == [org.id, shown.id, marked.id]  # longest since verified first
    assert report.checked == 3 and all(e.stale for e in report.entries)  # private and frozen: not checked
    assert [e.id for e in vault.stale_report(limit=1).entries] == [org.id]
    assert report.to_json()["entries"][0]["visibility"] == "org"
    assert snapshot(vault) == before


def test_marking_an_unknown_verification_state_is_refused(vault: Vault) -> None:
    from engram.lifecycle.freshness import mark_verification

    item = vault.create("Mark", "me").item
    before = snapshot(vault)
    with pytest.raises(InvalidInput):
        mark_verification(vault.state, item.id, "disputed")  # only resolve may dispute
    assert mark_verification(vault.state, item.id, "unverified").version == item.version  # already: no write
    assert snapshot(vault) == before


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize(("text", "key"), [
    ("hebbianShare: 2", "hebbianShare"), ("strongEdge: -0.1", "strongEdge"), ("staleBelow: 1.01", "staleBelow"),
    ("versionHalfLifeFactor: 3", "versionHalfLifeFactor"), ("forgetAfterFailures: 0", "forgetAfterFailures"),
    ("candidates: 0", "candidates"), ("halfLifeDays: {fact: 0}", "halfLifeDays.fact"),
    ("halfLifeDays: {skill: soon}", "halfLifeDays.skill"),
])
def test_out_of_range_lifecycle_settings_are_refused_naming_the_key(vault: Vault, text: str, key: str) -> None:
    (vault.root / "engram.yaml").write_text(f"lifecycle:\n  {text}\n", encoding="utf-8")
    with Vault.open(vault.root) as fresh, pytest.raises(InvalidInput, match=f"lifecycle.{key}") as err:
        lifecycle_settings(fresh.state)
    assert err.value.hint


def test_settings_given_in_the_file_are_the_ones_used(vault: Vault) -> None:
    (vault.root / "engram.yaml").write_text(
        "lifecycle:\n  feedbackStep: 0.2\n  archiveAfterFailures: 1\n  halfLifeDays: {fact: 10}\n",
        encoding="utf-8")
    with Vault.open(vault.root) as fresh:
        settings = lifecycle_settings(fresh.state)
        assert (settings.feedback_step, settings.archive_after_failures) == (0.2, 1)
        assert settings.half_life_days["fact"] == 10
        item = fresh.create("Flaky once", "fails once", kind="fact").item
        result = fresh.feedback(item.id, "failed")
        assert result.changes[0].importance_delta == pytest.approx(-0.2 * 0.5)
        assert len(result.proposals) == 1  # one failure is enough here


# --------------------------------------------------------------------------- schedule


def write_schedule(vault: Vault, text: str) -> Vault:
    (vault.root / "engram.yaml").write_text(f"lifecycle:\n  schedule: {text}\n", encoding="utf-8")
    return Vault.open(vault.root)


def test_nothing_is_due_when_no_stage_is_scheduled(vault: Vault) -> None:
    assert schedule.due_stage(vault.state, at=1e12) is None
    assert schedule.run_due(vault.state, at=1e12) is None
    assert not (vault.state.state_dir / schedule.STATE_FILE).exists()


def test_a_deep_run_counts_as_a_light_run_and_the_largest_due_stage_wins(vault: Vault) -> None:
    with write_schedule(vault, "{light: 10, deep: 30}") as fresh:
        state = fresh.state
        assert schedule.run_due(state, at=100_000.0) == "deep"
        runs = json.loads((state.state_dir / schedule.STATE_FILE).read_text())
        assert runs == {"light": 100_000.0, "deep": 100_000.0}  # rem is off: never recorded
        assert schedule.due_stage(state, at=100_000.0 + 9 * 60) is None
        assert schedule.run_due(state, at=100_000.0 + 10 * 60) == "light"
        assert schedule.due_stage(state, at=100_000.0 + 30 * 60) == "deep"


def test_a_corrupt_schedule_file_means_everything_is_due_again(vault: Vault) -> None:
    with write_schedule(vault, "{light: 5}") as fresh:
        path = fresh.state.state_dir / schedule.STATE_FILE
        for junk in ("{not json", '["light"]', '{"light": "yesterday"}'):
            path.write_text(junk, encoding="utf-8")
            assert schedule.due_stage(fresh.state, at=1_000.0) == "light"
        assert schedule.run_due(fresh.state, at=1_000.0) == "light"
        assert json.loads(path.read_text()) == {"light": 1_000.0}


def test_the_schedule_is_shared_by_every_process_on_the_machine(vault: Vault) -> None:
    with write_schedule(vault, "{light: 60}") as one, Vault.open(vault.root) as two:
        assert schedule.run_due(one.state, at=50_000.0) == "light"
        assert schedule.run_due(two.state, at=50_000.0 + 60) is None  # the other server ran it


def test_the_scheduler_thread_survives_a_failing_run_and_stops_promptly(vault: Vault) -> None:
    (vault.root / "engram.yaml").write_text("lifecycle:\n  schedule: {light: nope}\n", encoding="utf-8")
    calls: list[int] = []
    with Vault.open(vault.root) as broken:
        def current() -> object:
            calls.append(1)
            # The first tick finds no vault open yet; the others a vault whose schedule
            # does not parse, so every run fails.
            return None if len(calls) == 1 else broken.state

        runner = schedule.Scheduler(current, tick=0.02).start()  # type: ignore[arg-type]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(calls) < 4:
            time.sleep(0.02)
        runner.stop()
    assert len(calls) >= 4  # it kept ticking after the failures
    settled = len(calls)
    time.sleep(0.1)
    assert len(calls) == settled  # and it stopped


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused_not_a_silent_slice(vault: Vault, limit: int) -> None:
    """``limit=-1`` used to drop the *oldest* stale item (the one most worth checking) and
    ``limit=0`` to list everything."""
    item = vault.create("Old", "An old fact.", kind="fact").item
    vault.update(item.id, {"lastVerifiedAt": "2019-01-01T00:00:00Z"})
    with pytest.raises(InvalidInput, match="limit must be at least 1") as err:
        vault.stale_report(limit=limit)
    assert err.value.hint
