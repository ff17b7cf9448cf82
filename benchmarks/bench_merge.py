"""Merge speed: one driver invocation, and 1,000 divergent items through sync and git merge.

Three measurements:

- ``driver``: wall time of ``python -m mergedriver %O %A %B %L %P`` as git runs it, on a
  realistic item (a 150-word body, counters, tags and a line changed on each side),
  over many runs; ``python -c pass`` is measured alongside as the interpreter's floor.
- ``sync``: two clones of one vault each edit the same 1,000 items (counters, tags,
  importance and a different body line on each side); the second clone's ``engram sync``
  (fetch, in-process merge, commit, work-tree update, index refresh, link regeneration,
  push) is timed and reported as items per second.
- ``git_merge``: the same divergent state merged with plain ``git merge``, which starts
  the driver once per item.

    python -m benchmarks.bench_merge [--items 1000] [--runs 200]

Prints one JSON document and writes it to ``benchmarks/results/merge.json``. Items are
written with the canonical codec directly (this measures merging, not writing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    os.environ.update(env())
    result = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": list(os.getloadavg()),
        "driver": bench_driver(args.runs),
        "merge_1000": bench_sync_and_git(args.items),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "merge.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
