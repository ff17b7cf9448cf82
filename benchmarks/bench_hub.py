"""``python -m benchmarks.bench_hub``: a search whose best hit is a hub of D links (issue 30).

Graph expansion spreads from the best hits along their synapses; this measures what that
costs as a hit's degree grows. A vault of ``--leaves`` items (words only, so the figure is
expansion's, not the encoder's) gets one hub per degree, each named by a word no other
item holds, linked (``relates_to``, synapse files written directly and indexed) to that
many leaves. Each hub is searched by its word ``--runs`` times in process, with expansion
on and off: p50 and max in milliseconds.

    python -m benchmarks.bench_hub [--leaves 10000] [--degrees 10 1000 10000] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("amber", "cobalt", "violet", "saffron", "indigo", "ochre")
STAMP = "2026-12-07T18:00:00.000Z"


def build(root: Path, leaves: int, degrees: list[int]) -> None:
    from engram.store.model import synapse_id
    from engram.vault import Vault

    vault = Vault.init(root, actor="bench")
    settings = root / "engram.yaml"
    settings.write_text(settings.read_text(encoding="utf-8") + "recall:\n  meaning: 0\n", encoding="utf-8")
    vault.close()
    with Vault.open(root, actor="bench") as vault:
        ids = [vault.create(f"Leaf note {i} about sprockets", f"Leaf body {i} mentions gears.", domain=["leaf"],
                            dedupe=False).item.id for i in range(leaves)]
        folder = root / "synapses" / "relates_to"
        folder.mkdir(parents=True, exist_ok=True)
        for word, degree in zip(WORDS, degrees, strict=False):
            hub = vault.create(f"{word} hub note", f"The {word} hub.", domain=["hub"], dedupe=False).item.id
            for leaf in ids[:degree]:
                sid = synapse_id(hub, leaf, "relates_to")
                (folder / f"{sid}.yaml").write_text(
                    f"id: {sid}\nfrom: {hub}\nto: {leaf}\nkind: relates_to\nweight: 0.5\nevidence: []\n"
                    f"createdBy: bench\ncreatedAt: {STAMP}\nupdatedAt: {STAMP}\n", encoding="utf-8")
        vault.refresh()


def measure(root: Path, degrees: list[int], runs: int) -> list[dict[str, float]]:
    from engram.vault import Vault

    rows = []
    with Vault.open(root, actor="bench") as vault:
        for word, degree in zip(WORDS, degrees, strict=False):
            row: dict[str, float] = {"degree": degree}
            for expand in (True, False):
                vault.search(word, record=False, expand=expand)
                times = []
                for _ in range(runs):
                    started = time.perf_counter()
                    vault.search(word, record=False, expand=expand)
                    times.append((time.perf_counter() - started) * 1000)
                key = "expansion" if expand else "no_expansion"
                row[f"{key}_p50_ms"] = round(statistics.median(times), 2)
                row[f"{key}_max_ms"] = round(max(times), 2)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_hub", description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=10_000)
    parser.add_argument("--degrees", type=int, nargs="+", default=[10, 1000, 10_000])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--root", type=Path, default=None, help="where the vault goes (default: a temporary folder)")
    args = parser.parse_args(argv)
    if len(args.degrees) > len(WORDS) or max(args.degrees) > args.leaves:
        parser.error(f"at most {len(WORDS)} degrees, none above --leaves")
    os.environ.setdefault("ENGRAM_FSYNC", "0")  # building the vault is not what is measured
    with tempfile.TemporaryDirectory(prefix="engram-hub-") as tmp:
        root = args.root or Path(tmp) / "vault"
        if not root.exists():
            build(root, args.leaves, args.degrees)
        rows = measure(root, args.degrees, args.runs)
    print(json.dumps({"load": os.getloadavg(), "leaves": args.leaves, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
