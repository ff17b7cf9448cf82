"""Merge and sync: driver speed, 1,000 divergent items, and sync under a team's load.

Measurements:

- ``driver``: wall time of ``python -m mergedriver %O %A %B %L %P`` as git runs it, on a
  realistic item (a 150-word body, counters, tags and a line changed on each side),
  over many runs; ``python -c pass`` is measured alongside as the interpreter's floor.
- ``sync``: two clones of one vault each edit the same 1,000 items (counters, tags,
  importance and a different body line on each side); the second clone's ``engram sync``
  (fetch, in-process merge, commit, work-tree update, index refresh, link regeneration,
  push) is timed and reported as items per second.
- ``git_merge``: the same divergent state merged with plain ``git merge``, which starts
  the driver once per item.
- ``concurrent``: 5 clones syncing in loops for 60 s against one bare origin, as real
  processes (:func:`benchmarks.syncload.concurrent_loops`): syncs, failures, retries,
  sync latency, convergence and doctor afterwards.
- ``crash``: ``kill -9`` of a 500-item sync at each step of its journal, 5 runs each
  (:func:`benchmarks.syncload.kill_during`): where each kill landed, and whether the
  next sync completed, the clones converged and every edit reached the tip.
- ``convergence``: the randomized many-clone fuzz (issue 26) over ``--seeds`` (200) seeds,
  3-5 clones each (:func:`benchmarks.syncload.random_convergence`, aggregated by
  :func:`benchmarks.syncload.run_seeds`): editor and engram edits, documented clone
  setups, plain ``git pull`` / ``--rebase`` beside ``engram sync``, invariants after every
  round; runs converged byte for byte, lines and links lost, syncs by exit status, clones
  stuck. ``python -m benchmarks.syncload --seeds N`` runs it alone.

    python -m benchmarks.bench_merge [--items 1000] [--runs 200] [--only driver,merge,concurrent,crash,convergence]

Prints one JSON document and writes it to ``benchmarks/results/merge.json``. Items are
written with the canonical codec directly (this measures merging, not writing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import syncload
from engram.store.model import new_id
from engram.vault import Vault
from mergedriver import codec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WORDS = (  # noqa: SIM905 - a word list reads better as text
    "index query cache table schema migration deploy service latency request worker queue retry"
    " timeout lock replica backup restore shard cluster node config secret token session metric"
).split()
T0 = "2026-06-21T10:30:00.000Z"


def body(seed: int, words: int = 150) -> str:
    out = [WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words)]
    lines = [" ".join(out[i : i + 12]) for i in range(0, words, 12)]
    return "\n".join(f"{line}." for line in lines) + "\n"


def item_bytes(item_id: str, n: int, content: str, **changes: Any) -> bytes:
    meta: dict[str, Any] = {
        "id": item_id, "title": f"Item {n}", "slug": f"item-{n}", "domainTags": ["bench", f"d{n % 20}"],
        "kind": "fact", "tags": ["bench"], "summary": f"summary {n}", "importance": 0.5, "confidence": 0.5,
        "sourceType": "firsthand", "status": "active", "verificationStatus": "unverified",
        "visibility": "team", "createdBy": "bench", "createdAt": T0, "updatedBy": "bench",
        "updatedAt": T0, "version": 1, "retrievalCount": 0,
    }
    meta.update(changes)
    meta["contentHash"] = codec.content_hash(content)
    meta["contentSize"] = len(content.encode())
    return codec.render_engram(meta, content)


def edited(content: str, line: int, note: str) -> str:
    lines = content.split("\n")
    lines[line] = lines[line] + f" {note}"
    return "\n".join(lines)


def env() -> dict[str, str]:
    home = Path(tempfile.mkdtemp(prefix="engram-bench-home-"))
    cfg = home / "gitconfig"
    cfg.write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n")
    out = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(cfg), GIT_CONFIG_NOSYSTEM="1", ENGRAM_FSYNC="0")
    return out


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# --------------------------------------------------------------------------- driver


def bench_driver(runs: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-driver-"))
    (tmp / ".engram").mkdir()
    content = body(1)
    base = item_bytes("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ", 1, content, retrievalCount=4)
    ours = item_bytes("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ", 1, edited(content, 1, "ours"), retrievalCount=6,
                      tags=["bench", "ours"], updatedBy="alice", updatedAt="2026-06-22T09:00:00.000Z", version=2)
    theirs = item_bytes("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ", 1, edited(content, 10, "theirs"), retrievalCount=5,
                        tags=["bench", "theirs"], importance=0.7, updatedBy="bob",
                        updatedAt="2026-06-22T10:00:00.000Z", version=2)
    for name, data in (("base", base), ("theirs", theirs)):
        (tmp / name).write_bytes(data)
    cmd = [sys.executable, "-m", "mergedriver", "base", "ours", "theirs", "7", "bench/d1/item-1.md"]
    # An installed package ships compiled bytecode; this environment may forbid writing it
    # (PYTHONDONTWRITEBYTECODE), so cache it in a temp folder instead of recompiling per run.
    run_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run_env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    (tmp / "ours").write_bytes(ours)
    subprocess.run(cmd, cwd=tmp, check=True, env=run_env)
    times, cpu, floor = [], [], []
    for _ in range(runs):
        (tmp / "ours").write_bytes(ours)
        before = os.times()
        start = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, check=True, env=run_env)
        times.append(time.perf_counter() - start)
        after = os.times()
        cpu.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=run_env)
        floor.append(time.perf_counter() - start)
    merged = codec.parse_engram((tmp / "ours").read_bytes())[0]
    assert merged["retrievalCount"] == 7 and merged["tags"] == ["bench", "ours", "theirs"], merged
    shutil.rmtree(tmp, ignore_errors=True)
    ms = sorted(t * 1000 for t in times)
    return {
        "runs": runs,
        "median_ms": round(statistics.median(ms), 1),
        "p90_ms": round(ms[int(len(ms) * 0.9)], 1),
        "min_ms": round(ms[0], 1),
        "cpu_median_ms": round(statistics.median(cpu) * 1000, 1),
        "python_startup_median_ms": round(statistics.median(floor) * 1000, 1),
        "goal_ms": 60,
    }


# --------------------------------------------------------------------------- 1,000 items


def divergent_clones(tmp: Path, items: int) -> tuple[Vault, Vault, list[str]]:
    origin = tmp / "origin.git"
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    alice = Vault.init(tmp / "alice", actor="alice")
    git(alice.root, "remote", "add", "origin", str(origin))
    ids = [new_id() for _ in range(items)]
    paths = [f"bench/d{n % 20}/item-{n}.md" for n in range(items)]
    contents = [body(n) for n in range(items)]
    for n, (item_id, rel) in enumerate(zip(ids, paths, strict=True)):
        target = alice.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(item_bytes(item_id, n, contents[n]))
    alice.sync()
    git(tmp, "clone", "--quiet", str(origin), "bob")
    Vault.init(tmp / "bob").close()
    bob = Vault.open(tmp / "bob", actor="bob")
    for vault, who, line, count, tag in ((alice, "alice", 1, 2, "from-alice"), (bob, "bob", 9, 3, "from-bob")):
        for n, (item_id, rel) in enumerate(zip(ids, paths, strict=True)):
            (vault.root / rel).write_bytes(item_bytes(
                item_id, n, edited(contents[n], line, who), retrievalCount=count, tags=["bench", tag],
                importance=0.6 if who == "alice" else 0.7, updatedBy=who,
                updatedAt="2026-06-22T09:00:00.000Z" if who == "alice" else "2026-06-22T10:00:00.000Z",
                version=2,
            ))
    alice.sync()  # publishes alice's edits
    git(bob.root, "add", "--all")
    git(bob.root, "commit", "--quiet", "-m", "bob's edits")
    git(bob.root, "fetch", "--quiet", "origin")
    bob.refresh()
    return alice, bob, paths


def check_merged(root: Path, paths: list[str]) -> None:
    for rel in (paths[0], paths[-1]):
        meta, content, _ = codec.parse_engram((root / rel).read_bytes())
        assert meta["retrievalCount"] == 5 and meta["tags"] == ["bench", "from-alice", "from-bob"], meta
        assert " alice" in content and " bob" in content


def bench_sync_and_git(items: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-merge-"))
    try:
        _, bob, paths = divergent_clones(tmp, items)
        shutil.copytree(bob.root, tmp / "bob-git", symlinks=True)
        start = time.perf_counter()
        report = bob.sync()
        sync_s = time.perf_counter() - start
        assert report.merged == items and report.pushed, report
        check_merged(bob.root, paths)
        plain = tmp / "bob-git"
        start = time.perf_counter()
        git(plain, "merge", "--quiet", "--no-edit", "origin/main")
        git_s = time.perf_counter() - start
        check_merged(plain, paths)
        same = all((plain / p).read_bytes() == (bob.root / p).read_bytes() for p in paths)
        bob.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "items": items,
        "sync": {"seconds": round(sync_s, 2), "items_per_s": round(items / sync_s, 1), "goal_items_per_s": 200},
        "git_merge_with_driver": {"seconds": round(git_s, 2), "items_per_s": round(items / git_s, 1)},
        "same_bytes": same,
    }


#: How long after a step starts the kill may land (seconds): git's work in the step.
KILL_JITTER = {"checkout": 0.25, "merge": 0.2, "objects": 0.1, "settle": 0.2}


def bench_crash(items: int, runs: int) -> dict[str, Any]:
    rng = random.Random(16)
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-crash-"))
    matrix: dict[str, Any] = {}
    try:
        for step in syncload.STEPS:
            outcomes = []
            for run in range(runs):
                out = syncload.kill_during(tmp / f"{step}-{run}", items, step, rng, KILL_JITTER.get(step, 0.03))
                outcomes.append(out)
                shutil.rmtree(tmp / f"{step}-{run}", ignore_errors=True)
            matrix[step] = {
                "runs": runs,
                "landed": dict(sorted(Counter(o.landed for o in outcomes).items())),
                "index_lock_left": sum(o.index_lock_left for o in outcomes),
                "recovered": sum(bool(o.recovered) for o in outcomes),
                "ok": sum(not o.failures for o in outcomes),
                "failures": [f for o in outcomes for f in o.failures],
            }
            print(f"  kill -9 at {step}: {matrix[step]['ok']}/{runs} ok, landed {matrix[step]['landed']}, "
                  f"index.lock left {matrix[step]['index_lock_left']}", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"items": items, "steps": matrix}


def bench_concurrent(clones: int, seconds: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-concurrent-"))
    try:
        return syncload.concurrent_loops(tmp, clones, seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_convergence(seeds: int, rounds: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-converge-"))

    def progress(r: syncload.Convergence) -> None:
        found = ", ".join(f"{tag} {n}" for tag, n in r.tags().items()) or "clean"
        print(f"  convergence seed {r.seed}: {r.clones} clones, {r.seconds} s, {found}", file=sys.stderr, flush=True)

    try:
        summary = syncload.run_seeds(range(1, seeds + 1), tmp, rounds=rounds, progress=progress)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for line in syncload.table(summary):
        print(f"  {line}", file=sys.stderr)
    return {"seeds": seeds, "rounds": rounds, **summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--only", default="driver,merge,concurrent,crash,convergence")
    parser.add_argument("--clones", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--crash-items", type=int, default=500)
    parser.add_argument("--crash-runs", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=200, help="convergence: seeds of the randomized fuzz")
    parser.add_argument("--rounds", type=int, default=6, help="convergence: edit-and-sync rounds per seed")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    os.environ.update(env())
    result: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": list(os.getloadavg()),
    }
    if "driver" in only:
        result["driver"] = bench_driver(args.runs)
    if "merge" in only:
        result["merge_1000"] = bench_sync_and_git(args.items)
    if "concurrent" in only:
        result["concurrent"] = bench_concurrent(args.clones, args.seconds)
    if "crash" in only:
        result["crash"] = bench_crash(args.crash_items, args.crash_runs)
    if "convergence" in only:
        result["convergence"] = bench_convergence(args.seeds, args.rounds)
    result["load_after"] = list(os.getloadavg())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "merge.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
