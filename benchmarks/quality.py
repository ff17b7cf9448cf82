"""Retrieval quality as an agent gets it: ``engram_search`` over MCP stdio, vault defaults.

Every engram figure comes from :func:`benchmarks.mcp_search.stdio_search`: the
collection is written in the documented on-disk format, indexed, and one ``engram serve``
session per query set answers the queries through the official ``mcp`` client with
nothing but ``query``, ``limit`` and (LoCoMo) ``domain`` — default tier, token budget,
relevance floor, usage recording (a list deeper than 10 also passes a ``token_budget``
that carries it: ``tier=auto`` leaves out what its budget cannot carry). Next to it, in the same run on the same documents:

- ``bm25``: plain SQLite FTS5 BM25 — the same Porter tokenizer, title weight 2 (body 1),
  the OR of the query's non-stopword words (each quoted), ranked by ``bm25()``;
- ``floor_off``: engram with ``recall.minRelevance: 0`` in ``engram.yaml`` (the ranking
  alone, and the relevance of each query's best hit, which calibrates abstention);
- ``uncapped``: engram with ``recall.candidatePostings`` unbounded: what the bounded
  candidate selection costs in quality;
- ``semantic``: engram with the optional semantic model on (``recall.semantic: 0.5``;
  needs ``pip install -e '.[semantic]'``), paired with the defaults in
  ``semantic_vs_defaults``.

Collections and query sets: :mod:`benchmarks.collections`. Metrics per query on the
ranking of keys (first appearance of each): recall@5, recall@10, MRR, AP over the
returned list (MAP@100 for Cranfield), nDCG@10 with graded gains; an abstained answer
scores 0. For no-answer sets: the share of queries answered ``no_confident_match``.
``vs_bm25`` pairs the defaults with the baseline query by query (:func:`paired`): the
mean difference with a 95 % interval and how many queries each side wins, so a gap of
a few thousandths reads as what it is.
``$ENGRAM_BENCH_SETTINGS`` names a YAML file appended to every vault's ``engram.yaml``
(to try other weights without editing code).
"""

from __future__ import annotations

import math
import os
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import collections as coll
from benchmarks.collections import Collection, Doc, Query
from benchmarks.mcp_search import hit_ids, stdio_search
from engram.index.query import STOPWORDS
from engram.quality.evaluation import metrics  # the metrics `engram eval` reports
from engram.vault import Vault

CONFIGS: dict[str, str] = {
    "defaults": "",
    "floor_off": "recall:\n  minRelevance: 0\n",
    "uncapped": "recall:\n  candidatePostings: 1000000000\n",
    "semantic": "recall:\n  semantic: 0.5\n",
    # the defaults without the sentence encoder: recall by words alone, as before it
    "words": "recall:\n  meaning: 0\n",
}
#: Floors the calibration sweep reports (abstention precision/recall at each).
SWEEP = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def _extra_settings() -> str:
    extra = os.environ.get("ENGRAM_BENCH_SETTINGS")
    return Path(extra).read_text(encoding="utf-8") if extra else ""


# ---------------------------------------------------------------------- metrics


def keys_of(ids: Sequence[str], where: Mapping[str, str]) -> list[str]:
    """Item ids → keys by first appearance (several items may share a key)."""
    return list(dict.fromkeys(where[i] for i in ids if i in where))


def aggregate(rows: Sequence[tuple[Query, dict[str, float], bool]]) -> dict[str, Any]:
    """Means per category and overall; ``abstained`` counts no_confident_match answers;
    ``per_query`` keeps each query's metrics, in query order, for :func:`paired`."""
    by: dict[str, list[tuple[dict[str, float], bool]]] = defaultdict(list)
    for q, m, abstained in rows:
        by["overall"].append((m, abstained))
        by[q.category].append((m, abstained))
    out: dict[str, Any] = {}
    for cat, items in by.items():
        scored = [m for m, _ in items if m]
        entry: dict[str, Any] = {"n": len(items), "abstained": sum(a for _, a in items)}
        if scored:
            entry |= {k: round(statistics.fmean(m[k] for m in scored), 4) for k in scored[0]}
        out[cat] = entry
    scored = [m for _, m, _ in rows if m]
    out["per_query"] = {k: [round(m[k], 4) for m in scored] for k in (scored[0] if scored else {})}
    return out


def paired(ours: Mapping[str, Sequence[float]], base: Mapping[str, Sequence[float]]) -> dict[str, dict[str, float]]:
    """Per metric: the mean of (ours − base) over the same queries, its 95 % interval
    (normal approximation of the paired mean, fine at hundreds of queries) and the
    number of queries where each side scores higher."""
    out: dict[str, dict[str, float]] = {}
    for metric, values in ours.items():
        diffs = [a - b for a, b in zip(values, base.get(metric, ()), strict=True)]
        if len(diffs) < 2:
            continue
        mean = statistics.fmean(diffs)
        half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
        out[metric] = {
            "diff": round(mean, 4), "low": round(mean - half, 4), "high": round(mean + half, 4),
            "better": sum(d > 0 for d in diffs), "worse": sum(d < 0 for d in diffs),
        }
    return out


# ---------------------------------------------------------------------- the baseline


class Bm25:
    """Plain FTS5 BM25 over the collection's documents (see the module docstring)."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(grp UNINDEXED, key UNINDEXED, title, body,"
            " tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.conn.executemany("INSERT INTO docs VALUES (?,?,?,?)", [(d.group, d.key, d.title, d.body) for d in docs])

    @staticmethod
    def match(text: str) -> str:
        words = list(dict.fromkeys(w.lower() for w in coll._WORDS.findall(text)))
        kept = [w for w in words if w not in STOPWORDS] or words
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in kept)

    def holds(self, q: Query, key: str) -> bool:
        """Whether document ``key`` holds one of the query's words that not every
        document of the query's group holds (a conversation's speakers' names are in all)."""
        size = self.conn.execute("SELECT count(*) FROM docs WHERE grp = ?", (q.group,)).fetchone()[0]
        for word in self.match(q.text).split(" OR "):
            if not word:
                continue
            n = self.conn.execute("SELECT count(*) FROM docs WHERE docs MATCH ? AND grp = ?", (word, q.group)).fetchone()[0]
            if n < size and self.conn.execute(
                "SELECT 1 FROM docs WHERE docs MATCH ? AND key = ?", (word, key)
            ).fetchone():
                return True
        return False

    def search(self, q: Query, limit: int) -> list[str]:
        if not self.match(q.text):
            return []
        rows = self.conn.execute(
            "SELECT key FROM docs WHERE docs MATCH ? AND (? = '' OR grp = ?)"
            " ORDER BY bm25(docs, 0, 0, 2.0, 1.0) LIMIT ?",
            (self.match(q.text), q.group, q.group, limit),
        ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))


# ---------------------------------------------------------------------- engram over MCP


def _configure(root: Path, config: str) -> None:
    (root / "engram.yaml").write_text("formatVersion: 1\n" + CONFIGS[config] + _extra_settings())
    (root / ".engram" / "usage.jsonl").unlink(missing_ok=True)  # every run starts cold


def run_engram(
    root: Path, where: Mapping[str, str], queries: Sequence[Query], limit: int, config: str, domain_prefix: str
) -> tuple[dict[str, Any], list[float | None]]:
    """One stdio session answering ``queries``; the aggregate and each answer's best
    relevance (None where the answer has none)."""
    _configure(root, config)
    rows: list[tuple[Query, dict[str, float], bool]] = []
    best: list[float | None] = []
    latencies: list[float] = []
    with stdio_search(root) as search:
        for q in queries:
            args: dict[str, Any] = {"limit": limit}
            if limit > 10:
                # tier=auto bounds an answer by its token budget (issue 29): the default
                # 2,000 tokens carry ~45 catalog lines, so a deep list is asked with the
                # budget an answer names for all of its hits (100 tokens a hit covers it).
                args["token_budget"] = 100 * limit
            if q.group:
                args["domain"] = f"{domain_prefix}{q.group}"
            started = time.perf_counter()
            answer = search(q.text, **args)
            latencies.append((time.perf_counter() - started) * 1000)
            abstained = answer["status"] != "ok"
            rows.append((q, metrics(keys_of(hit_ids(answer), where), q.relevant), abstained))
            best.append(answer.get("best_relevance"))
    out = aggregate(rows)
    out["latency_ms_p50"] = round(statistics.median(latencies), 2)
    return out, best


def run_bm25(docs: Sequence[Doc], queries: Sequence[Query], limit: int) -> dict[str, Any]:
    base = Bm25(docs)
    return aggregate([(q, metrics(base.search(q, limit), q.relevant), False) for q in queries])


def evaluate(
    c: Collection, work: Path, *, limit: int, extra: Mapping[str, list[Query]] | None = None,
    domain_prefix: str = "", configs: Sequence[str] = tuple(CONFIGS),
) -> dict[str, Any]:
    """Every query set of ``c`` (and the ``extra`` no-answer sets) under each config."""
    root = work / c.name
    where = c.write(root)
    vault = Vault.open(root)
    try:
        vault.reindex()
    finally:
        vault.close()
    out: dict[str, Any] = {"items": len(where), **c.meta}
    sets = {**c.queries, **(extra or {})}
    for name, queries in sets.items():
        answerable = any(q.relevant for q in queries)
        block: dict[str, Any] = {"queries": len(queries)}
        if answerable:
            block["bm25"] = run_bm25(c.docs, queries, limit)
        for config in configs:
            if config in ("uncapped", "semantic") and not answerable:  # abstention is the defaults'
                continue
            block[config], best = run_engram(root, where, queries, limit, config, domain_prefix)
            if config == "floor_off":
                block["best_relevance"] = best
        if answerable:
            block["vs_bm25"] = paired(block["defaults"]["per_query"], block["bm25"]["per_query"])
            if "semantic" in block:
                block["semantic_vs_defaults"] = paired(block["semantic"]["per_query"], block["defaults"]["per_query"])
                block["semantic_vs_bm25"] = paired(block["semantic"]["per_query"], block["bm25"]["per_query"])
        out[name] = block
    return out


# ---------------------------------------------------------------------- calibration


def sweep(answerable: Mapping[str, Any], no_answer: Mapping[str, Any], floors: Sequence[float] = SWEEP) -> list[dict[str, float]]:
    """Abstention at each floor, from the floor-off runs: the share of answerable queries
    that would abstain, and precision/recall of abstaining on the no-answer set."""
    pos = [b or 0.0 for b in no_answer["best_relevance"]]
    neg = [b or 0.0 for b in answerable["best_relevance"]]
    out = []
    for floor in floors:
        tp = sum(b < floor for b in pos)
        fp = sum(b < floor for b in neg)
        out.append({
            "floor": floor, "answerable_abstained": round(fp / len(neg), 4),
            "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0, "recall": round(tp / len(pos), 4),
        })
    return out


def run_quality(work: Path, granularities: Sequence[str] = ("session", "turn", "hybrid"), *,
                known_sizes: Sequence[int] = (1000, 10000)) -> dict[str, Any]:
    started = time.perf_counter()
    cran = coll.cranfield()
    data = coll.locomo_data()
    convs = [str(s["sample_id"]) for s in data]
    out: dict[str, Any] = {}
    for granularity in granularities:
        c = coll.locomo(granularity, data)
        extra = {"cranfield_queries": coll.cross_no_answer(cran.queries["standard"], convs, 225)}
        out[c.name] = evaluate(c, work, limit=10 if granularity == "session" else 50, extra=extra,
                               domain_prefix="locomo/")
    lq = coll.locomo_questions(data)[0]["standard"]
    out["cranfield"] = evaluate(cran, work, limit=100, extra={"locomo_questions": coll.cross_no_answer(lq[::3], [], 225)})
    for size in known_sizes:
        c = coll.known_items(size)
        out[c.name] = evaluate(c, work, limit=10, configs=("defaults", "uncapped", "semantic"))
    out["calibration"] = calibration(out)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def calibration(out: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, block in out.items():
        if not isinstance(block, dict) or "standard" not in block or "best_relevance" not in block["standard"]:
            continue
        for set_name, data in block.items():
            if isinstance(data, dict) and "best_relevance" in data and "bm25" not in data:
                result[f"{name}/{set_name}"] = sweep(block["standard"], data)
    return result
