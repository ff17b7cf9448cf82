"""Start-up cost of the commands people wait on (issue 30): CPU time, not wall time.

Each command runs as its own process, ``--runs`` times (default 5); the figure is the
median of the child's user+sys CPU seconds (``os.wait4``), which moves little with the
machine's load, beside the median wall time. The rows:

- ``engram --version`` and ``engram --help``: nothing but the root group;
- ``engram search QUERY`` on a small vault (``engram demo``, index already built);
- the pre-commit hook on a one-file commit: the exact command the installed hook runs
  (``python -m engram.team.precommit --vault .``) with one changed item staged;
- the post-merge hook's Python part after a no-op pull (``ORIG_HEAD`` = ``HEAD``).
- ``python -c pass``: the floor, the interpreter alone.

    python -m benchmarks.bench_startup [--runs 5]

Prints one JSON document (and a Markdown table on stderr).
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


def cpu_of(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(user+sys CPU seconds, wall seconds) of one run of ``argv``."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def engram_exe() -> str:
    found = shutil.which("engram", path=str(Path(sys.executable).parent)) or shutil.which("engram")
    if found is None:
        raise SystemExit("no `engram` on PATH")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "ENGRAM_ACTOR": "bench", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    engram = engram_exe()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "demo"
        subprocess.run([engram, "demo", str(vault)], check=True, env=env, capture_output=True)
        if not (vault / ".git").exists():
            subprocess.run(["git", "init", "-q"], cwd=vault, check=True)
        if subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=vault, capture_output=True).returncode:
            subprocess.run(["git", "add", "-A"], cwd=vault, check=True)
            subprocess.run(["git", "commit", "-qm", "demo", "--no-verify"], cwd=vault, check=True, env=env)
        subprocess.run([engram, "search", "postgres"], cwd=vault, check=True, env=env, capture_output=True)
        items = sorted(p for p in vault.rglob("*.md") if ".engram" not in p.parts and p.parent != vault)
        edited = items[0]
        edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        subprocess.run(["git", "add", str(edited)], cwd=vault, check=True)
        subprocess.run(["git", "update-ref", "ORIG_HEAD", "HEAD"], cwd=vault, check=True)
        rows = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "engram --version": [engram, "--version"],
            "engram --help": [engram, "--help"],
            "engram search postgres (demo vault)": [engram, "search", "postgres"],
            "pre-commit hook, one staged file": [sys.executable, "-m", "engram.team.precommit", "--vault", "."],
            "post-merge hook, no-op pull": [sys.executable, "-m", "engram.team.hooks", "post-merge", "--vault", "."],
        }
        results: dict[str, Any] = {}
        for name, argv in rows.items():
            runs = [cpu_of(argv, vault, env) for _ in range(args.runs)]
            results[name] = {
                "cpu_s": round(statistics.median(r[0] for r in runs), 3),
                "wall_s": round(statistics.median(r[1] for r in runs), 3),
                "runs": len(runs),
            }
    out = {"load": os.getloadavg(), "cpus": os.cpu_count(), "results": results}
    print(json.dumps(out, indent=2))
    print("| command | CPU s (median) | wall s (median) |\n|---|---|---|", file=sys.stderr)
    for name, r in results.items():
        print(f"| `{name}` | {r['cpu_s']:.3f} | {r['wall_s']:.3f} |", file=sys.stderr)


if __name__ == "__main__":
    main()
