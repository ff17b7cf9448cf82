"""What an org vault costs recall: `engram_search` over stdio with and without one.

Two synthetic vaults from :mod:`benchmarks.synth` (same vocabulary, different seeds):
the team vault and the org vault, placed as this machine's org clone
(``.engram/scopes/org/``) so the search reads it exactly as after ``engram scopes
sync``. The same queries (two or three words from team item titles, so every query has
hits and graph expansion runs) go through the real ``engram serve`` subprocess and the
official client twice: with ``scopes.org`` unset (one vault) and set (both vaults, one
merged answer). Each query runs once to warm up, then ``--rounds`` timed passes.

    python -m benchmarks.bench_scopes [--team 10000] [--org 10000] [--queries 100] [--rounds 3]

Prints one JSON document and writes it to ``benchmarks/results/scopes.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from benchmarks import synth
from benchmarks.bench_mcp import make_queries, over_stdio
from engram.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="engram_search latency with and without an org vault.")
    parser.add_argument("--team", type=int, default=10_000)
    parser.add_argument("--org", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="engram-scopes-"))
    team_data = synth.generate(args.team)
    team = work / "team"
    shutil.copytree(team_data.root, team)
    org_data = synth.generate(args.org, seed=13)
    clone = team / ".engram" / "scopes" / "org"
    shutil.copytree(org_data.root, clone)
    subprocess.run(["git", "init", "--quiet", str(clone)], check=True)
    remote = work / "org.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    queries = make_queries(team_data, args.queries)
    ids = random.Random(5).sample(list(team_data.ids), args.queries)
    for root in (team, clone):
        Vault.open(root).refresh()  # index once, outside the timings
    alone = anyio.run(over_stdio, team, queries, args.rounds, ids)
    with Vault.open(team) as vault:
        vault.configure_scopes(org_repo=str(remote))
        scoped = vault.search(queries[0], record=False)
        org_hits = sum(
            sum(h.scope == "org" for h in vault.search(q, record=False).hits) for q in queries
        )
    both = anyio.run(over_stdio, team, queries, args.rounds, ids)
    report = {
        "team_items": team_data.items, "org_items": org_data.items, "queries": len(queries),
        "rounds": args.rounds, "org_hits_in_top10": org_hits, "first_query_scopes": [h.scope for h in scoped.hits],
        "team_only": alone["engram_search"], "team_and_org": both["engram_search"],
        "extra_p50_ms": round(both["engram_search"]["p50_ms"] - alone["engram_search"]["p50_ms"], 3),
        "extra_p95_ms": round(both["engram_search"]["p95_ms"] - alone["engram_search"]["p95_ms"], 3),
        "goal": "engram_search over stdio p50 <= 15 ms", "load": os.getloadavg(), "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scopes.json").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
