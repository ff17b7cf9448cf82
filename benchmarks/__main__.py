"""``python -m benchmarks run [what]``: run the harness, write JSON and SVG.

``what`` is ``scale``, ``quality``, ``writes``, ``refresh``, ``merge``, ``mcp``, ``viewer``,
``learn``, ``adoption``, ``import``, ``scopes``, ``tokens``, ``redteam``, ``paraphrase`` or ``all`` (every one of them, in
that order; ``refresh`` and ``mcp`` reuse the vaults ``scale`` generates). ``semantic``
(:mod:`benchmarks.bench_semantic`) runs only when named: a probe of the semantic
extra's model as a retriever of its own, outside the product's path.

Results go to ``benchmarks/results/`` (gitignored): ``<kind>-<UTC time>.json``, a copy as
``<kind>-latest.json``, and ``<kind>-latest.svg`` charts. Each JSON records the machine
(CPU count, load average before and after, Python and SQLite versions) next to the
numbers, because the machines that run this are shared and timing is noisy.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import plot

RESULTS = Path(__file__).resolve().parent / "results"
#: Every benchmark ``run`` knows; all but the first four are modules ``benchmarks/bench_<kind>.py``.
KINDS = (
    "quality", "scale", "writes", "refresh", "merge", "mcp", "viewer", "learn", "adoption", "import", "scopes", "tokens",
    "redteam", "paraphrase",
)
#: Benchmarks ``all`` leaves out (they need packages outside the dev environment).
OPTIONAL = ("semantic",)
CATEGORY_ORDER = ("overall", "single-hop", "temporal", "multi-hop", "open-domain", "adversarial")


def machine() -> dict[str, Any]:
    from engram.recall.models import AUTO, preferred

    return {
        "cpus": os.cpu_count(), "load": os.getloadavg(), "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version, "platform": platform.platform(), "loop_ms": loop_ms(),
        # what recall.model: auto runs on this machine (a pulled model changes every figure)
        "encoder": preferred(AUTO).name,
    }


def loop_ms() -> float:
    """How fast this machine runs Python now: the best of three timings of one fixed loop.
    A shared machine's load average does not show a slower CPU; this does, so latencies
    of two runs can be compared."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def _write(kind: str, data: dict[str, Any], charts: dict[str, str]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS / f"{kind}-{stamp}.json"
    text = json.dumps(data, indent=2)
    path.write_text(text)
    (RESULTS / f"{kind}-latest.json").write_text(text)
    for name, svg in charts.items():
        (RESULTS / f"{name}.svg").write_text(svg)
    return path


def scale_charts(data: dict[str, Any]) -> dict[str, str]:
    sizes = [k for k in data if k.isdigit()]
    labels = [f"{int(s) // 1000}k items" for s in sizes]
    return {
        "scale-recall-latest": plot.bars(
            "Recall latency (in-process, expansion on)", labels,
            {"p50": [data[s]["recall"]["p50_ms"] for s in sizes],
             "p95": [data[s]["recall"]["p95_ms"] for s in sizes]},
            unit=" ms", goal=20.0, goal_label="p95 goal",
        ),
        "scale-index-latest": plot.bars(
            "Cold index rate", labels, {"items/s": [data[s]["cold"]["items_per_s"] for s in sizes]},
            goal=5000.0, goal_label="goal",
        ),
    }


def quality_charts(data: dict[str, Any]) -> dict[str, str]:
    charts: dict[str, str] = {}
    for granularity in ("session", "turn", "hybrid"):
        block = data.get(f"locomo-{granularity}", {}).get("standard")
        if not block:
            continue
        for metric, goal in (("recall@5", 0.9), ("mrr", 0.82)):
            charts[f"locomo-{granularity}-{metric.replace('@', '')}-latest"] = plot.bars(
                f"LoCoMo {metric} by category ({granularity} items)", list(CATEGORY_ORDER[:-1]),
                {name: [block[key].get(c, {}).get(metric, 0.0) for c in CATEGORY_ORDER[:-1]]
                 for name, key in (("plain FTS5 BM25", "bm25"), ("engram_search, defaults", "defaults"))},
                goal=goal, goal_label="overall goal",
            )
    if "cranfield" in data:
        c = data["cranfield"]
        sets = [s for s in ("standard", "long") if s in c]
        charts["cranfield-latest"] = plot.bars(
            "Cranfield (MAP@100, nDCG@10)", [f"{s} {m}" for s in sets for m in ("MAP", "nDCG@10")],
            {name: [c[s][key]["overall"][m] for s in sets for m in ("ap", "ndcg@10")]
             for name, key in (("plain FTS5 BM25", "bm25"), ("engram_search, defaults", "defaults"))},
        )
    return charts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run benchmarks")
    run.add_argument("what", choices=(*KINDS, *OPTIONAL, "all"), nargs="?", default="all")
    run.add_argument("--sizes", default="10000,100000", help="vault sizes for scale (comma separated)")
    run.add_argument("--granularity", default="session,turn,hybrid", help="LoCoMo item granularities")
    run.add_argument("--known", default="1000,10000", help="known-item vault sizes (comma separated)")
    run.add_argument("--golden", default=None, help="learn: a golden set in the format of benchmarks/data/learn-golden.yaml")
    args = parser.parse_args(argv)
    from benchmarks.quality import run_quality
    from benchmarks.scale import run_scale

    if args.what in ("quality", "all"):
        work = Path(tempfile.mkdtemp(prefix="engram-quality-"))
        started = time.perf_counter()
        known = [int(k) for k in args.known.split(",") if k]
        data = {"machine": machine(), **run_quality(work, args.granularity.split(","), known_sizes=known)}
        data["seconds"] = round(time.perf_counter() - started, 1)
        data["machine_after"] = machine()
        print(f"quality: {_write('quality', data, quality_charts(data))}")
        _summary_quality(data)
    if args.what in ("scale", "all"):
        data = {"machine": machine(), **run_scale([int(s) for s in args.sizes.split(",")])}
        data["machine_after"] = machine()
        print(f"scale: {_write('scale', data, scale_charts(data))}")
        _summary_scale(data)
    for kind in (*KINDS[2:], *OPTIONAL):
        if args.what == kind or (args.what == "all" and kind not in OPTIONAL):
            module = importlib.import_module(f"benchmarks.bench_{kind}")
            print(f"{kind}:")
            if kind == "learn":
                RESULTS.mkdir(parents=True, exist_ok=True)
                extra = ["--golden", args.golden] if args.golden else []
                module.main([*extra, "--json", str(RESULTS / "learn-latest.json")])
            elif kind == "paraphrase":
                RESULTS.mkdir(parents=True, exist_ok=True)
                module.main(["--json", str(RESULTS / "paraphrase-latest.json")])
            else:
                module.main([])
    return 0


def _summary_quality(data: dict[str, Any]) -> None:
    for name, block in data.items():
        if not isinstance(block, dict) or "standard" not in block:
            continue
        for set_name, runs in block.items():
            if not isinstance(runs, dict) or "queries" not in runs:
                continue
            for key in ("bm25", "defaults", "floor_off", "uncapped"):
                if key not in runs:
                    continue
                o = runs[key]["overall"]
                scores = "  ".join(f"{m} {o[m]:.4f}" for m in ("recall@5", "recall@10", "mrr", "ap", "ndcg@10") if m in o)
                print(f"  {name:15s} {set_name:18s} {key:9s} {scores}  abstained {o.get('abstained', 0)}/{o['n']}")
            if "vs_bm25" in runs:
                pairs = "  ".join(
                    f"{m} {d['diff']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}] {d['better']}↑{d['worse']}↓"
                    for m, d in runs["vs_bm25"].items()
                )
                print(f"  {name:15s} {set_name:18s} {'vs bm25':9s} {pairs}")


def _summary_scale(data: dict[str, Any]) -> None:
    for size, entry in data.items():
        if not size.isdigit():
            continue
        r, c, i = entry["recall"], entry["cold"], entry["incremental"]
        print(
            f"  {int(size):>7} items: cold {c['items_per_s']:.0f} items/s, index {entry['size']['index_mb']} MB,"
            f" peak {c['maxrss_self_mb']:.0f}+{c['maxrss_workers_mb']:.0f} MB;"
            f" refresh(100) walk {i['walk_refresh_s']}s / watcher {i['watcher_refresh_s']}s;"
            f" recall p50 {r['p50_ms']} ms p95 {r['p95_ms']} ms, short lists {r.get('short_lists')}"
        )


if __name__ == "__main__":
    sys.exit(main())
