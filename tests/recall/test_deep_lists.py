"""Deep lists: ``limit`` N returns N hits whenever N items match, under every explicit
tier and every relevance floor; past the token budget the rest come as catalog lines and
the answer says the budget was reached (issue 14's two collapses: ``tier: auto``
reserving more than the budget, and ``minRelevance: 0`` in ``engram.yaml``). Under
``tier: auto`` the budget is a bound (issue 29): the hits that fit, and how many were
left out with the budget that returns all N."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.recall.search import MAX_LIMIT
from engram.vault import Vault

MATCHING = 230  # more than the largest limit
QUERY = "the harbor tides and lantern wicks by the quay"  # most items hold some of it


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("deep") / "vault"
    vault = Vault.init(root, actor="tester")
    words = ("harbor", "tides", "lantern", "wicks", "quay")
    for i in range(MATCHING):
        held = " ".join(words[j] for j in range(5) if (i >> j) & 1 or j == i % 5)
        body = f"Note {i} about {held}. " + "Filler text of a realistic length for a body. " * (i % 7 + 1)
        vault.create(f"Shore note {i}", body, domain=["shore"], summary=f"On {held}", dedupe=False)
    vault.create("Unrelated", "Nothing to do with the sea.", domain=["other"])
    vault.close()
    yield root


@pytest.mark.parametrize("floor", [None, 0.0, 0.3, 0.9])
@pytest.mark.parametrize("tier", ["auto", "catalog", "digest", "content"])
def test_limit_n_returns_n_under_every_tier_and_floor(deep: Path, tier: str, floor: float | None) -> None:
    if floor is not None:
        (deep / "engram.yaml").write_text(f"formatVersion: 1\nrecall:\n  minRelevance: {floor}\n")
    else:
        (deep / "engram.yaml").write_text("formatVersion: 1\n")
    vault = Vault.open(deep)
    try:
        for limit in (1, 10, 100, MAX_LIMIT):
            result = vault.search(QUERY, limit=limit, tier=tier, record=False)
            if result.status == "no_confident_match":  # only a floor no answer reaches
                assert floor == 0.9 and result.hits == () and result.near_misses
                assert result.best_relevance is not None and result.best_relevance < 0.9
                continue
            needed = 2000  # the default budget
            if tier == "auto":
                assert result.tokens <= 2000 and len(result.hits) + result.left_out == limit, (floor, limit)
                if result.left_out:
                    assert result.budget_reached and result.needed_budget > 2000
                    needed = result.needed_budget
                    result = vault.search(QUERY, limit=limit, budget=needed, record=False)
                    assert result.left_out == 0 and result.tokens <= needed
            assert len(result.hits) == limit, (tier, floor, limit)
            assert len({h.id for h in result.hits}) == limit
            scores = [h.score for h in result.hits]
            assert scores == sorted(scores, reverse=True)
            if tier == "catalog":
                assert {h.tier for h in result.hits} == {"catalog"}
                assert result.budget_reached == (result.tokens > 2000)  # lines are never cut
            else:
                wanted = "content" if tier == "auto" else tier
                assert result.hits[0].tier == (wanted if tier != "auto" else result.hits[0].tier)
                richer = [h for h in result.hits if h.tier != "catalog"]
                assert (richer or tier == "auto") and result.hits[: len(richer)] == tuple(richer)  # best-first
                if limit >= 100 and tier != "auto":  # 100 catalog lines alone exceed the default 2,000 tokens
                    assert result.budget_reached and result.hits[-1].tier == "catalog"
                if not result.budget_reached:
                    assert all(h.tier == wanted for h in result.hits) and result.tokens <= needed
    finally:
        vault.close()


def test_an_explicit_budget_bounds_upgrades_not_hits(deep: Path) -> None:
    (deep / "engram.yaml").write_text("formatVersion: 1\n")
    vault = Vault.open(deep)
    try:
        tight = vault.search(QUERY, limit=50, tier="content", budget=10, record=False)
        assert len(tight.hits) == 50 and tight.budget_reached
        assert tight.hits[0].tier == "content" and tight.hits[0].content  # the first always
        assert {h.tier for h in tight.hits[1:]} == {"catalog"}
        roomy = vault.search(QUERY, limit=5, tier="content", budget=100_000, record=False)
        assert not roomy.budget_reached and all(h.content for h in roomy.hits)
        assert roomy.tokens <= 100_000
    finally:
        vault.close()


def test_a_confident_answer_keeps_its_weaker_hits(deep: Path) -> None:
    (deep / "engram.yaml").write_text("formatVersion: 1\nrecall:\n  minRelevance: 0.5\n")
    vault = Vault.open(deep)
    try:
        result = vault.search(QUERY, limit=MAX_LIMIT, tier="catalog", record=False)
        assert result.status == "ok" and len(result.hits) == MAX_LIMIT
        weak = [h for h in result.hits if h.relevance is not None and h.relevance < result.floor]
        assert weak  # below the floor, still listed: the floor decides the answer, not the list
        complete = [h for h in result.hits if not h.explanation.missing_terms]
        assert complete and result.hits[: len(complete)] == tuple(complete)  # all words first
    finally:
        vault.close()


# ------------------------------------------------------------- the candidate budget
#: Words from common to rare: item i holds word w with probability 0.9 / (1 + w/3).
VOCAB = ("amber", "basalt", "cobalt", "dolomite", "emery", "feldspar", "garnet", "halite", "iolite",
         "jasper", "kyanite", "lazurite", "malachite", "nepheline", "olivine", "pyrite", "quartz",
         "rutile", "spinel", "topaz")


@pytest.fixture(scope="module")
def minerals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("minerals") / "vault"
    vault = Vault.init(root, actor="tester")
    rng = random.Random(3)
    for i in range(150):
        held = [w for j, w in enumerate(VOCAB) if rng.random() < 0.9 / (1 + j / 3)] or [VOCAB[-1]]
        where = ["rocks", ("north", "south", "south", "east", "east", "east")[i % 6]]
        vault.create(f"Sample {i}", " ".join(held * rng.randint(1, 3)), domain=where, dedupe=False)
    vault.close()
    yield root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4, unique=True),
    budget=st.sampled_from([3, 5, 8, 20, 60, 1_000_000]),
    limit=st.integers(1, 40),
    domain=st.sampled_from([None, "rocks", "rocks/north", "rocks/east"]),
)
def test_limit_n_returns_n_whatever_the_candidate_budget(
    minerals: Path, words: list[str], budget: int, limit: int, domain: str | None
) -> None:
    """However small ``candidatePostings`` is, and whatever the domain filter, a query
    returns ``limit`` hits when that many items hold one of its words (the fill ranks a
    sample of twice the budget, so a limit up to that is always met, or the filtered set
    whole), each holding one of them."""
    limit = min(limit, 2 * budget)
    (minerals / "engram.yaml").write_text(
        f"formatVersion: 1\nrecall:\n  minRelevance: 0\n  candidatePostings: {budget}\n"
    )
    vault = Vault.open(minerals)
    try:
        query = " ".join(words)
        match = " OR ".join(f'"{w}"' for w in words)
        result = vault.search(query, limit=limit, domain=domain, record=False)  # brings the index up to date
        matching = vault.state.index.query(
            "SELECT count(*) AS n FROM items_fts JOIN items ON items.rowid = items_fts.rowid"
            " WHERE items_fts MATCH ? AND (? IS NULL OR items.domain = ? OR items.domain LIKE ?)",
            (match, domain, domain, f"{domain}/%"),
        )
        assert len(result.hits) == min(limit, int(matching[0]["n"])), (query, budget, limit, domain)
        assert domain is None or all(h.domain == domain or h.domain.startswith(domain + "/") for h in result.hits)
        assert len({h.id for h in result.hits}) == len(result.hits)
        assert all(h.explanation.matched_terms for h in result.hits)
    finally:
        vault.close()
