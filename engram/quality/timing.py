"""Recall latency on a vault's own items: what ``engram bench`` measures.

The queries come from the vault itself, so the figure is about this vault's size and
words, not a synthetic one: a fixed-seed sample of items, each giving two to four of the
non-stopword words of its title and summary (or the queries of a golden set, see
:mod:`engram.quality.evaluation`). Each runs through :func:`engram.scopes.recall.search`
with the vault's recall settings and usage recording off — the work an agent's
``engram_search`` does, minus the transport — after a warm-up pass over the same
queries, so the figures are those of a long-lived server (a one-shot CLI call adds
Python's start-up). Also timed: a refresh that finds nothing to do (what every call
pays to know the index is current).

Nothing is written: no usage, no index change beyond what the refresh would do anyway.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput
from engram.index.query import STOPWORDS
from engram.items.state import VaultState
from engram.quality.evaluation import load
from engram.scopes.recall import search

_WORDS = re.compile(r"[^\W_]{3,}")
SEED = 7


@dataclass(frozen=True, slots=True)
class Bench:
    """Latency of ``queries`` searches over ``items`` items (milliseconds)."""

    items: int
    queries: int
    limit: int
    p50: float
    p95: float
    p99: float
    worst: float
    refresh_ms: float
    source: str  # "vault sample" or the golden set's path

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items, "queries": self.queries, "limit": self.limit, "source": self.source,
            "p50Ms": self.p50, "p95Ms": self.p95, "p99Ms": self.p99, "worstMs": self.worst,
            "refreshMs": self.refresh_ms,
        }


def sample_queries(state: VaultState, count: int, seed: int = SEED) -> list[str]:
    """Up to ``count`` queries of two to four words, each from one item's title and summary."""
    state.ensure_fresh()
    rows = state.index.query(
        "SELECT title, summary FROM items WHERE status NOT IN ('quarantined', 'forgotten') ORDER BY id"
    )
    rng = random.Random(seed)  # noqa: S311 - a reproducible sample, not a secret
    picked = rng.sample(list(rows), min(count * 2, len(rows)))
    out: list[str] = []
    for row in picked:
        words = list(dict.fromkeys(
            w.lower() for w in _WORDS.findall(f"{row['title']} {row['summary'] or ''}") if w.lower() not in STOPWORDS
        ))
        if len(words) >= 2:
            out.append(" ".join(rng.sample(words, min(len(words), rng.randint(2, 4)))))
        if len(out) == count:
            break
    return out


def run(state: VaultState, *, queries: int = 200, golden: Path | None = None, limit: int = 10) -> Bench:
    """Time recall on this vault (see the module docstring). Raises InvalidInput when
    the vault (or the golden set) gives no query to time."""
    if not 1 <= queries <= 10_000:
        raise InvalidInput(f"queries must be 1 to 10,000, not {queries}.", field="queries", hint="e.g. 200")
    if not 1 <= limit <= 200:
        raise InvalidInput(f"limit must be 1 to 200, not {limit}.", field="limit", hint="e.g. 10")
    texts = [c.query for c in load(state, golden)][:queries] if golden else sample_queries(state, queries)
    if not texts:
        raise InvalidInput(
            "this vault has no item with two words in its title or summary to make a query of.",
            field="queries", hint="Add items, or pass a golden set with --golden.",
        )
    for text in texts:  # warm: the page cache, SQLite's statements, the word counts
        search(state, text, limit=limit, record=False)
    times: list[float] = []
    for text in texts:
        started = time.perf_counter()
        search(state, text, limit=limit, record=False)
        times.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    state.refresh()
    refresh_ms = (time.perf_counter() - started) * 1000
    ordered = sorted(times)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))], 2)

    total = state.index.search.doc_counts(())[0]  # the index's item tally, not a count(*) scan
    return Bench(
        items=total, queries=len(times), limit=limit, p50=round(statistics.median(times), 2),
        p95=pct(0.95), p99=pct(0.99), worst=round(ordered[-1], 2), refresh_ms=round(refresh_ms, 2),
        source=str(golden) if golden else "vault sample",
    )
