"""Vault lock contention: how long a writer waits for the lock while others write.

W writer processes (default 8 and 32) each make ``--creates`` items through
:meth:`Vault.create` (trust screen and dedupe on, as the defaults have them) in one
vault at once. Each process times every acquisition of the vault's write lock (the
outermost one of a create: the lock is re-entrant) and how long it held it; the table
gives p50 / p99 / max wait and hold over every acquisition, the creates that failed (``Busy``
after the lock's budget) and the wall time. Run it on a loaded machine (issue 30 asks
for a load of twice the cores) and record the load beside the figures.

    python -m benchmarks.bench_lock [--writers 8 32] [--creates 25]

Prints one JSON document and writes it to ``benchmarks/results/lock.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engram.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

WORKER = r"""
import json, sys, time
from engram.errors import Busy
from engram.store import fsio
from engram.vault import Vault

root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
waits = []
acquire = fsio.VaultLock._acquire

def timed(self):
    t0 = time.perf_counter()
    try:
        acquire(self)
    finally:
        waits.append((time.perf_counter() - t0) * 1000)

release = fsio.VaultLock._release
holds = []
held_at = [0.0]

def timed_acquire(self):
    timed(self)
    held_at[0] = time.perf_counter()

def timed_release(self):
    holds.append((time.perf_counter() - held_at[0]) * 1000)
    release(self)

fsio.VaultLock._acquire = timed_acquire
fsio.VaultLock._release = timed_release
busy = 0
with Vault.open(root, actor=name) as vault:
    vault.list(limit=1)  # the index is built before the clock starts
    print("ready", flush=True)
    sys.stdin.readline()  # every writer starts at once
    for i in range(count):
        try:
            vault.create(f"{name} finding {i}", f"Writer {name} measured value {i * 7919 % 1000} in run {i}.",
                         domain=["bench"])
        except Busy:
            busy += 1
print(json.dumps({"waits": waits, "holds": holds, "busy": busy}), flush=True)
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else 0.0


def contend(writers: int, creates: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="engram-lock-") as tmp:
        root = Path(tmp) / "vault"
        Vault.init(root).close()
        procs = [
            subprocess.Popen([sys.executable, "-c", WORKER, str(root), f"w{n}", str(creates)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for n in range(writers)
        ]
        for proc in procs:  # wait for readiness, not for a number of seconds
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        load = os.getloadavg()[0]
        started = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs]
        wall = time.perf_counter() - started
    waits = [w for r in reports for w in r["waits"]]
    holds = [h for r in reports for h in r["holds"]]
    return {
        "writers": writers, "creates_each": creates, "load_at_start": round(load, 1),
        "acquisitions": len(waits), "wait_p50_ms": percentile(waits, 0.50),
        "wait_p99_ms": percentile(waits, 0.99), "wait_max_ms": round(max(waits, default=0.0), 1),
        "hold_p50_ms": percentile(holds, 0.50), "hold_p99_ms": percentile(holds, 0.99),
        "hold_max_ms": round(max(holds, default=0.0), 1),
        "busy": sum(r["busy"] for r in reports), "wall_s": round(wall, 1),
        "creates_per_s": round(writers * creates / wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Vault lock waits with many writer processes.")
    parser.add_argument("--writers", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--creates", type=int, default=25, help="creates per writer")
    args = parser.parse_args(argv)
    report = {"runs": [contend(w, args.creates) for w in args.writers]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "lock.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
