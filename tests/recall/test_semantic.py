"""Optional semantic recall (engram.recall.semantic) with the real model from the
``wordllama`` wheel, over real vaults and the real SQLite index."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import pytest
import time_machine
from mcp import Client

from engram.errors import InvalidInput
from engram.index.vectors import text_of, vectors
from engram.mcp import build_server
from engram.recall import semantic
from engram.vault import Vault
from tests.mcp_helpers import error, ok

#: The static model alone: the sentence encoder (on by default, tests/recall/test_meaning.py)
#: would add a ``meaning`` part and hits of its own to every ranking asserted here.
ON = "recall:\n  semantic: 0.5\n  meaning: 0\n"
OFF = "recall:\n  meaning: 0\n"


def add_settings(vault: Vault, text: str) -> None:
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.fixture
def reopen(vault: Vault) -> Iterator[Callable[[str], Vault]]:
    """Write ``engram.yaml`` and open the vault again (settings are read once per open)."""
    opened: list[Vault] = []
    template = (vault.root / "engram.yaml").read_text(encoding="utf-8")  # has no recall section

    def with_settings(text: str) -> Vault:
        (vault.root / "engram.yaml").write_text(template + text, encoding="utf-8")
        opened.append(Vault.open(vault.root))
        return opened[-1]

    yield with_settings
    for v in opened:
        v.close()


def two_plans(vault: Vault) -> tuple[str, str]:
    """Two items holding the query's matching words once each, at the same length; the
    garage one is written first, so lexically it leads (ties go by id)."""
    garage = vault.create(TITLE, "Repaint the garage door and oil the hinges.", domain=["home"]).item.id
    cat = vault.create(TITLE, "Take the cat to the animal doctor for shots.", domain=["home"]).item.id
    return garage, cat


TITLE = "Appointment plan"
#: Both items hold it in the same title: lexically a tie, by meaning the cat's.
QUERY = "appointment plan"


def stored(vault: Vault) -> dict[int, bytes]:
    with sqlite3.connect(vault.state.index.db_path) as conn:
        return {int(r[0]): bytes(r[1]) for r in conn.execute("SELECT rowid, vec FROM vectors")}


def indexed_text(vault: Vault, item_id: str) -> str:
    row = vault.state.index.query("SELECT title, summary, body FROM items WHERE id = ?", [item_id])[0]
    assert "animal doctor" in row["body"] or "vet" in row["body"]
    return text_of(row["title"], row["summary"], row["body"])


def test_off_by_default_no_semantic_part_and_no_vectors(vault: Vault) -> None:
    garage, cat = two_plans(vault)
    result = vault.search(QUERY)
    assert {h.id for h in result.hits} == {garage, cat}
    assert all("semantic" not in h.explanation.parts for h in result.hits)
    assert stored(vault) == {}  # the static model's table (the encoder's cache is a file apart)


def test_meaning_reorders_what_the_words_found(vault: Vault, reopen: Callable[[str], Vault]) -> None:
    garage, cat = two_plans(vault)
    lexical = vault.search(QUERY, record=False)
    vault = reopen(ON)
    result = vault.search(QUERY, record=False)
    assert [h.id for h in result.hits] == [cat, garage]
    parts = {h.id: h.explanation.parts for h in result.hits}
    assert parts[cat]["semantic"] > parts[garage]["semantic"] >= 0
    # Relevance, and so the answer's confidence, stays lexical.
    assert result.status == lexical.status == "ok"
    assert result.best_relevance == lexical.best_relevance
    assert [h.relevance for h in result.hits] == [h.relevance for h in reversed(lexical.hits)]


def test_a_query_with_no_lexical_match_stays_unconfident(vault: Vault, reopen: Callable[[str], Vault]) -> None:
    two_plans(vault)
    vault = reopen(ON)
    result = vault.search("kitten veterinary")
    assert result.status != "ok" or not result.hits  # meaning never makes a match confident


def test_vectors_are_kept_and_dropped_with_their_item(vault: Vault, reopen: Callable[[str], Vault]) -> None:
    garage, cat = two_plans(vault)
    vault = reopen(ON)
    vault.search(QUERY, record=False)
    rows = {r["id"]: int(r["rowid"]) for r in vault.state.index.query("SELECT id, rowid FROM items")}
    kept = stored(vault)
    assert set(kept) == {rows[garage], rows[cat]}
    expected = semantic.embed([indexed_text(vault, cat)])[0]
    got = np.frombuffer(kept[rows[cat]], dtype=np.float16).astype(np.float32)
    assert np.allclose(got, expected, atol=2e-3) and abs(float(np.linalg.norm(got)) - 1) < 1e-2

    current = vault.get(cat)
    vault.update(cat, {"content": "Book the vet for the pet."}, expected_version=current.version)
    # No vector outlives the text it was computed from (a re-read file's row goes too).
    for rowid, vec in stored(vault).items():
        row = vault.state.index.query("SELECT title, summary, body FROM items WHERE rowid = ?", [rowid])[0]
        now = semantic.embed([text_of(row["title"], row["summary"], row["body"])])[0]
        assert np.allclose(np.frombuffer(vec, dtype=np.float16).astype(np.float32), now, atol=2e-3)
    result = vault.search(QUERY, record=False)
    assert result.hits[0].id == cat
    new_rowid = int(vault.state.index.query("SELECT rowid FROM items WHERE id = ?", [cat])[0]["rowid"])
    fresh = np.frombuffer(stored(vault)[new_rowid], dtype=np.float16).astype(np.float32)
    assert np.allclose(fresh, semantic.embed([indexed_text(vault, cat)])[0], atol=2e-3)


def test_a_vector_is_not_stored_for_text_that_changed_while_it_was_computed(vault: Vault) -> None:
    _, cat = two_plans(vault)
    rowid = int(vault.state.index.query("SELECT rowid FROM items WHERE id = ?", [cat])[0]["rowid"])

    def embed_while_edited(texts: list[str]) -> list[bytes]:
        current = vault.get(cat)
        vault.update(cat, {"content": "Something else entirely."}, expected_version=current.version)
        return [b"\x00" * 512 for _ in texts]

    got = vectors(vault.state.index, [rowid], semantic.MODEL, embed_while_edited)
    assert set(got) == {rowid}  # this read still gets what it computed
    assert stored(vault) == {}  # but the index does not keep it for the new text


def test_vectors_of_another_model_are_not_used(vault: Vault) -> None:
    _, cat = two_plans(vault)
    rowid = int(vault.state.index.query("SELECT rowid FROM items WHERE id = ?", [cat])[0]["rowid"])
    vectors(vault.state.index, [rowid], "old-model", lambda texts: [b"old" for _ in texts])
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[bytes]:
        calls.append(texts)
        return [b"new" for _ in texts]

    assert vectors(vault.state.index, [rowid], semantic.MODEL, embed) == {rowid: b"new"}
    assert vectors(vault.state.index, [rowid], semantic.MODEL, embed) == {rowid: b"new"}
    assert len(calls) == 1  # stored the first time, read the second
    assert vectors(vault.state.index, [rowid + 999], semantic.MODEL, embed) == {}


def test_an_empty_text_has_a_zero_vector_not_nan() -> None:
    vecs = semantic.embed(["", "the cat"])
    assert not np.isnan(vecs).any() and float(np.abs(vecs[0]).sum()) == 0.0


def test_raw_queries_are_ranked_without_it(vault: Vault, reopen: Callable[[str], Vault]) -> None:
    two_plans(vault)
    vault = reopen(ON)
    result = vault.search("plan", raw=True, record=False)
    assert result.hits and all("semantic" not in h.explanation.parts for h in result.hits)


def test_graph_reached_items_get_the_part_too(vault: Vault, reopen: Callable[[str], Vault]) -> None:
    _, cat = two_plans(vault)
    vet = vault.create("Clinic", "Open weekdays; the kitten needs a booster.", domain=["home"]).item.id
    vault.link(cat, "contextualizes", vet)
    vault = reopen(ON)
    result = vault.search(QUERY, record=False)
    reached = {h.id: h for h in result.hits}
    assert vet in reached and reached[vet].explanation.parts["graph"] > 0
    assert reached[vet].explanation.parts["semantic"] > 0


def test_without_the_extra_a_clear_error_and_nothing_changes(
    vault: Vault, reopen: Callable[[str], Vault], monkeypatch: pytest.MonkeyPatch
) -> None:
    two_plans(vault)
    vault = reopen(ON)
    monkeypatch.setitem(sys.modules, "wordllama", None)  # find_spec then reports it missing
    monkeypatch.setattr(semantic, "_loaded", None)
    before = sorted(p.read_bytes() for p in vault.root.rglob("*.md"))
    with pytest.raises(InvalidInput) as caught:
        vault.search(QUERY)
    assert "pip install 'engram-team-memory[semantic]'" in str(caught.value)
    assert "recall.semantic: 0" in str(caught.value)
    assert sorted(p.read_bytes() for p in vault.root.rglob("*.md")) == before
    vault = reopen("recall:\n  semantic: 0\n")
    assert vault.search(QUERY).hits  # turned off, search works without the model


def test_the_cli_says_how_to_install_it(vault: Vault) -> None:
    two_plans(vault)
    add_settings(vault, ON)
    blocked = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'wordllama': raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from engram.cli import main\n"
        "sys.exit(main())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", blocked, "--vault", str(vault.root), "search", QUERY],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0, proc.stdout
    assert "pip install 'engram-team-memory[semantic]'" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def client_on(vault: Vault, tmp_path: Path) -> AsyncIterator[Client]:
    """An in-memory MCP client of the vault with semantic recall on."""
    add_settings(vault, ON)
    opened = Vault.open(vault.root)
    try:
        async with Client(build_server(opened, config_file=tmp_path / "mcp.yaml")) as c:
            yield c
    finally:
        opened.close()


@pytest.mark.anyio
async def test_engram_search_over_mcp_carries_the_part(vault: Vault, tmp_path: Path) -> None:
    garage, cat = two_plans(vault)
    async with client_on(vault, tmp_path) as client:
        answer = ok(await client.call_tool("engram_search", {"query": QUERY}))
    assert [h["id"] for h in answer["hits"]][:2] == [cat, garage]


@pytest.mark.anyio
async def test_over_mcp_a_missing_extra_is_a_tool_error_with_the_fix(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_plans(vault)
    monkeypatch.setitem(sys.modules, "wordllama", None)
    monkeypatch.setattr(semantic, "_loaded", None)
    async with client_on(vault, tmp_path) as client:
        message = error(await client.call_tool("engram_search", {"query": QUERY}))
    assert message.startswith("invalid_input: ") and "engram-team-memory[semantic]" in message


def test_doctor_reports_a_missing_extra(
    vault: Vault, reopen: Callable[[str], Vault], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert all(p.code != "semantic-missing" for p in vault.doctor().problems)
    vault = reopen(ON)
    assert all(p.code != "semantic-missing" for p in vault.doctor().problems)  # installed here
    monkeypatch.setitem(sys.modules, "wordllama", None)
    (problem,) = [p for p in vault.doctor().problems if p.code == "semantic-missing"]
    assert problem.path == "engram.yaml" and "engram-team-memory[semantic]" in problem.message
    assert not problem.fixable


def test_the_vectors_are_wordllamas_own() -> None:
    """engram reads the wheel's weights and tokenizer itself: its vectors must be the ones
    the library computes (long, short, punctuated and non-Latin text alike)."""
    from wordllama import WordLlama

    texts = [
        "the cat sat on the mat",
        "Take the cat to the animal doctor for shots. " * 40,
        "db_url_v2 → postgres://…; 東京の会議メモ",
        "x",
    ]
    reference = WordLlama.load(
        "l2_supercat", dim=256, cache_dir=Path(sys.modules["wordllama"].__file__).parent, disable_download=True
    ).embed(texts, norm=True)
    assert np.allclose(semantic.embed(texts), reference, atol=1e-5)


@pytest.mark.anyio
async def test_the_tool_schema_names_every_score_part(vault: Vault, tmp_path: Path) -> None:
    from engram.mcp.models import ExplanationOut

    garage, cat = two_plans(vault)
    vault.link(cat, "contextualizes", garage)
    async with client_on(vault, tmp_path) as client:
        answer = ok(await client.call_tool("engram_search", {"query": QUERY, "explain": True}))
    named = ExplanationOut.model_fields["parts"].description or ""
    parts = {k for h in answer["hits"] for k in h["explanation"]["parts"]}
    assert "semantic" in parts and "graph" in parts
    assert all(re.search(rf"\b{k}\b", named) for k in parts), (parts, named)


def test_embed_all_fills_every_vector_once(vault: Vault, reopen: Callable[[str], Vault]) -> None:
    two_plans(vault)
    vault.create("Clinic", "Open weekdays; the kitten needs a booster.", domain=["home"])
    with pytest.raises(InvalidInput, match=r"recall\.meaning and recall\.semantic are both 0"):
        reopen(OFF).embed_all()
    # Files written in the last two seconds are re-read by the next refresh (a re-read
    # row loses its vector); ten seconds on, they are settled.
    with time_machine.travel(time.time() + 10, tick=True):
        vault = reopen(ON)
        items = int(vault.state.index.query("SELECT count(*) AS n FROM items")[0]["n"])
        vault.refresh()
        assert vault.unembedded() == items
        steps: list[int] = []
        assert vault.embed_all(progress=steps.append, batch=2) == items
        assert sum(steps) == items and max(steps) <= 2
        assert vault.unembedded() == 0 and len(stored(vault)) == items
        assert vault.embed_all() == 0  # nothing left to do
        first = vault.search(QUERY, record=False)
        assert len(stored(vault)) == items  # the search found every vector stored
        assert all(h.explanation.parts["semantic"] > 0 for h in first.hits)


def test_reindex_embed_from_the_cli(vault: Vault) -> None:
    two_plans(vault)
    add_settings(vault, OFF)
    cli = [sys.executable, "-c", "from engram.cli import main; main()", "--vault", str(vault.root)]
    off = subprocess.run([*cli, "reindex", "--embed"], capture_output=True, text=True, timeout=120)
    assert off.returncode != 0 and "are both 0" in off.stderr and "Traceback" not in off.stderr
    (vault.root / "engram.yaml").write_text((vault.root / "engram.yaml").read_text(encoding="utf-8").replace(OFF, ""), encoding="utf-8")
    add_settings(vault, ON)
    on = subprocess.run([*cli, "reindex", "--embed", "--json"], capture_output=True, text=True, timeout=120)
    assert on.returncode == 0, on.stderr
    import json

    answer = json.loads(on.stdout)
    items = int(vault.state.index.query("SELECT count(*) AS n FROM items")[0]["n"])
    assert answer["embedded"] == items and len(stored(vault)) == items
