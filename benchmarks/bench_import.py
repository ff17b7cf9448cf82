"""Import throughput with deduplication on: the 6,571-note Obsidian vault of
:mod:`benchmarks.obsidian_synth`, through ``engram import`` as a person runs it.

    python -m benchmarks.bench_import [--no-fsync]

One fresh process (``engram --vault V import SOURCE --json``), default settings (dedup on,
fsync on). Reports notes per second of wall time, the CPU time of the process, the
outcome counts (the right answer is 6,571 new, the 171 planted copies among them
reported as repeats), a second run (0 written), and the cost of one near-duplicate check in synthetic
vaults of 1,000, 10,000 and 100,000 items (:mod:`benchmarks.synth`), to show it does not grow
with the vault. Writes
``benchmarks/results/import.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_writes import engram_exe
from benchmarks.obsidian_synth import COPIES, TOTAL, generate

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def timed_import(vault: Path, source: Path) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [engram_exe(), "--vault", str(vault), "import", str(source), "--json"],
        capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    data = json.loads(proc.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "notes": data["records"], "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
        "notes_per_s": round(data["records"] / wall, 1), "counts": data["counts"], "written": data["written"],
        "repeats": sum(1 for r in data["results"] if r["outcome"] == "NEW" and r["message"]),
    }


def check_cost(sizes: tuple[int, ...] = (1_000, 10_000, 100_000), probes: int = 200) -> dict[str, Any]:
    """Wall time of one near-duplicate check (``writing.classify``, what ``create`` runs)
    against synthetic vaults of each size (:mod:`benchmarks.synth`; a size not cached yet
    is generated, 100k takes several minutes). Probes are the vault's own items with one
    word changed, so each has a real candidate to find. Two passes over the same probes:
    the first with the caches a fresh process has, the second warm (a long-lived server,
    or an import a few hundred notes in)."""
    import random

    from benchmarks.synth import generate as synth_vault
    from engram.items.writing import classify
    from engram.vault import Vault

    def median(values: list[float]) -> float:
        return round(sorted(values)[len(values) // 2] * 1000, 2)

    out: dict[str, Any] = {}
    for size in sizes:
        synth = synth_vault(size)
        with Vault.open(synth.root) as vault:
            vault.refresh()
            rng = random.Random(size)
            chosen = rng.sample(vault.list(limit=size), probes)
            batch = []
            for item in chosen:
                words = item.content.split(" ")
                words[len(words) // 2] = "changed"
                batch.append((item.id, item.with_changes(content=" ".join(words), id="PROBE")))
            passes: list[list[float]] = []
            found = 0
            for _ in range(2):
                times = []
                for original, probe in batch:
                    start = time.perf_counter()
                    result = classify(vault.state, probe)
                    times.append(time.perf_counter() - start)
                    found += result is not None and result.id == original
                passes.append(times)
            out[str(size)] = {"first_pass_median_ms": median(passes[0]), "warm_median_ms": median(passes[1]),
                              "found": f"{found // 2}/{probes}"}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fsync", action="store_true")
    args = parser.parse_args(argv)
    if args.no_fsync:
        os.environ["ENGRAM_FSYNC"] = "0"
    synth = generate()
    base = Path(tempfile.mkdtemp(prefix="engram-bench-import-"))
    try:
        vault = base / "vault"
        subprocess.run([engram_exe(), "init", str(vault)], check=True, capture_output=True)
        load = os.getloadavg()
        first = timed_import(vault, synth.root)
        second = timed_import(vault, synth.root)
        result = {
            "fsync": not args.no_fsync, "load_before": load, "load_after": os.getloadavg(),
            "expected": {"NEW": TOTAL, "repeats": COPIES},
            "first_run": first, "second_run": second, "check_cost": check_cost(),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "import.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
