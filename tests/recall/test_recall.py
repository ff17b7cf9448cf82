"""Ranking, the trigram path, filters, abstention, tiers and explanations on real vaults."""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.recall.search import RecallSettings, recall_settings
from engram.vault import Vault
from tests.conftest import words_only


def titles(result: object) -> list[str]:
    return [h.title for h in result.hits]  # type: ignore[attr-defined]


@pytest.fixture
def notes(vault: Vault) -> Vault:
    return notes_(vault)


def notes_(vault: Vault) -> Vault:
    vault.create("Connection pool sizing", "Size pools from the p99 of concurrent requests.",
                 domain=["eng", "db"], tags=["postgres"], summary="How big a pool should be")
    vault.create("Deploy checklist", "Check the connection pool metrics after every deploy.",
                 domain=["ops"], tags=["deploy"])
    vault.create("Settings reference", "The `db_url_v2` key replaced db_url; send X-Batch on bulk calls.",
                 domain=["eng", "config"])
    vault.create("数据库连接池", "连接池的大小取决于并发请求。", domain=["eng", "zh"])
    vault.create("Hidden draft", "connection pool notes nobody should see", domain=["ops"], status="quarantined")
    return vault


def test_a_title_match_outranks_a_body_match(notes: Vault) -> None:
    result = notes.search("connection pool")
    assert titles(result)[:2] == ["Connection pool sizing", "Deploy checklist"]
    top = result.hits[0]
    assert top.relevance == 1.0 and set(top.explanation.matched_terms) == {"connection", "pool"}
    assert top.explanation.parts["relevance"] == 1.0 and top.explanation.lexical_rank == 1
    assert "Hidden draft" not in titles(result)  # quarantined items stay out of recall,
    assert "Hidden draft" not in titles(notes.search("connection pool", include_hidden=True))  # always


def test_stemming_and_stopwords(notes: Vault) -> None:
    result = notes.search("how should the pools be sized?")
    assert titles(result)[0] == "Connection pool sizing"
    assert {"how", "should", "the", "be"} <= set(result.ignored)


@pytest.mark.parametrize(
    ("query", "expected"),
    [("db_url_v2", "Settings reference"), ("X-Batch", "Settings reference"), ("url_v", "Settings reference"),
     ("连接池", "数据库连接池"), ("数据", "数据库连接池"), ("p99", "Connection pool sizing")],
)
def test_identifiers_substrings_and_cjk_are_found(notes: Vault, query: str, expected: str) -> None:
    result = notes.search(query)
    assert result.status == "ok" and titles(result)[0] == expected


def test_abstains_below_the_relevance_floor(notes: Vault) -> None:
    result = notes.search("kubernetes pod eviction")
    assert result.status == "no_confident_match" and result.hits == ()
    partial = notes.search("kubernetes connection")  # one common word of three rare ones
    assert partial.best_relevance is not None
    if partial.status == "no_confident_match":
        assert partial.near_misses and partial.best_relevance < partial.floor
    lenient = notes.search("kubernetes connection", min_relevance=0.0)
    assert lenient.status == "ok" and lenient.hits


def test_filters(notes: Vault) -> None:
    assert titles(notes.search("connection pool", domain="ops")) == ["Deploy checklist"]
    assert titles(notes.search("connection pool", tags=["postgres"])) == ["Connection pool sizing"]
    assert titles(notes.search("connection pool", kinds=["decision"])) == []
    with pytest.raises(InvalidInput):
        notes.search("pool", kinds=["nonsense"])
    with pytest.raises(InvalidInput):
        notes.search("pool", as_of="not a time")
    with pytest.raises(InvalidInput):
        notes.search("pool", limit=0)
    with pytest.raises(InvalidInput):
        notes.search("pool", tier="everything")


def test_tiers_and_the_token_budget(vault: Vault) -> None:
    notes_(vault)
    with words_only(vault) as notes:  # the budget figures below are for the two word matches
        tiers_and_budget(notes)


def tiers_and_budget(notes: Vault) -> None:
    catalog = notes.search("connection pool", tier="catalog")
    assert all(h.summary is None and h.content is None for h in catalog.hits)
    digest = notes.search("connection pool", tier="digest")
    assert digest.hits[0].summary == "How big a pool should be" and digest.hits[0].content is None
    content = notes.search("connection pool", tier="content")
    assert content.hits[0].content == "Size pools from the p99 of concurrent requests.\n"
    # tier=auto: the budget is a bound. Catalog lines first, as many as fit; the spare
    # upgrades hits best-first; the answer says what it left out and the budget for it.
    lines = notes.search("connection pool", tier="auto", budget=100)
    assert [h.tier for h in lines.hits] == ["digest", "catalog"] and lines.budget_reached
    assert lines.tokens <= 100 and lines.left_out == 0
    one = notes.search("connection pool", tier="auto", budget=60)
    assert [h.id for h in one.hits] == [catalog.hits[0].id] and one.tokens <= 60
    assert one.left_out == 1 and one.budget_reached and one.needed_budget > 60
    assert len(notes.search("connection pool", tier="auto", budget=one.needed_budget).hits) == 2
    none = notes.search("connection pool", tier="auto", budget=20)
    assert none.hits == () and none.left_out == 2 and none.tokens == 0
    roomy = notes.search("connection pool", tier="auto", budget=5000)
    assert all(h.tier == "content" for h in roomy.hits) and not roomy.budget_reached


def test_raw_mode_takes_fts_syntax_and_reports_bad_syntax_clearly(notes: Vault) -> None:
    assert titles(notes.search("connect*", raw=True))
    with pytest.raises(InvalidInput, match="raw FTS5 query"):
        notes.search("pool AND", raw=True)


def test_ranking_weights_come_from_the_settings(vault: Vault) -> None:
    assert recall_settings(vault.state) == RecallSettings()
    (vault.root / "engram.yaml").write_text("recall:\n  titleWeight: 1\n  bodyWeight: 9\n  edgeWeights:\n    extends: 0.1\n")
    reopened = Vault.open(vault.root)
    try:
        s = recall_settings(reopened.state)
        assert (s.title_weight, s.body_weight) == (1.0, 9.0)
        assert s.edge_weights["extends"] == 0.1 and s.edge_weights["part_of"] == 0.8
    finally:
        reopened.close()
    (vault.root / "engram.yaml").write_text("recall:\n  freshness: sometimes\n")
    broken = Vault.open(vault.root)
    try:
        with pytest.raises(InvalidInput, match="freshness"):
            broken.search("x")
    finally:
        broken.close()


def test_importance_breaks_a_lexical_tie(vault: Vault) -> None:
    vault.create("Cache warmup A", "warm the cache before traffic", importance=0.1)
    vault.create("Cache warmup B", "warm the cache before traffic", importance=0.9, dedupe=False)
    assert titles(vault.search("cache warmup")) == ["Cache warmup B", "Cache warmup A"]


def test_paths_overview_counts_cumulatively(notes: Vault) -> None:
    tree = notes.paths()
    top = {c.name: c for c in tree.children}
    assert tree.total == 4  # the quarantined item is not counted
    assert top["eng"].total == 3 and top["eng"].count == 0
    assert {c.name for c in top["eng"].children} == {"db", "config", "zh"}
    assert notes.paths(domain="eng", depth=1).total == 3
    assert notes.paths(include_hidden=True).total == 5
    with pytest.raises(InvalidInput):
        notes.paths(depth=0)


def test_a_filter_that_empties_the_ranked_shortlist_still_finds_the_match(vault: Vault) -> None:
    for i in range(70):
        vault.create(f"Widget note {i}", "widget widget widget calibration", domain=["noise"], dedupe=False)
    filler = " ".join(f"word{i}" for i in range(300))
    vault.create("Quiet one", f"{filler} widget {filler}", domain=["quiet"])  # ranks last
    result = vault.search("widget", domain="quiet", min_relevance=0.0)
    assert titles(result) == ["Quiet one"]


def test_the_cli_searches_explains_abstains_and_shows_the_tree(notes: Vault) -> None:
    import json

    from click.testing import CliRunner

    from engram.cli import cli

    runner = CliRunner()
    base = ["--vault", str(notes.root)]
    shown = runner.invoke(cli, [*base, "search", "connection pool", "--explain", "--limit", "2"])
    assert shown.exit_code == 0, shown.output
    assert "Connection pool sizing" in shown.output and "terms: matched" in shown.output
    data = json.loads(runner.invoke(cli, [*base, "search", "db_url_v2", "--json", "--tier", "catalog"]).output)
    assert data["status"] == "ok" and data["hits"][0]["title"] == "Settings reference"
    assert "content" not in data["hits"][0] and data["hits"][0]["explanation"]["matchedTerms"][0] == "db_url_v2"
    missing = runner.invoke(cli, [*base, "search", "kubernetes eviction"])
    assert missing.exit_code == 1 and "no confident match" in missing.output
    bad = runner.invoke(cli, [*base, "search", "*"])
    assert bad.exit_code == 2 and "no words to search for" in bad.output
    tree = runner.invoke(cli, [*base, "paths", "--json"])
    assert json.loads(tree.output)["total"] == 4
    flushed = runner.invoke(cli, [*base, "flush"])
    assert flushed.exit_code == 0 and "folded" in flushed.output


def test_an_item_holding_both_common_terms_is_found_past_the_postings_budget(vault: Vault) -> None:
    # Both words are over candidatePostings, so candidates come from the items holding
    # both; the 60 best items for the rarer word alone would not include this one.
    # Words only: the test is about which word matches fill the list.
    (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 20\n  meaning: 0\n")
    reopened = Vault.open(vault.root)
    try:
        for i in range(70):
            reopened.create(f"Tide note {i}", "harbor harbor harbor tides", domain=["a"], dedupe=False)
            reopened.create(f"Wick note {i}", "lantern lantern lantern wicks", domain=["b"], dedupe=False)
        reopened.create("Quiet one", "harbor lantern", domain=["c"])
        result = reopened.search("harbor lantern")
        assert titles(result)[0] == "Quiet one" and result.hits[0].relevance == 1.0
        # Too few items hold both, so items with the rarer word alone fill the list.
        assert len(result.hits) == 10 and all(t.startswith(("Tide", "Quiet")) for t in titles(result))
    finally:
        reopened.close()


def test_word_counts_are_exact_below_the_cap_and_estimated_above(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    import engram.index.search

    for i in range(40):
        vault.create(f"Note {i}", "harbor tides" if i % 2 else "harbor wicks", dedupe=False)
    monkeypatch.setattr(engram.index.search, "COUNT_CAP", 10)
    total, counts = vault.state.index.search.doc_counts(["harbor", "tides", "absent"])
    assert total == 40 and counts["absent"] == 0
    assert counts["harbor"] == 40  # spread evenly: the first 10 fill a quarter of the rowids
    assert 15 <= counts["tides"] <= 25
    vault.create("One more", "harbor again", dedupe=False)  # an item change recounts
    assert vault.state.index.search.doc_counts(["harbor"]) == (41, {"harbor": 41})
    # A rebuild starts the change tally again; the counts must not outlive it.
    vault.reindex()
    assert vault.state.index.search.doc_counts(["quay"]) == (41, {"quay": 0})
    edited = vault.root / vault.get("One more").path
    edited.write_text(edited.read_text(encoding="utf-8").replace("harbor again", "quay again"), encoding="utf-8")
    vault.reindex()
    assert vault.state.index.search.doc_counts(["quay"]) == (41, {"quay": 1})


def test_a_rare_term_with_a_common_one_ranks_as_an_uncapped_query_would(vault: Vault) -> None:
    # "zircon" (45 items) is within candidatePostings, "quartz" (61) no longer fits. The
    # 40 best items for zircon alone all repeat it; the one that holds both words is
    # found because items holding a commoner term too are ranked by every term they hold.
    (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 60\n")
    reopened = Vault.open(vault.root)
    try:
        for i in range(44):
            reopened.create(f"Mineral note {i}", "zircon zircon zircon crystals", domain=["a"], dedupe=False)
        for i in range(60):
            reopened.create(f"Rock note {i}", "quartz veins", domain=["b"], dedupe=False)
        for i in range(300):
            reopened.create(f"Field note {i}", "granite and basalt outcrops", domain=["d"], dedupe=False)
        reopened.create("Both stones", "zircon beside quartz", domain=["c"])
        result = reopened.search("zircon quartz")
        assert titles(result)[0] == "Both stones" and result.hits[0].relevance == 1.0
    finally:
        reopened.close()


def test_too_few_rare_hits_are_filled_by_the_common_terms_at_a_bounded_cost(vault: Vault) -> None:
    # "zircon" (3 items) is within candidatePostings (20), "quartz" (30) is not, but is
    # within FILL budgets: limit 10 returns the 3 zircon items, then 7 quartz ones, as an
    # uncapped ranking does. A domain filter that leaves few rare hits is the same case.
    # Words only: the test is about which word matches fill the list.
    (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 20\n  meaning: 0\n")
    reopened = Vault.open(vault.root)
    try:
        for i in range(3):
            reopened.create(f"Zircon note {i}", f"zircon crystals, sample {i}", domain=["a"], dedupe=False)
        for i in range(30):
            reopened.create(f"Quartz note {i}", "quartz veins " * (1 + i % 4), domain=["a" if i % 2 else "b"], dedupe=False)
        capped = reopened.search("zircon quartz", record=False)
        assert len(capped.hits) == 10
        assert [t.startswith("Zircon") for t in titles(capped)] == [True] * 3 + [False] * 7
        narrow = reopened.search("zircon quartz", domain="a", record=False)
        assert len(narrow.hits) == 10 and all(h.domain == "a" for h in narrow.hits)
        (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 1000000\n  meaning: 0\n")
        uncapped = Vault.open(vault.root)
        try:
            # The same hits, judged alike: what the fill knows a hit lacks needs no lookup.
            def judged(result: object) -> list[tuple[str, float | None, tuple[str, ...]]]:
                return [(h.id, h.relevance, h.explanation.matched_terms) for h in result.hits]  # type: ignore[attr-defined]

            assert judged(uncapped.search("zircon quartz", record=False)) == judged(capped)
        finally:
            uncapped.close()
        # Past FILL budgets (60 quartz items > 2 × 5) the commoner word's list is not
        # ranked whole: the last 10 items the index holds with it are (an arbitrary but
        # bounded sample), and the list is still full.
        for i in range(30, 60):
            reopened.create(f"Quartz note {i}", "quartz veins", domain=["b"], dedupe=False)
        (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 5\n  meaning: 0\n")
        again = Vault.open(vault.root)
        try:
            sampled = again.search("zircon quartz", record=False).hits
            assert len(sampled) == 10 and sorted(h.title for h in sampled[:3]) == [f"Zircon note {i}" for i in range(3)]
            last = {r["id"] for r in again.state.index.query(
                "SELECT id FROM items WHERE rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH 'quartz'"
                " ORDER BY rowid DESC LIMIT 10)"
            )}
            assert {h.id for h in sampled[3:]} <= last
        finally:
            again.close()
    finally:
        reopened.close()


def test_a_filled_hit_holding_an_identifier_as_a_substring_is_judged_as_uncapped(vault: Vault) -> None:
    # The fill's items lack the identifier as a word, which spares their word lookups;
    # as a substring of a longer name it still counts, as it does in an uncapped search.
    # Words only: the test is about which word matches fill the list.
    (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 20\n  meaning: 0\n")
    reopened = Vault.open(vault.root)
    try:
        reopened.create("Core config", "Set zr_core_v4 before boot.", domain=["a"], dedupe=False)
        reopened.create("Longer name", "The quartz rig reads xzr_core_v4x at start.", domain=["a"], dedupe=False)
        for i in range(18):
            reopened.create(f"Quartz note {i}", "quartz core veins " * (1 + i % 3), domain=["b"], dedupe=False)
        # "quartz" (19 items) and "core" (20) are past the budget left by the rare words,
        # so the longer name, which holds no rare word, comes from the fill.
        capped = reopened.search("zr_core_v4 quartz", limit=30, record=False)
        longer = next(h for h in capped.hits if h.title == "Longer name")
        assert "zr_core_v4" in longer.explanation.matched_terms
        (vault.root / "engram.yaml").write_text("recall:\n  candidatePostings: 1000000\n  meaning: 0\n")
        uncapped = Vault.open(vault.root)
        try:
            wide = uncapped.search("zr_core_v4 quartz", limit=30, record=False)
            assert [(h.id, h.relevance, h.explanation.matched_terms) for h in wide.hits] == [
                (h.id, h.relevance, h.explanation.matched_terms) for h in capped.hits
            ]
        finally:
            uncapped.close()
    finally:
        reopened.close()
