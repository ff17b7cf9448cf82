"""Deep lists: ``limit`` N returns N hits whenever N items match, under every tier and
every relevance floor; past the token budget the rest come as catalog lines and the
answer says the budget was reached (issue 14's two collapses: ``tier: auto`` reserving
more than the budget, and ``minRelevance: 0`` in ``engram.yaml``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
                assert richer and result.hits[: len(richer)] == tuple(richer)  # upgrades go best-first
                if limit >= 100:  # 100 catalog lines alone exceed the default 2,000 tokens
                    assert result.budget_reached and result.hits[-1].tier == "catalog"
                if not result.budget_reached:
                    assert all(h.tier == wanted for h in result.hits) and result.tokens <= 2000
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
        result = vault.search(QUERY, limit=MAX_LIMIT, record=False)
        assert result.status == "ok" and len(result.hits) == MAX_LIMIT
        weak = [h for h in result.hits if h.relevance is not None and h.relevance < result.floor]
        assert weak  # below the floor, still listed: the floor decides the answer, not the list
        complete = [h for h in result.hits if not h.explanation.missing_terms]
        assert complete and result.hits[: len(complete)] == tuple(complete)  # all words first
    finally:
        vault.close()
