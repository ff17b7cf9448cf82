"""A small, fast slice of the retrieval eval, through the agent's own path: one LoCoMo
conversation at session granularity, written in the on-disk format and searched with
``engram_search`` over MCP stdio with the vault's defaults, must keep level with plain
FTS5 BM25 on the same documents (the full harness: ``python -m benchmarks run quality``).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import DATASETS, shared

LOCOMO = DATASETS / "locomo-dev" / "locomo-dev.json"


def test_one_locomo_conversation_through_mcp_keeps_level_with_bm25(tmp_path: Path) -> None:
    shared(LOCOMO)  # fails, saying what to do, when ../shared is missing
    from benchmarks import collections as coll
    from benchmarks.quality import run_bm25, run_engram
    from engram.recall.settings import RecallSettings
    from engram.vault import Vault

    data = coll.locomo_data(1)
    c = coll.locomo("session", data)
    root = tmp_path / "locomo"
    where = c.write(root)
    Vault.open(root).reindex()
    questions = c.queries["standard"]
    ours, best = run_engram(root, where, questions, 10, "floor_off", "locomo/")
    base = run_bm25(c.docs, questions, 10)
    o, b = ours["overall"], base["overall"]
    assert o["n"] == len(questions) == len(best) and o["abstained"] == 0
    assert o["mrr"] >= b["mrr"] - 0.005 and o["recall@5"] >= b["recall@5"] - 0.01
    assert o["recall@5"] >= 0.85 and o["mrr"] >= 0.75
    # One conversation is a small vault (19 items), where a word the vault lacks weighs
    # more than in the five-conversation one (1.2 % there): abstention stays rare.
    floor = RecallSettings().min_relevance  # the default floor abstains below this
    assert sum((r or 0.0) < floor for r in best) <= 0.1 * len(questions)


def test_the_baseline_ranks_exactly_the_items_the_vault_holds(tmp_path: Path) -> None:
    """Plain BM25 is only a fair baseline on the same documents: every item written
    (session stubs of the turn vault included) is one baseline document with its title
    and body, under the key its hits count for."""
    shared(LOCOMO)
    from benchmarks import collections as coll
    from engram.store.format import read_engram

    data = coll.locomo_data(1)
    for granularity in ("session", "turn", "hybrid"):
        c = coll.locomo(granularity, data)
        root = tmp_path / granularity
        where = c.write(root)
        written = []
        for path in sorted((root / "locomo").rglob("*.md")):
            item, _ = read_engram(path, str(path.relative_to(root)))
            written.append((where[item.id], item.title, item.content.strip()))
        docs = [(d.key, d.title, d.body.strip()) for d in c.docs]
        assert sorted(written) == sorted(docs), granularity
        assert len(docs) == len(where)
        # ids are fixed by path and time: a second write is the same vault, so ties
        # between items break alike on every run and the figures repeat exactly
        assert c.write(tmp_path / f"{granularity}-again") == where


def test_the_paired_comparison_counts_each_query_once() -> None:
    from benchmarks.quality import paired

    ours = {"mrr": [1.0, 0.5, 0.0, 1.0], "recall@5": [1.0, 1.0, 1.0, 1.0]}
    base = {"mrr": [0.5, 0.5, 1.0, 1.0], "recall@5": [1.0, 1.0, 1.0, 1.0]}
    got = paired(ours, base)
    assert got["mrr"]["diff"] == -0.125 and (got["mrr"]["better"], got["mrr"]["worse"]) == (1, 1)
    assert got["mrr"]["low"] < got["mrr"]["diff"] < got["mrr"]["high"]
    assert got["recall@5"] == {"diff": 0.0, "low": 0.0, "high": 0.0, "better": 0, "worse": 0}


def test_a_word_every_document_of_the_group_holds_does_not_count_as_held() -> None:
    """``Bm25.holds`` (the ceiling probe's count of misses no lexical ranking can lift):
    the speakers' names are in every session, so only the other words count, stemmed
    as the word index stems them."""
    from benchmarks.collections import Doc, Query
    from benchmarks.quality import Bm25

    base = Bm25([
        Doc("c/1", "Ann and Bo", "Ann: I painted a sunset.", "c"),
        Doc("c/2", "Ann and Bo", "Bo: We went hiking.", "c"),
        Doc("d/1", "Cy and Di", "Cy: painting again", "d"),
    ])
    q = Query("What has Ann painted?", {"c/1": 1.0}, "multi-hop", "c")
    assert base.holds(q, "c/1")  # "painted"
    assert not base.holds(q, "c/2")  # only "ann", which every session of c holds
    hike = Query("Where did Ann go hiking?", {"c/2": 1.0}, "single-hop", "c")
    assert base.holds(hike, "c/2") and not base.holds(hike, "c/1")
