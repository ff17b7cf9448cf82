"""Incremental refresh after 100 items change, three ways, on a cached synthetic vault.

- ``after_pull_s``: what ``engram sync`` does after a pull — re-check the files git says
  changed (``Index.refresh_paths``), in a long-lived process.
- ``one_shot_scan_s``: a new process (no watcher) whose first read finds what changed
  since the last scan with ``find -cnewer`` and re-checks only that.
- ``one_shot_walk_s``: the same process with no scan mark (as on a first run): a stat
  walk of every file.
- ``one_shot_scan_renamed_s``: ``one_shot_scan_s`` when the 100 files were replaced by
  new ones, as ``git checkout`` (a pull) and engram's atomic writes do: their folders
  change too, and the scan re-lists them.

Run ``python -m benchmarks run scale --sizes 100000`` once first (it generates and caches
the vault), then::

    python -m benchmarks.bench_refresh [--size 100000]

Prints JSON and writes ``benchmarks/results/refresh.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engram.vault import Vault

RESULTS = Path(__file__).resolve().parent / "results"
ONE_SHOT = (
    "import sys, time\n"
    "from engram.vault import Vault\n"
    "vault = Vault.open(sys.argv[1])\n"
    "if sys.argv[2] == 'walk':\n"
    "    with vault.state.index.transaction() as conn:\n"
    "        conn.execute(\"DELETE FROM meta WHERE key = 'scanned'\")\n"
    "start = time.perf_counter()\n"
    "stats = vault.refresh()\n"
    "print(time.perf_counter() - start, stats.changed)\n"
)


def cached_vault(size: int) -> Path:
    base = Path(os.environ.get("ENGRAM_BENCH_CACHE", Path(tempfile.gettempdir()) / "engram-bench"))
    for candidate in sorted(base.glob(f"{size}-*")):
        if (candidate / ".engram").is_dir():
            return candidate
    raise SystemExit(f"no indexed {size}-item vault under {base}; run the scale benchmark first")


def touch(root: Path, count: int, seed: int, *, replace: bool = False) -> list[str]:
    """Append a line to ``count`` notes: in place, or (``replace``) as a new file renamed over each."""
    files = sorted(p for p in root.glob("*/*/*/*.md"))
    chosen = random.Random(seed).sample(files, count)
    for path in chosen:
        text = path.read_text(encoding="utf-8") + f"\nEdited at {time.time()}.\n"
        target = path.with_name(f".{path.name}.tmp") if replace else path
        target.write_text(text, encoding="utf-8")
        if replace:
            os.replace(target, path)
    return [p.relative_to(root).as_posix() for p in chosen]


def one_shot(root: Path, mode: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", ONE_SHOT, str(root), mode], capture_output=True, text=True, check=True)
    seconds, changed = out.stdout.split()
    return float(seconds), int(changed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args(argv)
    root = cached_vault(args.size)
    vault = Vault.open(root)
    vault.refresh()  # settle: the index matches the files and a scan mark exists
    result: dict[str, object] = {"size": args.size, "load_before": os.getloadavg()}

    changed = touch(root, 100, 1)
    start = time.perf_counter()
    stats = vault.state.index.refresh_paths(changed)
    result["after_pull_s"] = round(time.perf_counter() - start, 3)
    result["after_pull_changed"] = stats.changed
    vault.close()

    time.sleep(2.5)  # let the previous edits fall outside the scan margin
    Vault.open(root).refresh()
    touch(root, 100, 2)
    seconds, count = one_shot(root, "scan")
    result["one_shot_scan_s"], result["one_shot_scan_changed"] = round(seconds, 3), count

    touch(root, 100, 4, replace=True)
    seconds, count = one_shot(root, "scan")
    result["one_shot_scan_renamed_s"], result["one_shot_scan_renamed_changed"] = round(seconds, 3), count

    touch(root, 100, 3)
    seconds, count = one_shot(root, "walk")
    result["one_shot_walk_s"], result["one_shot_walk_changed"] = round(seconds, 3), count
    result["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "refresh.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
