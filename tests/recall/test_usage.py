"""Usage without churn: searches journal retrievals; flush folds them into frontmatter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engram.recall.usage import DONE, FLUSHING, JOURNAL, journal_for
from engram.store.format import read_engram
from engram.vault import Vault


def markdown(vault: Vault) -> dict[str, bytes]:
    return {
        p.relative_to(vault.root).as_posix(): p.read_bytes()
        for p in vault.root.rglob("*.md")
        if ".engram" not in p.parts and ".git" not in p.parts
    }


def test_a_search_journals_and_never_rewrites_markdown(vault: Vault) -> None:
    item = vault.create("Cache warmup", "Warm the cache before traffic.").item
    before = markdown(vault)
    for _ in range(3):
        assert vault.search("cache warmup").hits
    assert markdown(vault) == before
    lines = (vault.state.state_dir / JOURNAL).read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["hits"][0][0] == item.id
    pending = journal_for(vault.state).pending()[item.id]
    assert pending.count == 3 and pending.last_score > 0
    vault.search("cache warmup", record=False)
    assert journal_for(vault.state).pending()[item.id].count == 3


def test_flush_folds_counts_in_one_batch_without_a_version_bump(vault: Vault) -> None:
    a = vault.create("Cache warmup", "Warm the cache before traffic.").item
    b = vault.create("Cache eviction", "Evict the cache by LRU.").item
    vault.search("cache warmup", limit=1)
    vault.search("cache")
    stats = vault.flush_usage()
    assert stats.items == 2 and stats.retrievals == 3
    fa, _ = read_engram(vault.root / a.path, a.path)  # type: ignore[operator]
    fb, _ = read_engram(vault.root / b.path, b.path)  # type: ignore[operator]
    assert (fa.retrieval_count, fb.retrieval_count) == (2, 1)
    assert fa.version == 1 and fa.last_retrieved_at is not None
    assert not (vault.state.state_dir / JOURNAL).exists() and not (vault.state.state_dir / FLUSHING).exists()
    assert journal_for(vault.state).pending() == {}
    assert vault.flush_usage().items == 0  # nothing left: a second flush is a no-op


def test_an_interrupted_flush_resumes_without_counting_twice(vault: Vault) -> None:
    a = vault.create("Cache warmup", "Warm the cache before traffic.").item
    b = vault.create("Cache eviction", "Evict the cache by LRU.").item
    vault.search("cache")
    journal = journal_for(vault.state)
    journal.take()  # the journal was moved aside, then the process died after one item:
    vault.rewrite_item(a.path, retrieval_count=1)  # type: ignore[arg-type]
    journal.mark_done(a.id)
    vault.search("cache eviction")  # a new retrieval arrives before the next flush
    stats = vault.flush_usage()
    assert stats.retrievals == 2  # b: once from the old batch, once from the new one
    assert vault.get(a.id).retrieval_count == 1 and vault.get(b.id).retrieval_count == 2
    assert not (vault.state.state_dir / DONE).exists()


def test_retrievals_from_another_process_are_seen_and_flushed(vault: Vault) -> None:
    item = vault.create("Cache warmup", "Warm the cache before traffic.").item
    code = (
        "import sys; from engram.vault import Vault; v = Vault.open(sys.argv[1]);"
        " [v.search('cache warmup') for _ in range(4)]; v.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(vault.root)], check=True)
    assert journal_for(vault.state).pending()[item.id].count == 4
    assert vault.flush_usage().retrievals == 4
    assert vault.get(item.id).retrieval_count == 4


def test_unflushed_heat_lifts_an_item_in_ranking(vault: Vault) -> None:
    vault.create("Cache warmup A", "warm the cache before traffic")
    hot = vault.create("Cache warmup B", "warm the cache before traffic", dedupe=False).item
    journal_for(vault.state).record([(hot.id, 1.0)] * 30)
    result = vault.search("cache warmup", record=False)
    assert result.hits[0].id == hot.id and result.hits[0].explanation.parts["heat"] > 0


def test_journal_lines_for_missing_items_are_dropped(vault: Vault) -> None:
    journal_for(vault.state).record([("01NOTANITEM0000000000000000", 0.5)])
    with (vault.state.state_dir / JOURNAL).open("a") as fh:
        fh.write("not json\n")
    stats = vault.flush_usage()
    assert stats.missing == 1 and stats.items == 0


def test_a_big_journal_is_compacted_without_changing_the_totals(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram.recall import usage

    a = vault.create("Cache warmup", "Warm the cache before traffic.").item
    b = vault.create("Cache eviction", "Evict the cache by LRU.").item
    journal = journal_for(vault.state)
    for _ in range(50):
        journal.record([(a.id, 0.9), (b.id, 0.4)], "2026-01-01T00:00:00.000Z")
    journal.record([(a.id, 0.7)], "2026-02-01T00:00:00.000Z")
    before = dict(journal.pending())
    journal.compact()
    assert len((vault.state.state_dir / JOURNAL).read_text().splitlines()) == 2
    after = dict(journal.pending())
    assert after == before and after[a.id].count == 51 and after[a.id].last_at.startswith("2026-02")
    monkeypatch.setattr(usage, "COMPACT_BYTES", 10)
    journal.record([(b.id, 0.5)])  # over the limit: compacted on append
    assert len((vault.state.state_dir / JOURNAL).read_text().splitlines()) == 2
    assert vault.flush_usage().retrievals == 102
