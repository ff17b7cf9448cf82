"""`engram bench`: recall latency on the vault's own words, measured without writing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import InvalidInput
from engram.quality.timing import sample_queries
from engram.vault import Vault
from tests.conftest import snapshot

TOPICS = ("postgres vacuum bloat", "http retry jitter", "flaky test quarantine", "payment idempotency key",
          "kafka consumer lag", "terraform state lock", "redis eviction policy", "dns cache expiry")


@pytest.fixture
def filled(vault: Vault) -> Vault:
    for i, topic in enumerate(TOPICS * 3):
        vault.create(f"{topic.title()} note {i}", f"What we learned about {topic} in incident {i}.",
                     summary=f"{topic} lesson", domain=["ops"], dedupe=False)
    return vault


def test_the_sample_is_drawn_from_the_vaults_words_and_repeats_exactly(filled: Vault) -> None:
    state = filled.state  # the core function, to look at what it would time
    first = sample_queries(state, 10)
    assert first == sample_queries(state, 10) and len(first) == 10
    words = {w for t in TOPICS for w in t.split()} | {"note", "lesson"} | {str(i) for i in range(24)}
    assert all(2 <= len(q.split()) <= 4 and set(q.split()) <= words for q in first)


def test_bench_times_every_query_and_changes_nothing(filled: Vault) -> None:
    before = snapshot(filled)
    b = filled.bench(queries=15)
    assert (b.queries, b.items, b.limit, b.source) == (15, 24, 10, "vault sample")
    assert 0 < b.p50 <= b.p95 <= b.p99 <= b.worst and b.refresh_ms >= 0
    assert snapshot(filled) == before
    assert all(i.retrieval_count == 0 for i in filled.list())


def test_bench_over_a_golden_set_times_its_queries(filled: Vault, tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text("- query: vacuum bloat\n  expect: []\n- query: retry jitter\n  expect: []\n")
    b = filled.bench(golden=golden)
    assert (b.queries, b.source) == (2, str(golden))


def test_bench_refuses_what_it_cannot_time(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="no item with two words"):
        vault.bench()
    with pytest.raises(InvalidInput, match="queries must be 1 to 10,000"):
        vault.bench(queries=0)
    with pytest.raises(InvalidInput, match="limit must be 1 to 200"):
        vault.bench(limit=0)


def test_bench_from_the_cli(filled: Vault) -> None:
    out = CliRunner().invoke(cli, ["--vault", str(filled.root), "bench", "--queries", "5"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("5 searches over 24 items (vault sample, limit 10") and "p95" in out.output
    as_json = CliRunner().invoke(cli, ["--vault", str(filled.root), "bench", "--queries", "5", "--json"])
    assert as_json.exit_code == 0 and '"p50Ms"' in as_json.output
