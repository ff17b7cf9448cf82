"""The reads a table, a dashboard and a graph view are built on: browse, census,
neighbourhood, derived_section and the audit log newest first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput, NotFound, UnknownKind
from engram.store.audit import AuditEntry, AuditLog
from engram.vault import Vault


@pytest.fixture
def filled(vault: Vault) -> dict[str, str]:
    specs = [
        ("Alpha 100% sure", ["ops", "db"], "fact", 0.9, "team"),
        ("beta_under_score", ["ops", "net"], "pattern", 0.2, "team"),
        ("Gamma", ["eng"], "pattern", 0.6, "private"),
        ("delta", ["eng", "py"], "decision", 0.4, "org"),
        ("Epsilon", [], "fact", 0.7, "team"),
    ]
    ids = {}
    for title, domain, kind, importance, visibility in specs:
        ids[title] = vault.create(title, f"body of {title}", domain=domain, kind=kind,
                                  importance=importance, visibility=visibility).id
    vault.update(ids["Epsilon"], {"status": "frozen"})
    return ids


def titles(page: object) -> list[str]:
    return [i.title for i in page.items]  # type: ignore[attr-defined]


def test_browse_sorts_pages_and_counts(vault: Vault, filled: dict[str, str]) -> None:
    first = vault.browse(sort="title", descending=False, limit=2)
    second = vault.browse(sort="title", descending=False, limit=2, offset=2)
    assert (first.total, second.total) == (4, 4)  # Epsilon is frozen: hidden by default
    assert titles(first) + titles(second) == ["Alpha 100% sure", "beta_under_score", "delta", "Gamma"]
    assert titles(vault.browse(sort="importance", limit=10)) == ["Alpha 100% sure", "Gamma", "delta", "beta_under_score"]
    assert titles(vault.browse(sort="importance", descending=False, limit=1)) == ["beta_under_score"]
    assert vault.browse(sort="title", limit=10, offset=10).items == ()


def test_browse_filters_like_list_and_by_title_text(vault: Vault, filled: dict[str, str]) -> None:
    assert titles(vault.browse(domain="ops", sort="title", descending=False)) == ["Alpha 100% sure", "beta_under_score"]
    assert titles(vault.browse(kinds=["pattern"], visibility=["private"])) == ["Gamma"]
    assert titles(vault.browse(min_importance=0.5, sort="title", descending=False)) == ["Alpha 100% sure", "Gamma"]
    assert titles(vault.browse(include_hidden=True, kinds=["fact"], sort="title", descending=False)) == ["Alpha 100% sure", "Epsilon"]
    # LIKE wildcards in the text are literal characters, and case does not matter.
    assert titles(vault.browse(title="100%")) == ["Alpha 100% sure"]
    assert titles(vault.browse(title="_")) == ["beta_under_score"]
    assert titles(vault.browse(title="GAMM")) == ["Gamma"]
    assert vault.browse(title="%").total == 1


def test_browse_refuses_bad_arguments(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="cannot sort by 'rowid; drop'"):
        vault.browse(sort="rowid; drop")
    with pytest.raises(InvalidInput, match="limit must be 1 to 500"):
        vault.browse(limit=0)
    with pytest.raises(InvalidInput, match="offset must be 0 or more"):
        vault.browse(offset=-1)
    with pytest.raises(InvalidInput):
        vault.browse(kinds=["nonsense"])


def test_census_counts_everything_including_hidden(vault: Vault, filled: dict[str, str]) -> None:
    vault.link(filled["Gamma"], "extends", filled["delta"])
    (vault.root / "eng" / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n")
    counts = vault.census()
    assert (counts.items, counts.synapses, counts.broken_files) == (5, 1, 1)
    assert counts.by_kind == {"fact": 2, "pattern": 2, "decision": 1}
    assert counts.by_status == {"active": 4, "frozen": 1}
    assert counts.by_visibility == {"team": 3, "org": 1, "private": 1}
    assert counts.by_domain == {"eng": 2, "ops": 2, "": 1}
    assert counts.by_synapse_kind == {"extends": 1}


def test_derived_section_is_what_the_file_holds(vault: Vault, filled: dict[str, str]) -> None:
    assert vault.derived_section(filled["delta"]) == ""
    vault.link(filled["delta"], "depends_on", filled["Alpha 100% sure"])
    line = vault.derived_section(filled["delta"])
    assert line == "- → [[ops/db/alpha-100-sure|Alpha 100% sure · depends_on]]"
    with pytest.raises(NotFound):
        vault.derived_section("no such item")


@pytest.fixture
def chain(vault: Vault) -> list[str]:
    """a - b - c - d in a line, plus e hanging off a with a weak edge, and f unlinked."""
    ids = [vault.create(name, f"text {name}", domain=["g"], importance=imp).id
           for name, imp in (("a", 0.5), ("b", 0.9), ("c", 0.3), ("d", 0.8), ("e", 0.1), ("f", 0.95))]
    a, b, c, d, e, _ = ids
    vault.link(a, "extends", b, weight=0.9)
    vault.link(c, "depends_on", b, weight=0.7)
    vault.link(c, "contradicts", d, weight=0.6)
    vault.link(a, "similar_to", e, weight=0.2)
    return ids


def node_titles(n: object) -> list[str]:
    return sorted(x.title for x in n.nodes)  # type: ignore[attr-defined]


def test_neighbourhood_walks_hops_from_the_focus(vault: Vault, chain: list[str]) -> None:
    a, b, _c, d, e, _f = chain
    one = vault.neighbourhood(a, depth=1)
    assert node_titles(one) == ["a", "b", "e"] and one.focus == a and not one.truncated
    assert {x.id: x.hops for x in one.nodes} == {a: 0, b: 1, e: 1}
    assert sorted(s.kind for s in one.edges) == ["extends", "similar_to"]
    three = vault.neighbourhood(a, depth=3)
    assert node_titles(three) == ["a", "b", "c", "d", "e"]
    assert {x.id: x.hops for x in three.nodes}[d] == 3
    assert "contradicts" in {s.kind for s in three.edges}


def test_neighbourhood_keeps_the_strongest_edges_when_the_limit_binds(vault: Vault, chain: list[str]) -> None:
    a, _b, *_ = chain
    cut = vault.neighbourhood(a, depth=2, limit=2)
    assert [x.title for x in cut.nodes] == ["a", "b"] and cut.truncated
    assert [s.kind for s in cut.edges] == ["extends"]


def test_neighbourhood_filters_nodes_and_edge_kinds(vault: Vault, chain: list[str]) -> None:
    a, _b, c, _d, _e, _f = chain
    # e is below the importance floor; the focus stays even though it is below it too
    assert node_titles(vault.neighbourhood(a, depth=1, min_importance=0.6)) == ["a", "b"]
    only = vault.neighbourhood(c, depth=2, synapse_kinds=["contradicts"])
    assert node_titles(only) == ["c", "d"] and [s.kind for s in only.edges] == ["contradicts"]
    # a walk does not pass through a node the filters leave out
    assert node_titles(vault.neighbourhood(a, depth=3, domain="elsewhere")) == ["a"]


def test_neighbourhood_without_focus_is_the_most_important_items(vault: Vault, chain: list[str]) -> None:
    top = vault.neighbourhood(None, limit=3)
    assert [x.title for x in top.nodes] == ["f", "b", "d"] and top.truncated and top.focus is None
    assert top.edges == ()  # none of the three is linked to another
    everything = vault.neighbourhood(None, limit=500)
    assert len(everything.nodes) == 6 and len(everything.edges) == 4 and not everything.truncated


def test_neighbourhood_walks_and_draws_the_wikilinks_people_typed(tmp_path: Path) -> None:
    """A vault of plain notes has no synapses; the links typed in them are its graph
    (written to fail before: the walk followed synapse files only, so the focus stood alone)."""
    root = tmp_path / "notes"
    (root / "People").mkdir(parents=True)
    (root / "Hub.md").write_text("# Hub\nSee [[Alpha]], [[Beta#Part two|beta]] and [[People/Carol]].\n[[Alpha]] again.\n")
    (root / "Alpha.md").write_text("Back to [[Hub]]. ![[Beta]]\n")
    (root / "Beta.md").write_text("## Part two\nNo links out; [[Nowhere]] is not written yet.\n")
    (root / "People" / "Carol.md").write_text("---\nteam: \"[[Dave]]\"\n---\nCarol.\n")
    (root / "Dave.md").write_text("Dave.\n")
    with Vault.init(root) as vault:
        ids = {i.title: i.id for i in vault.list()}
        one = vault.neighbourhood(ids["Hub"], depth=1)
        assert node_titles(one) == ["Alpha", "Beta", "Carol", "Hub"]
        pairs = {(e.source, e.target) for e in one.edges}
        assert pairs == {(ids["Hub"], ids["Alpha"]), (ids["Alpha"], ids["Hub"]), (ids["Hub"], ids["Beta"]),
                         (ids["Hub"], ids["Carol"]), (ids["Alpha"], ids["Beta"])}
        assert {e.kind for e in one.edges} == {"links_to"} and all(e.wikilink for e in one.edges)
        assert len({e.id for e in one.edges}) == 5  # one edge per ordered pair, however often linked
        two = vault.neighbourhood(ids["Hub"], depth=2)
        assert "Dave" in node_titles(two)  # a link in a property is an edge too
        # the edge filter: wikilinks only, or synapse kinds only (which leaves them out)
        assert node_titles(vault.neighbourhood(ids["Hub"], synapse_kinds=["links_to"])) == node_titles(one)
        assert node_titles(vault.neighbourhood(ids["Hub"], synapse_kinds=["extends"])) == ["Hub"]
        # an engram item that links the hub in its body and has a typed synapse
        eve = vault.create("Eve", "Notes on [[Hub]].", domain=["people"]).id
        frank = vault.create("Frank", "Frank.", domain=["people"]).id
        vault.link(eve, "extends", frank)
        mixed = vault.neighbourhood(ids["Hub"], depth=2)
        assert {"Eve", "Frank"} <= set(node_titles(mixed))
        assert {(e.source, e.target, e.kind) for e in mixed.edges} >= {(eve, ids["Hub"], "links_to"), (eve, frank, "extends")}
        top = vault.neighbourhood(None, limit=500)
        assert len([e for e in top.edges if e.wikilink]) == 7 and len(top.edges) == 8


def test_neighbourhood_refuses_bad_arguments(vault: Vault, chain: list[str]) -> None:
    with pytest.raises(InvalidInput, match="depth must be 1 to 3"):
        vault.neighbourhood(chain[0], depth=4)
    with pytest.raises(InvalidInput, match="limit must be 1 to 500"):
        vault.neighbourhood(chain[0], limit=501)
    with pytest.raises(UnknownKind):
        vault.neighbourhood(chain[0], synapse_kinds=["likes"])
    with pytest.raises(NotFound):
        vault.neighbourhood("nothing like it")


def test_activity_pages_newest_first_and_filters(vault: Vault, filled: dict[str, str]) -> None:
    everything = list(vault.state.audit.entries())
    assert vault.activity(limit=500) == everything[::-1]
    assert vault.activity(limit=2, offset=1) == everything[::-1][1:3]
    assert [e.action for e in vault.activity(action="update")] == ["update"]
    assert [e.id for e in vault.activity(item=filled["Gamma"])] == [filled["Gamma"]]
    assert vault.activity(actor="somebody else") == []
    with pytest.raises(InvalidInput):
        vault.activity(limit=0)


@settings(max_examples=60)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=70_000), min_size=0, max_size=8),
    junk=st.lists(st.sampled_from(["", "not json", "{\"at\": 1}", "\u00e9\u00e9"]), max_size=3),
    limit=st.integers(min_value=1, max_value=10),
    offset=st.integers(min_value=0, max_value=10),
)
def test_reading_the_log_backwards_matches_reading_it_forwards(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], junk: list[str], limit: int, offset: int
) -> None:
    """Lines of any length (some longer than the 64 KiB read block), with junk between."""
    path = Path(tmp_path_factory.mktemp("audit")) / "audit.jsonl"
    lines = []
    for n, size in enumerate(sizes):
        entry = AuditEntry(at=f"2026-01-01T00:00:{n:02d}.000Z", actor="é" * size, action="update", target="item", id=f"I{n}")
        lines.append(entry.to_json())
        if junk:
            lines.append(junk[n % len(junk)])
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    log = AuditLog(path)
    forwards = list(log.entries())
    assert log.latest(limit, offset=offset) == forwards[::-1][offset : offset + limit]
    assert all(json.loads(e.to_json())["id"].startswith("I") for e in forwards)
