"""Maintenance stages propose (never rewrite); proposals merge; freshness; history with git."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.lifecycle import proposals, schedule
from engram.lifecycle.freshness import freshness, half_life_days
from engram.lifecycle.settings import lifecycle_settings
from engram.store.model import Engram
from engram.vault import Vault
from tests.conftest import snapshot
from tests.git_helpers import bare_origin, clone_machine, first_machine


def test_deep_finds_duplicates_and_proposes_a_merge_that_loses_nothing(vault: Vault) -> None:
    a = vault.create("Retry budgets", "Cap retries at 3 per request and back off.", domain=["eng"], dedupe=False).item
    b = vault.create("Retry budgets", "Cap retries at 3 per request and back off.", domain=["eng"], dedupe=False).item
    c = vault.create("Unrelated", "Lunch is at noon.", domain=["eng"]).item
    before = {p: d for p, d in snapshot(vault).items() if p.endswith(".md")}
    report = vault.maintain("deep")
    assert report.duplicates == (tuple(sorted((a.id, b.id))),)
    assert {p: d for p, d in snapshot(vault).items() if p.endswith(".md")} == before  # only proposals written
    merge = vault.proposals(kind="merge")[0]
    assert set(merge.targets) == {a.id, b.id} and c.id not in merge.targets
    vault.accept(merge.id)
    keep, other = (vault.get(merge.payload["keep"]), vault.get(merge.payload["absorb"][0]))
    assert keep.status == "active" and other.status == "superseded" and other.superseded_by == keep.id
    assert "Cap retries at 3" in keep.content
    assert vault.maintain("deep").proposed == ()  # decided: not proposed again


def test_rem_proposes_verification_links_and_patterns(vault: Vault) -> None:
    items = [vault.create(f"Postgres bloat fix {n}", f"pg_repack fixed bloat on table {n} during the night.",
                          domain=["ops", "postgres"], dedupe=False).item for n in range(4)]
    for a, b in itertools.pairwise(items):
        vault.link(a.id, "similar_to", b.id, weight=0.8)
    helped = vault.create("Use connection pooling", "pgbouncer in transaction mode.", domain=["ops"]).item
    for _ in range(3):
        vault.feedback(helped.id, "helped")
    report = vault.maintain("rem")
    kinds = {p.kind for p in vault.proposals()}
    assert {"pattern", "verify"} <= kinds
    verify = next(p for p in vault.proposals(kind="verify") if p.targets == (helped.id,))
    vault.accept(verify.id)
    assert vault.get(helped.id).verification_status == "plausible"
    assert report.clusters and report.clusters[0].ids == tuple(sorted(i.id for i in items))
    pattern = vault.proposals(kind="pattern")[0]
    vault.dismiss(pattern.id, note="not a pattern")
    assert pattern.id not in {p.id for p in vault.proposals()}
    vault.maintain("rem")
    assert vault.proposal(pattern.id).status == "dismissed"


def test_half_life_depends_on_kind_importance_and_versions() -> None:
    settings = lifecycle_settings_default()
    fact = Engram(id="a", title="The build uses Node 18.19", kind="fact", importance=0.5)
    pattern = Engram(id="b", title="Prefer composition over inheritance", kind="pattern", importance=0.5)
    important = Engram(id="c", title="Backups are encrypted", kind="fact", importance=1.0)
    assert half_life_days(fact, settings) < half_life_days(important, settings) < half_life_days(pattern, settings)
    old = Engram(id="d", title="x", kind="fact", created_at="2020-01-01T00:00:00.000Z")
    assert freshness(old, settings, "2026-01-01T00:00:00.000Z")[0] < 0.01


@given(st.text(alphabet="0123456789.vVersionERSION \n-_ab", max_size=40))
def test_the_version_hint_is_in_every_text_that_names_a_version(text: str) -> None:
    """The fast pre-scan never hides a version: a half-life shortened before is still."""
    from engram.lifecycle.freshness import _VERSION, _VERSION_HINT

    if _VERSION.search(text):
        assert _VERSION_HINT.search(text)


def test_a_version_in_any_case_shortens_the_half_life() -> None:
    settings = lifecycle_settings_default()
    plain = half_life_days(Engram(id="a", title="Deploys use the blue pool", kind="fact"), settings)
    for title in ("Deploys use pool v2.3", "Deploys use VERSION 4", "Pool 10.0 is the default"):
        assert half_life_days(Engram(id="b", title=title, kind="fact"), settings) < plain, title


def lifecycle_settings_default():  # type: ignore[no-untyped-def]
    from engram.lifecycle.settings import LifecycleSettings

    return LifecycleSettings()


def test_stale_report_lists_oldest_verified_first_and_changes_nothing(vault: Vault) -> None:
    a = vault.create("Old fact", "The build uses Node 14.1.", kind="fact").item
    b = vault.create("Fresh fact", "The build uses Node 20.1.", kind="fact").item
    vault.update(a.id, {"lastVerifiedAt": "2020-01-01T00:00:00Z", "validWhile": "while CI runs on the old image"})
    before = snapshot(vault)
    report = vault.stale_report()
    assert [e.id for e in report.entries] == [a.id] and report.entries[0].premises == "while CI runs on the old image"
    assert snapshot(vault) == before and vault.get(a.id).verification_status == "unverified"
    assert [e.id for e in vault.stale_report(include_fresh=True).entries] == [a.id, b.id]
    vault.verify_entry(a.id, "still on Node 14 there")
    assert vault.stale_report().entries == ()


def test_a_schedule_runs_the_due_stage_once(vault: Vault) -> None:
    (vault.root / "engram.yaml").write_text("lifecycle:\n  schedule: {light: 1, rem: 60}\n", encoding="utf-8")
    with Vault.open(vault.root) as fresh:
        state = fresh.state
        assert schedule.due_stage(state, at=10_000.0) == "rem"
        assert schedule.run_due(state, at=10_000.0) == "rem"
        assert schedule.run_due(state, at=10_030.0) is None
        assert schedule.run_due(state, at=10_070.0) == "light"
        runs = json.loads((state.state_dir / schedule.STATE_FILE).read_text())
        assert runs["rem"] == 10_000.0 and runs["light"] == 10_070.0
        assert lifecycle_settings(state).schedule["deep"] == 0


def test_history_shows_a_teammates_merged_change(tmp_path) -> None:  # type: ignore[no-untyped-def]
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    item = alice.create("Cron runs in UTC", "Cron jobs run in UTC.").item
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    bob.update(item.id, {"summary": "all schedulers"})
    bob.sync()
    alice.sync()
    found = alice.timeline(item.id)
    assert [e.action for e in found.audit] == ["create"]  # alice's machine never saw bob's edit
    assert len(found.commits) >= 2
    assert any("by bob" in c.subject for c in found.commits)  # the teammate's change, through git
    alice.close()
    bob.close()


def test_proposals_decided_differently_on_two_clones_merge_to_the_accepted_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    item = alice.create("Flaky", "fails a lot").item
    for _ in range(3):
        alice.feedback(item.id, "failed")
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    prop = alice.proposals()[0]
    alice.dismiss(prop.id, note="keep it")
    bob.accept(prop.id, note="freeze it")
    for vault in (alice, bob, alice, bob):
        vault.sync()
    for vault in (alice, bob):
        vault.refresh()
        assert vault.proposal(prop.id).status == "accepted" and vault.proposal(prop.id).decided_by == "bob"
    assert (alice.root / prop.path).read_bytes() == (bob.root / prop.path).read_bytes()
    alice.close()
    bob.close()


@pytest.mark.parametrize("stage", ["light", "deep", "rem"])
def test_every_stage_runs_on_an_empty_vault(vault: Vault, stage: str) -> None:
    assert vault.maintain(stage).stage == stage


def test_plain_git_pull_merges_proposals_through_the_driver(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.git_helpers import commit_all, git

    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    item = alice.create("Flaky", "fails a lot").item
    for _ in range(3):
        alice.feedback(item.id, "failed")
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    prop = alice.proposals()[0]
    assert git(alice.root, "check-attr", "merge", "--", prop.path).stdout.strip().endswith(": engram")
    alice.dismiss(prop.id, note="keep it")
    commit_all(alice, "dismiss")
    git(alice.root, "push", "--quiet", "origin", "HEAD:main")
    bob.accept(prop.id, note="freeze it")
    commit_all(bob, "accept")
    pulled = git(bob.root, "pull", "--no-rebase", "--no-edit", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stderr
    bob.refresh()
    merged = bob.proposal(prop.id)
    assert merged.status == "accepted" and merged.decided_by == "bob" and merged.note == "freeze it"
    alice.close()
    bob.close()


def test_the_scheduler_thread_runs_due_stages_and_stops(vault: Vault) -> None:
    import time as _time

    (vault.root / "engram.yaml").write_text("lifecycle:\n  schedule: {light: 0.001}\n", encoding="utf-8")
    with Vault.open(vault.root) as fresh:
        item = fresh.create("Scheduled", "folded by the scheduler").item
        fresh.feedback(item.id, "helped")
        runner = schedule.Scheduler(lambda: fresh.state, tick=0.05).start()
        deadline = _time.monotonic() + 20
        while _time.monotonic() < deadline and fresh.get(item.id).effective_retrievals == 0:
            _time.sleep(0.05)
        runner.stop()
        assert fresh.get(item.id).effective_retrievals == 1
        assert (fresh.state.state_dir / schedule.STATE_FILE).is_file()


def test_empty_notes_with_one_title_are_no_duplicates(vault: Vault) -> None:
    """Dendron and Obsidian folder notes: an empty "2021" page in each of two hierarchies
    was grouped for a merge (13 of 20 groups in Dendron's own vault). An empty note holds
    no knowledge to merge, only its place."""
    for folder in ("office-hours", "reading-series", "journal"):
        (vault.root / folder).mkdir()
        (vault.root / folder / "2021.md").write_text("---\ntitle: '2021'\n---\n\n", encoding="utf-8")
    copy = "Office hours run every Tuesday at 16:00 UTC on Discord; bring a question."
    for folder in ("office-hours", "journal"):
        (vault.root / folder / "about.md").write_text(f"# About\n\n{copy}\n", encoding="utf-8")
    report = vault.maintain("deep")
    groups = [sorted(vault.get(i).path or "" for i in g) for g in report.duplicates]
    assert groups == [["journal/about.md", "office-hours/about.md"]]  # a real copy still is one


def test_persons_notes_get_no_proposal_that_writes_into_them(vault: Vault) -> None:
    """On kepano's and Dendron's vaults, maintenance rem proposed marking every old note
    stale (1,012 of 1,013 in Dendron's) and merging empty hierarchy pages; accepting one
    wrote id, status, version and verifications into a person's note. Links and patterns
    (files of their own) may still be proposed; a proposal filed before is refused."""
    page = "A note about the reading group: we meet on Thursdays to discuss one essay a week in the library."
    for folder in ("books", "club"):
        (vault.root / folder).mkdir()
        (vault.root / folder / "Reading group.md").write_text(
            f"---\ncreated: 2019-01-01\ntags:\n  - to-read\n---\n\n{page}\n", encoding="utf-8")
    before = snapshot(vault)
    report = vault.maintain("rem")
    assert len(report.duplicates) == 1  # the copies are reported ...
    kinds = {vault.proposal(p).kind for p in report.proposed}
    assert not kinds & {"merge", "stale", "verify", "archive"}, kinds  # ... never proposed for a write
    note = vault.get("books/Reading group.md")
    with vault.state.lock.hold():
        stale, _ = proposals.propose(vault.state, "stale", [note.id], title="Mark it stale", reason="old",
                                     payload={"to": "stale"}, score=1.0)
    with pytest.raises(InvalidInput, match="a person's note") as refused:
        vault.accept(stale.id)
    assert refused.value.hint and f"engram dismiss {stale.id}" in refused.value.hint
    assert {k: v for k, v in snapshot(vault).items() if not k.startswith("proposals/")} == before
