"""Search primitives and the overview agree with plain SQL over the same tables.

The shortcuts of :mod:`engram.index.search` (rank inside FTS5 first, filter the
shortlist, fall back to a filtering join; cached word counts; two plans for matching)
must give what the slow, obvious query gives. :mod:`engram.index.overview` must count
what the items table holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.index.catalog import Index
from engram.index.overview import counts, tree
from engram.index.settings import IndexSettings
from engram.index.wikilinks import LINK_KIND
from engram.store import rules
from engram.vault import Vault

WEIGHTS = (4.0, 2.0, 2.0, 1.0)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    """60 items that all mention 'replica', in three domains; a few frozen."""
    v = Vault.init(tmp_path_factory.mktemp("prim") / "vault")
    for n in range(60):
        domain = ["ops", "db"] if n % 3 == 0 else ["ops"] if n % 3 == 1 else ["eng", "py"]
        extra = " lag" * (n % 7)
        v.create(
            f"Replica note {n}", f"replica body number {n}{extra} marker{n % 5}", domain=domain,
            status="frozen" if n % 10 == 9 else "active", dedupe=False,
        )
    v.create("Odd one", "nothing in common", domain=["eng"])
    yield v
    v.close()


def brute(index: Index, match: str, where: str, params: list[object], limit: int) -> list[tuple[str, float]]:
    rows = index.query(
        "SELECT items.path AS path, -bm25(items_fts, 4.0, 2.0, 2.0, 1.0) AS score FROM items_fts"
        f" JOIN items ON items.rowid = items_fts.rowid WHERE items_fts MATCH ? AND {where}"
        " ORDER BY score DESC LIMIT ?",
        [match, *params, limit],
    )
    return [(r["path"], r["score"]) for r in rows]


@pytest.mark.parametrize(
    ("domain", "limit"),
    [(None, 5), ("ops", 10), ("ops/db", 3), ("eng/py", 25), ("eng", 1)],
)
def test_word_hits_equal_the_filtering_join(big: Vault, domain: str | None, limit: int) -> None:
    index = big.state.index
    where, params = rules.Filters.of(domain=domain).sql()
    hits = index.search.word_hits('"replica" OR "lag"', WEIGHTS, where, params, limit, columns="path")
    expected = brute(index, '"replica" OR "lag"', where, params, limit)
    assert [round(h[1], 9) for h in hits] == [round(s, 9) for _, s in expected]
    assert {h[2]["path"] for h in hits} == {p for p, _ in expected} or len({s for _, s in expected}) < len(expected)


def test_a_filter_that_empties_the_shortlist_still_finds_the_rest(big: Vault) -> None:
    # Two frozen items in eng/py among 60 'replica' items: the shortlist may miss both.
    index = big.state.index
    where, params = rules.Filters.of(domain="eng", statuses=["frozen"]).sql()
    hits = index.search.word_hits('"replica"', WEIGHTS, where, params, 10, columns="path")
    expected = brute(index, '"replica"', where, params, 10)
    assert sorted(h[2]["path"] for h in hits) == sorted(p for p, _ in expected)
    assert len(hits) == len(expected) > 0


def test_ranking_several_queries_together_keeps_each_items_best_score(big: Vault) -> None:
    index = big.state.index
    where, params = rules.Filters.of().sql()
    hits, found = index.search.word_hits_many(['"lag"', '"marker3"'], WEIGHTS, where, params, 50, columns="path")
    lag = {p: s for p, s in brute(index, '"lag"', where, params, 100)}
    marker = {p: s for p, s in brute(index, '"marker3"', where, params, 100)}
    for rowid, score, row in hits:
        best = max(lag.get(row["path"], float("-inf")), marker.get(row["path"], float("-inf")))
        assert score == pytest.approx(best)
        assert found[rowid] == (1 if row["path"] in lag else 0) | (2 if row["path"] in marker else 0)


def test_matching_answers_the_same_with_either_plan(big: Vault) -> None:
    index = big.state.index
    rowids = [r["rowid"] for r in index.query("SELECT rowid FROM items ORDER BY rowid")]
    truth = {r["rowid"] for r in index.query("SELECT rowid FROM items_fts WHERE items_fts MATCH '\"lag\"'")}
    assert truth
    for df in (None, 1, 10**6):
        assert index.search.matching('"lag"', rowids, df=df) == truth
        assert index.search.matching('"lag"', rowids[:5], df=df) == truth & set(rowids[:5])
    assert index.search.matching('"lag"', []) == set()
    many = index.search.matching_many([('"lag"', False, None, rowids), ('"rep"', True, 3, rowids), ('"zzz"', False, 0, rowids)])
    tri = {r["rowid"] for r in index.query("SELECT rowid FROM items_tri WHERE items_tri MATCH '\"rep\"'")}
    assert many == [truth, tri, set()]


def test_word_counts_follow_every_write_from_any_process(big: Vault, tmp_path: Path) -> None:
    index = big.state.index
    total, df = index.search.doc_counts(["replica", "marker2", "absent", "replicas"])
    items = index.query("SELECT count(*) AS n FROM items")[0]["n"]
    assert total == items and df["replica"] == df["replicas"] == 60  # stemmed as indexed
    assert df["marker2"] == 12 and df["absent"] == 0
    other = Vault.open(big.root)  # another process's view of the same database
    try:
        made = other.create("Another replica", "replica absent-no-more", domain=["eng"], dedupe=False).item
        total2, df2 = index.search.doc_counts(["replica", "absent"])
        assert (total2, df2["replica"], df2["absent"]) == (total + 1, 61, 1)
        other.delete(made.id)
    finally:
        other.close()
    big.refresh()
    total3, df3 = index.search.doc_counts(["replica", "absent"])
    assert (total3, df3["replica"], df3["absent"]) == (total, 60, 0)


def test_scan_hits_find_short_fragments_anywhere_and_score_where(big: Vault) -> None:
    index = big.state.index
    where, params = rules.Filters.of(include_hidden=True).sql()
    hits = index.search.scan_hits("te 5", where, params, 100, columns="path")  # "note 5…" in titles
    paths = {h[2]["path"] for h in hits}
    assert paths and all("replica-note-5" in p for p in paths)
    assert all(h[1] >= 3.0 for h in hits)  # a title hit
    assert index.search.scan_hits("%", where, params, 100) == []  # no LIKE wildcards


def test_edges_cover_synapses_and_wikilinks_once_each(vault: Vault) -> None:
    a = vault.create("Alpha", "links to [[Beta]] twice: [[Beta|again]]", domain=["x"]).item
    b = vault.create("Beta", "plain", domain=["x"]).item
    c = vault.create("Gamma", "plain gamma", domain=["x"]).item
    vault.link(a.id, "extends", c.id)
    vault.link(b.id, "similar_to", c.id)
    search = vault.state.index.search
    everything = search.edges([a.id, c.id])
    kinds = sorted((e.kind, e.source, e.target) for e in everything)
    assert kinds == sorted([("extends", a.id, c.id), ("similar_to", *sorted((b.id, c.id))), (LINK_KIND, a.id, b.id)])
    assert [e.kind for e in search.edges([b.id], kinds=[LINK_KIND])] == [LINK_KIND]
    assert {e.kind for e in search.edges([c.id], kinds=["extends"])} == {"extends"}
    assert search.edges([]) == []


# ---------------------------------------------------------------------- overview


def test_the_domain_tree_counts_what_the_items_table_holds(big: Vault) -> None:
    root = tree(big.state.index)
    visible = big.state.index.query("SELECT domain, count(*) AS n FROM items WHERE status NOT IN ('frozen','forgotten','quarantined') GROUP BY domain")
    assert root.total == sum(r["n"] for r in visible)

    def check(node: object) -> None:
        assert node.total == node.count + sum(c.total for c in node.children)  # type: ignore[attr-defined]
        assert [c.total for c in node.children] == sorted((c.total for c in node.children), reverse=True)  # type: ignore[attr-defined]
        for child in node.children:  # type: ignore[attr-defined]
            assert child.path.endswith(child.name)
            check(child)

    check(root)
    ops = next(c for c in root.children if c.name == "ops")
    assert (ops.count, ops.total) == (18, 36) and [c.path for c in ops.children] == ["ops/db"]
    assert tree(big.state.index, include_hidden=True).total == root.total + 6
    assert tree(big.state.index, domain="ops").path == "ops"
    assert tree(big.state.index, domain="ops", depth=1).total == 36
    folded = tree(big.state.index, depth=1)
    assert all(not c.children for c in folded.children) and folded.total == root.total
    assert root.lines()[0].startswith(root.children[0].name + "/")


@pytest.mark.parametrize("depth", [0, -1, 1.5, "2"])
def test_a_bad_depth_is_refused(big: Vault, depth: object) -> None:
    with pytest.raises(InvalidInput, match="depth"):
        tree(big.state.index, depth=depth)  # type: ignore[arg-type]


def test_the_census_counts_hidden_items_and_broken_files(big: Vault) -> None:
    census = counts(big.state.index)
    assert census.items == 61 and sum(census.by_kind.values()) == 61
    assert census.by_status == {"active": 55, "frozen": 6}
    assert census.by_domain == {"ops": 40, "eng": 21}
    assert list(census.by_domain) == sorted(census.by_domain, key=lambda k: -census.by_domain[k])
    assert census.broken_files == 0 and census.synapses == 0


def test_an_empty_vault_has_an_empty_overview(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    index = Index(root, tmp_path / "db.sqlite", IndexSettings())
    try:
        index.refresh()
        node = tree(index)
        assert (node.total, node.children, node.lines()) == (0, (), [])
        assert counts(index).items == 0 and counts(index).by_domain == {}
    finally:
        index.close()


_WORDS = ("alpha", "bravo", "charlie", "delta", "echoes")
_OPS = st.lists(
    st.tuples(st.sampled_from(["create", "update", "delete", "other"]), st.lists(st.sampled_from(_WORDS), min_size=1,
                                                                                  max_size=4)),
    min_size=1, max_size=12,
)


@settings(max_examples=25, deadline=None)
@given(ops=_OPS, above=st.integers(min_value=0, max_value=3))
def test_counts_kept_through_inserts_say_above_when_the_exact_count_is_above(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, list[str]]], above: int
) -> None:
    # The near-match check asks term_stats(words, above=maxPostings): a count it serves
    # from before the latest writes must be one the writes cannot have brought down to
    # `above` or below; every count up to `above` is exact. Any write that removed an
    # item (a delete, an update, another process's) makes it count afresh.
    vault = Vault.init(tmp_path_factory.mktemp("df") / "v")
    other = Vault.open(vault.root)
    try:
        made: list[str] = []
        for n, (op, words) in enumerate(ops):
            text = " ".join(words)
            if op == "create" or not made:
                made.append(vault.create(f"Note {n}", text, domain=["x"], dedupe=False).item.id)
            elif op == "update":
                vault.update(made[-1], {"content": text + f" {n}"})
            elif op == "delete":
                vault.delete(made.pop())
            else:
                made.append(other.create(f"Other {n}", text, domain=["x"], dedupe=False).item.id)
            index = vault.state.index
            _, served = index.term_stats(list(_WORDS), above=above)
            fresh = Index(vault.root, index.db_path)
            try:
                exact = fresh.term_stats(list(_WORDS))[1]
            finally:
                fresh.close()
            for word in _WORDS:
                if exact[word] <= above:
                    assert served[word] == exact[word], (word, served, exact)
                else:
                    assert served[word] > above, (word, served, exact)
            assert index.term_stats(list(_WORDS))[1] == exact  # without `above`: exact
    finally:
        other.close()
        vault.close()
