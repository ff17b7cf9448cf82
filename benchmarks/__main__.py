"""``python -m benchmarks run [what]``: run the harness, write JSON and SVG.

``what`` is ``scale``, ``quality``, ``writes``, ``refresh``, ``merge``, ``mcp``, ``viewer``,
``learn``, ``redteam`` or ``all`` (every one of them, in that order; ``refresh`` and
``mcp`` reuse the vaults ``scale`` generates).

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
#: Every benchmark ``run`` knows; all but the first two are modules ``benchmarks/bench_<kind>.py``.
KINDS = ("quality", "scale", "writes", "refresh", "merge", "mcp", "viewer", "learn", "redteam")
CATEGORY_ORDER = ("overall", "single-hop", "temporal", "multi-hop", "open-domain", "adversarial")


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(), "load": os.getloadavg(), "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version, "platform": platform.platform(),
    }


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
    locomo = data.get("locomo", {})
    for granularity in ("session", "turn", "hybrid"):
        if granularity not in locomo:
            continue
        block = locomo[granularity]
        for metric, goal in (("recall@5", 0.9), ("mrr", 0.8)):
            charts[f"locomo-{granularity}-{metric.replace('@', '')}-latest"] = plot.bars(
                f"LoCoMo {metric} by category ({granularity} items)", list(CATEGORY_ORDER),
                {name: [block[key][c].get(metric, 0.0) for c in CATEGORY_ORDER]
                 for name, key in (("plain FTS5 BM25", "baseline_fts5_bm25"),
                                   ("engram, expansion on", "engram_expand_on"),
                                   ("engram, expansion off", "engram_expand_off"))},
                goal=goal, goal_label="overall goal",
            )
    if "cranfield" in data:
        c = data["cranfield"]
        charts["cranfield-latest"] = plot.bars(
            "Cranfield", ["MAP", "nDCG@10"],
            {"plain FTS5 BM25": [c["baseline_fts5_bm25"]["MAP"], c["baseline_fts5_bm25"]["nDCG@10"]],
             "engram": [c["engram"]["MAP"], c["engram"]["nDCG@10"]]},
        )
    return charts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run benchmarks")
    run.add_argument("what", choices=(*KINDS, "all"), nargs="?", default="all")
    run.add_argument("--sizes", default="10000,100000", help="vault sizes for scale (comma separated)")
    run.add_argument("--granularity", default="session,turn,hybrid", help="LoCoMo item granularities")
    run.add_argument("--golden", default=None, help="learn: a golden set in the format of benchmarks/data/learn-golden.yaml")
    args = parser.parse_args(argv)
    from benchmarks.quality import run_cranfield, run_locomo
    from benchmarks.scale import run_scale

    if args.what in ("quality", "all"):
        work = Path(tempfile.mkdtemp(prefix="engram-quality-"))
        started = time.perf_counter()
        data = {"machine": machine(), "locomo": run_locomo(work, args.granularity.split(",")),
                "cranfield": run_cranfield(work)}
        data["seconds"] = round(time.perf_counter() - started, 1)
        data["machine_after"] = machine()
        print(f"quality: {_write('quality', data, quality_charts(data))}")
        _summary_quality(data)
    if args.what in ("scale", "all"):
        data = {"machine": machine(), **run_scale([int(s) for s in args.sizes.split(",")])}
        data["machine_after"] = machine()
        print(f"scale: {_write('scale', data, scale_charts(data))}")
        _summary_scale(data)
    for kind in KINDS[2:]:
        if args.what in (kind, "all"):
            module = importlib.import_module(f"benchmarks.bench_{kind}")
            print(f"{kind}:")
            if kind == "learn":
                RESULTS.mkdir(parents=True, exist_ok=True)
                extra = ["--golden", args.golden] if args.golden else []
                module.main([*extra, "--json", str(RESULTS / "learn-latest.json")])
            else:
                module.main([])
    return 0


def _summary_quality(data: dict[str, Any]) -> None:
    for granularity, block in data["locomo"].items():
        if not isinstance(block, dict):
            continue
        for key in ("baseline_fts5_bm25", "engram_expand_on", "engram_expand_off"):
            o = block[key]["overall"]
            print(f"  locomo {granularity:8s} {key:20s} R@5 {o['recall@5']:.3f}  R@10 {o['recall@10']:.3f}  MRR {o['mrr']:.3f}")
    c = data["cranfield"]
    for key in ("baseline_fts5_bm25", "engram"):
        print(f"  cranfield {key:20s} MAP {c[key]['MAP']:.4f}  nDCG@10 {c[key]['nDCG@10']:.4f}")


def _summary_scale(data: dict[str, Any]) -> None:
    for size, entry in data.items():
        if not size.isdigit():
            continue
        r, c, i = entry["recall"], entry["cold"], entry["incremental"]
        print(
            f"  {int(size):>7} items: cold {c['items_per_s']:.0f} items/s, index {entry['size']['index_mb']} MB,"
            f" peak {c['maxrss_self_mb']:.0f}+{c['maxrss_workers_mb']:.0f} MB;"
            f" refresh(100) walk {i['walk_refresh_s']}s / watcher {i['watcher_refresh_s']}s;"
            f" recall p50 {r['p50_ms']} ms p95 {r['p95_ms']} ms"
        )


if __name__ == "__main__":
    sys.exit(main())
