"""Write throughput: creates per second in one process, through the CLI, and from 8 writers.

Text is real: Cranfield abstracts from ``../shared/datasets/cranfield`` (1,400 distinct
aeronautics abstracts), so deduplication does the work it does on a real vault rather
than short-circuiting on obviously different random strings. fsync stays on (the
default) unless ``--no-fsync`` is given.

    python -m benchmarks.bench_writes [--items 1000] [--no-fsync]

Prints one JSON document and writes it to ``benchmarks/results/writes.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from engram.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
CRANFIELD = ROOT.parent / "shared" / "datasets" / "cranfield" / "cran.all.1400"
RESULTS = ROOT / "benchmarks" / "results"


def cranfield_records(limit: int) -> list[dict[str, Any]]:
    """Title + abstract records from the Cranfield collection."""
    text = CRANFIELD.read_text(encoding="utf-8", errors="replace")
    records = []
    for chunk in re.split(r"^\.I ", text, flags=re.MULTILINE)[1:]:
        title = re.search(r"^\.T\n(.*?)^\.[ABW]", chunk, re.S | re.M)
        body = re.search(r"^\.W\n(.*)", chunk, re.S | re.M)
        if not title or not body:
            continue
        title_text = " ".join(title.group(1).split())[:200].rstrip(" .")
        if not title_text:
            continue
        records.append(
            {
                "title": title_text,
                "content": body.group(1).strip(),
                "domain": f"research/aero/set-{len(records) % 20}",
                "kind": "fact",
                "tags": ["cranfield"],
            }
        )
        if len(records) >= limit:
            break
    return records


def fresh_vault(base: Path, name: str) -> Vault:
    return Vault.init(base / name, actor="bench")


def bench_in_process(base: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    vault = fresh_vault(base, "api")
    outcomes: dict[str, int] = {}
    start = time.perf_counter()
    for rec in records:
        result = vault.create(
            rec["title"], rec["content"], domain=rec["domain"].split("/"), kind=rec["kind"], tags=rec["tags"]
        )
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    elapsed = time.perf_counter() - start
    vault.close()
    return {"items": len(records), "seconds": round(elapsed, 3), "creates_per_s": round(len(records) / elapsed, 1),
            "outcomes": outcomes}


def engram_exe() -> str:
    exe = shutil.which("engram", path=str(Path(sys.executable).parent)) or shutil.which("engram")
    if exe is None:
        raise SystemExit("the engram console script is not installed (pip install -e .)")
    return exe


def bench_cli_import(base: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    vault = fresh_vault(base, "import")
    source = base / "records.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.run(
        [engram_exe(), "--vault", str(vault.root), "import", str(source), "--json"],
        capture_output=True, text=True, check=True,
    )
    elapsed = time.perf_counter() - start
    counts = json.loads(proc.stdout)["counts"]
    return {"items": len(records), "seconds": round(elapsed, 3), "creates_per_s": round(len(records) / elapsed, 1),
            "outcomes": counts}


def bench_cli_add(base: Path, records: list[dict[str, Any]], runs: int = 40) -> dict[str, Any]:
    vault = fresh_vault(base, "add")
    times = []
    for rec in records[:runs]:
        start = time.perf_counter()
        subprocess.run(
            [engram_exe(), "--vault", str(vault.root), "add", rec["title"], "-d", rec["domain"], "--body", rec["content"]],
            capture_output=True, text=True, check=True,
        )
        times.append(time.perf_counter() - start)
    times.sort()
    median = times[len(times) // 2]
    return {"invocations": runs, "median_ms": round(median * 1000, 1), "creates_per_s": round(1 / median, 1)}


WORKER = textwrap.dedent(
    """
    import json, sys
    from engram.vault import Vault
    root, path, worker, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    records = json.load(open(path))[worker::workers]
    vault = Vault.open(root, actor=f"w{worker}")
    for rec in records:
        vault.create(rec["title"], rec["content"], domain=rec["domain"].split("/"), kind=rec["kind"])
    """
)


def bench_concurrent(base: Path, records: list[dict[str, Any]], workers: int = 8) -> dict[str, Any]:
    vault = fresh_vault(base, "concurrent")
    source = base / "records.json"
    source.write_text(json.dumps(records), encoding="utf-8")
    start = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(vault.root), str(source), str(w), str(workers)])
        for w in range(workers)
    ]
    for proc in procs:
        if proc.wait() != 0:
            raise SystemExit("a writer process failed")
    elapsed = time.perf_counter() - start
    files = [p for p in vault.root.rglob("*.md") if "set-" in p.parent.name]
    return {"workers": workers, "items": len(records), "files": len(files), "seconds": round(elapsed, 3),
            "creates_per_s": round(len(records) / elapsed, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--no-fsync", action="store_true", help="skip fsync (as the tests do)")
    args = parser.parse_args(argv)
    if args.no_fsync:
        os.environ["ENGRAM_FSYNC"] = "0"
    if not CRANFIELD.exists():
        raise SystemExit(f"dataset missing: {CRANFIELD}")
    records = cranfield_records(args.items)
    base = Path(tempfile.mkdtemp(prefix="engram-bench-writes-"))
    try:
        result = {
            "fsync": not args.no_fsync,
            "load_before": os.getloadavg(),
            "in_process": bench_in_process(base, records),
            "cli_import": bench_cli_import(base, records),
            "cli_add": bench_cli_add(base, records),
            "concurrent_8": bench_concurrent(base, records),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "writes.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
