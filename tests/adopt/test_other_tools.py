"""basic-memory projects, the MCP memory server's memory.jsonl and Co-Engram repositories,
each from a fixture in its tool's own on-disk format (see tests/data/*/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from engram.adopt.relations import kind_for
from engram.vault import Vault
from tests.adopt.helpers import DATA, checksums
from tests.conftest import COMPAT, snapshot


def edges(vault: Vault) -> set[tuple[str, str, str]]:
    titles = vault.titles([e for s in vault.synapses() for e in (s.source, s.target)])
    return {(titles[s.source], s.kind, titles[s.target]) for s in vault.synapses()}


def test_basic_memory_project_observations_and_relations(vault: Vault) -> None:
    source = DATA / "basic-memory"
    before = checksums(source)
    report = vault.run_import(vault.read_import(source))
    assert checksums(source) == before
    assert report.importer == "basic-memory" and report.counts["NEW"] == 4  # three notes and README.md
    brewing = vault.get("Coffee Brewing Methods")
    assert brewing.path == "coffee/Coffee Brewing Methods.md" and brewing.extra["type"] == "note"
    assert brewing.extra["permalink"] == "coffee-brewing-methods" and brewing.tags == ("coffee", "brewing")
    assert "- [technique] Water temperature at 205°F extracts optimal compounds #brewing" in brewing.content
    assert edges(vault) == {
        ("Coffee Brewing Methods", "contextualizes", "Coffee Bean Origins"),  # relates_to + "pairs well with"
        ("Coffee Brewing Methods", "depends_on", "Proper Grinding Technique"),  # requires
        ("Proper Grinding Technique", "depends_on", "Coffee Bean Origins"),  # by permalink
    }
    [context] = [s for s in vault.synapses() if s.kind == "contextualizes"]
    assert {e.description for e in context.evidence} == {
        "basic-memory relation: relates_to", "basic-memory relation: pairs well with; morning routine",
    }
    assert report.unresolved == ("coffee/Coffee Brewing Methods.md: part_of → Missing Note",)
    before = snapshot(vault)
    assert vault.run_import(vault.read_import(source)).written == 0 and snapshot(vault) == before


def test_mcp_memory_server_graph(vault: Vault) -> None:
    source = DATA / "memory-server" / "memory.jsonl"
    report = vault.run_import(vault.read_import(source))
    assert report.importer == "memory-server"
    assert report.counts == {"NEW": 3, "DUPLICATE": 0, "UPDATE": 0, "SKIPPED": 0, "HELD": 0, "BAD": 2}
    bad = {r.where: r.message for r in report.results if r.outcome == "BAD"}
    assert bad["line 6"].startswith("not valid JSON") and bad["line 7"] == "relation from unknown entity 'Ghost'"
    john = vault.get("John_Smith")
    assert john.content == "- Speaks fluent Spanish\n- Graduated in 2019\n" and john.kind == "fact"
    assert john.path == "memory/person/john_smith.md" and john.tags == ("person",)
    assert john.extra["entityType"] == "person"
    assert edges(vault) == {("John_Smith", "contextualizes", "Anthropic"), ("Payments API", "depends_on", "John_Smith")}
    [works] = [s for s in vault.synapses() if s.kind == "contextualizes"]
    assert [e.description for e in works.evidence] == ["memory relation: works_at"]
    before = snapshot(vault)
    again = vault.run_import(vault.read_import(source))
    assert again.written == 0 and again.counts["SKIPPED"] == 3 and snapshot(vault) == before


def test_memory_server_read_graph_object_is_read_too(vault: Vault, tmp_path: Path) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text('{"entities": [{"name": "A", "entityType": "x", "observations": ["a"]},'
                     ' {"name": "B", "entityType": "x", "observations": []}],'
                     ' "relations": [{"from": "A", "to": "B", "relationType": "part_of"}]}')
    report = vault.run_import(vault.read_import(graph, "memory-server"))
    assert report.counts["NEW"] == 2 and edges(vault) == {("A", "part_of", "B")}


def test_co_engram_repository_keeps_ids_history_and_synapses(vault: Vault, tmp_path: Path) -> None:
    assert COMPAT.is_dir(), f"{COMPAT} is missing: the shared compat fixtures must be beside the repository"
    source = tmp_path / "co-engram"
    shutil.copytree(COMPAT, source)
    before = checksums(source)
    report = vault.run_import(vault.read_import(source))
    assert checksums(source) == before
    assert report.importer == "co-engram" and report.counts["NEW"] == 2 and report.links == 1
    item = vault.get("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ")
    assert item.path == "engineering/python/frozen-dataclass-copy.md"
    assert (item.version, item.created_by, item.retrieval_count) == (3, "Dana Ortiz", 12)
    assert item.content_hash != "sha256:9f2c0a4d6b1e8f3a7c5d2e9b0a1f4c6d8e3b7a5c9d1f2e4a6b8c0d3e5f7a9b1c"  # recomputed
    [syn] = vault.synapses()
    assert (syn.id, syn.weight, syn.evidence[0].added_by) == ("syn-1a6b906f8bfcf8f1", 0.8, "claude-code")
    # no hash, link or id problems; the one file whose name is not its title's slug keeps
    # its name (the source's layout): where a file was put is its owner's, not drift
    assert {(p.code, p.path) for p in vault.doctor().problems} == set()
    assert (vault.root / "engineering/python/immutable-value-objects.md").is_file()
    before = snapshot(vault)
    again = vault.run_import(vault.read_import(source))
    assert again.written == 0 and again.counts["SKIPPED"] == 2 and snapshot(vault) == before


def test_relation_types_map_to_kinds() -> None:
    assert kind_for("depends_on") == ("depends_on", True)
    assert kind_for("Part Of") == ("part_of", True) and kind_for("partOf") == ("part_of", True)
    assert kind_for("requires") == ("depends_on", False)
    assert kind_for("works_at") == ("contextualizes", False)
