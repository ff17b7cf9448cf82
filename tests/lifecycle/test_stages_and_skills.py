"""Maintenance stages propose and never rewrite; skills rank by recall and success.

From ``engram.lifecycle.maintenance``: every finding is a proposal file, a run twice
writes nothing new, deep looks only at active and draft items, rem proposes links,
retypes, stale marks and archives on the evidence it names. From
``engram.lifecycle.skills``: steps are an ordered list (repeats kept), the success rate
is ``(s + 1) / (s + f + 2)`` and counts feedback not yet folded, and ``find_skill``
blends relevance with it.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.lifecycle.skills import success_rate
from engram.vault import Vault
from tests.conftest import snapshot


def markdown(vault: Vault) -> dict[str, bytes]:
    return {p: b for p, b in snapshot(vault).items() if p.endswith(".md")}


def test_an_unknown_stage_is_refused_before_the_fold(vault: Vault) -> None:
    item = vault.create("Counted", "has pending feedback").item
    vault.feedback(item.id, "helped")
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="light, deep or rem"):
        vault.maintain("weekly")
    assert snapshot(vault) == before and vault.get(item.id).effective_retrievals == 0


def test_light_folds_and_proposes_nothing(vault: Vault) -> None:
    item = vault.create("Flaky job", "fails a lot").item
    for _ in range(3):
        vault.feedback(item.id, "failed")
    proposals_before = {p.id for p in vault.proposals()}
    report = vault.maintain("light")
    assert report.folded is not None and report.folded.feedback == 3 and report.proposed == ()
    assert vault.get(item.id).failed_uses == 3
    assert {p.id for p in vault.proposals()} == proposals_before  # only feedback itself proposed
    assert report.to_json()["folded"]["feedback"]["entries"] == 3


def test_deep_ignores_retired_items_and_a_second_run_writes_nothing(vault: Vault) -> None:
    text = "Cap retries at 3 per request and back off exponentially."
    live = [vault.create("Retry budgets", text, domain=["eng"], dedupe=False).item for _ in range(2)]
    frozen = vault.create("Retry budgets", text, domain=["eng"], dedupe=False).item
    vault.archive(frozen.id)
    before = markdown(vault)
    first = vault.maintain("deep")
    assert first.duplicates == (tuple(sorted(i.id for i in live)),)
    assert markdown(vault) == before
    files = snapshot(vault)
    second = vault.maintain("deep")
    assert second.duplicates == first.duplicates and second.clusters == first.clusters
    assert snapshot(vault) == files  # the same proposal, unchanged: not rewritten


def test_the_merge_keeper_is_the_most_reinforced_item(vault: Vault) -> None:
    text = "Rotate the signing keys every ninety days and keep the old key for a week."
    a, b, c = (vault.create("Key rotation", text, domain=["sec"], dedupe=False).item for _ in range(3))
    vault.update(b.id, {"reinforcementScore": 4.0})
    vault.maintain("deep")
    merge = vault.proposals(kind="merge")[0]
    assert merge.payload["keep"] == b.id and sorted(merge.payload["absorb"]) == sorted([a.id, c.id])


def test_louvain_clusters_are_the_same_on_every_run(vault: Vault) -> None:
    hubs = []
    for group in ("alpha", "beta"):
        members = [vault.create(f"{group} note {n}", f"{group} topic, detail {n * 13}.", domain=[group],
                                dedupe=False).item for n in range(5)]
        for a in members:
            for b in members:
                if a.id < b.id:
                    vault.link(a.id, "similar_to", b.id, weight=0.9)
        hubs.append(members[0])
    vault.link(hubs[0].id, "similar_to", hubs[1].id, weight=0.1)  # one component of ten: Louvain splits it
    runs = [vault.maintain("deep").clusters for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert sorted(len(c.ids) for c in runs[0]) == [5, 5]
    assert {c.domain for c in runs[0]} == {"alpha", "beta"}


def test_rem_proposes_archive_stale_and_link_on_named_evidence(vault: Vault) -> None:
    failing = vault.create("Restart the cache by hand", "SSH in and restart it.", domain=["ops"]).item
    for _ in range(3):
        vault.feedback(failing.id, "failed")
    vault.feedback(failing.id, "helped")
    aged = vault.create("CI image", "CI builds on the ubuntu 20.04 image.", kind="fact", domain=["ci"]).item
    mine = vault.create("My CI notes", "My builds use the ubuntu 20.04 image.", kind="fact", domain=["mine"],
                        visibility="private").item
    for item in (aged, mine):
        vault.update(item.id, {"lastVerifiedAt": "2019-01-01T00:00:00Z"})
    one = vault.create("Kafka consumer lag", "Consumer lag on the orders topic alerts above ten thousand messages.",
                       domain=["kafka"]).item
    two = vault.create("Kafka lag alerts", "Lag alerts on the orders topic page the on-call above ten thousand.",
                       domain=["kafka"]).item
    before = markdown(vault)
    vault.maintain("rem")
    # the fold wrote counters into the failing item; nothing else changed
    assert {p for p, b in markdown(vault).items() if before.get(p) != b} == {failing.path}
    archive = vault.proposals(kind="archive", target=failing.id)
    assert archive and "failed 3 time(s), helped 1" in archive[0].reason
    stale = vault.proposals(kind="stale")
    assert [p.targets for p in stale] == [(aged.id,)]  # not the private one
    links = vault.proposals(kind="link")
    assert [set(p.targets) for p in links] == [{one.id, two.id}]
    vault.accept(links[0].id)
    assert vault.synapses(one.id)[0].kind == "similar_to"
    vault.maintain("rem")
    assert len(vault.proposals(kind="link", status=None)) == 1  # linked now: not proposed again


def test_rem_proposes_to_retype_a_similar_link_whose_ends_contradict(vault: Vault) -> None:
    a = vault.create("Production caching", "Caching is enabled in production.", domain=["web"]).item
    b = vault.create("Production caching", "Caching is disabled in production.", domain=["web"], dedupe=False).item
    vault.link(a.id, "similar_to", b.id, weight=0.7)
    vault.maintain("rem")
    retype = vault.proposals(kind="retype")
    assert len(retype) == 1 and retype[0].payload["to"] == "contradicts"
    vault.accept(retype[0].id)
    assert [(s.kind, s.weight) for s in vault.synapses(a.id)] == [("contradicts", 0.7)]


# --------------------------------------------------------------------------- skills


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_the_success_rate_is_laplace_smoothed_and_monotone(s: int, f: int) -> None:
    rate = success_rate(s, f)
    assert 0.0 < rate < 1.0 and rate == round((s + 1) / (s + f + 2), 4)
    assert success_rate(s + 1, f) >= rate >= success_rate(s, f + 1)
    assert success_rate(0, 0) == 0.5


@pytest.mark.parametrize("steps", [[], ["", "   "]])
def test_a_skill_without_steps_is_refused_and_nothing_is_written(vault: Vault, steps: list[str]) -> None:
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="step") as err:
        vault.create_skill("Do a thing", steps)
    assert err.value.hint
    assert snapshot(vault) == before


def test_steps_keep_their_order_and_repeats_and_the_body_numbers_them(vault: Vault) -> None:
    made = vault.create_skill("Wait out a lock", ["check the lock", "wait", "wait", "retry"],
                              preconditions=["the job is idempotent", "the job is idempotent"])
    got = vault.get(made.id)
    assert got.kind == "skill" and got.steps == ("check the lock", "wait", "wait", "retry")
    assert got.preconditions == ("the job is idempotent",)  # a set
    assert got.content == "1. check the lock\n2. wait\n3. wait\n4. retry\n"
    assert vault.create_skill("Wait out a lock", ["check the lock", "wait", "wait", "retry"]).outcome == "DUPLICATE"


def test_skills_rank_by_success_counting_feedback_not_yet_folded(vault: Vault) -> None:
    good = vault.create_skill("Rotate the TLS certificate", ["request", "upload", "reload"], domain=["tls"])
    bad = vault.create_skill("Renew the TLS certificate by hand", ["ssh", "copy", "restart"], domain=["tls"])
    other = vault.create_skill("Vacuum the orders table", ["lock", "vacuum"], domain=["db"])
    for _ in range(3):
        vault.feedback(good.id, "helped")
    for _ in range(2):
        vault.feedback(bad.id, "failed")
    listed = vault.skills()
    assert [s.id for s in listed] == [good.id, other.id, bad.id]
    assert (listed[0].successes, listed[0].failures, listed[0].success_rate) == (3, 0, 0.8)
    assert [s.id for s in vault.skills(domain="tls")] == [good.id, bad.id]
    vault.fold()
    assert [s.success_rate for s in vault.skills()] == [0.8, 0.5, 0.25]  # the same after the fold


def test_find_skill_returns_only_skills_and_prefers_the_one_that_works(vault: Vault) -> None:
    vault.create("Rotating TLS certificates", "Notes on how certificate rotation went last year.")
    works = vault.create_skill("Rotate the TLS certificate on the ingress", ["request", "upload", "reload"])
    flaky = vault.create_skill("Rotate the TLS certificate on the ingress by hand", ["ssh", "copy", "reload"])
    for _ in range(4):
        vault.feedback(works.id, "helped")
        vault.feedback(flaky.id, "failed")
    found = vault.find_skill("rotate the tls certificate on the ingress")
    assert [s.id for s in found][:2] == [works.id, flaky.id]
    assert all(vault.get(s.id).kind == "skill" for s in found)
    assert found[0].score is not None and found[1].score is not None and found[0].score > found[1].score
    assert vault.find_skill("rotate the tls certificate", limit=1)[0].id == works.id


@pytest.mark.parametrize("limit", [0, -1])
def test_a_skill_limit_below_one_is_refused(vault: Vault, limit: int) -> None:
    """0 returned no skills and -1 dropped the last one, both without a word."""
    vault.create_skill("Rotate the TLS certificate", ["request", "upload", "reload"])
    for call in (lambda: vault.skills(limit=limit), lambda: vault.find_skill("rotate the certificate", limit=limit)):
        with pytest.raises(InvalidInput, match="limit must be at least 1"):
            call()
