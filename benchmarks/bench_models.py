"""``python -m benchmarks.bench_models``: the sentence models engram can run, side by side.

For each model, on each recall set in the format of
``benchmarks/data/blind-2026-12-06/recall.yaml``: every lesson is embedded as engram
embeds an item (title and body; passages for a long one, max-pooled) and every
``paraphrase`` query is ranked against them by cosine alone — no words, no fusion, no
abstention — so the table compares what each model brings, not how recall uses it.
Also: milliseconds to embed one query (median of the set's queries, one thread), items
embedded per CPU second, and the size of the weights on disk.

Models: ``minilm-int8`` (:mod:`engram.recall.encoder`, the default) and ``wordllama``
(:mod:`engram.recall.semantic`, the optional static tier; needs the ``semantic`` extra).
Words alone (BM25) find none of these answers by construction: the paraphrase queries
share no content word with their answers.

    python -m benchmarks.bench_models [--set PATH ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from engram.recall import encoder, semantic

DATA = Path(__file__).resolve().parent / "data"
SETS = (
    DATA / "dev-2026-12-07" / "recall.yaml",
    DATA / "blind-2026-12-06" / "recall.yaml",
    DATA / "blind-2026-12-07" / "recall.yaml",
)

Embed = Callable[[list[str]], Any]


def _wordllama_size() -> int:
    package = semantic._package()
    return 0 if package is None else package.joinpath(*semantic.WEIGHTS).stat().st_size


MODELS: dict[str, tuple[Embed, Callable[[], int]]] = {
    "minilm-int8": (encoder.embed, lambda: encoder.SIZE),
    "wordllama": (semantic.embed, _wordllama_size),
}


def evaluate(name: str, embed: Embed, path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    corpus = data["corpus"]
    embed(["warm up"])
    texts: list[str] = []
    owners: list[int] = []
    for i, lesson in enumerate(corpus):
        parts = encoder.passages(lesson["title"], "", lesson["body"])
        texts += parts
        owners += [i] * len(parts)
    cpu = time.process_time()
    vectors = embed(texts)
    item_cpu = time.process_time() - cpu
    keys = [lesson["key"] for lesson in corpus]
    queries = [q for q in data["queries"] if q["kind"] == "paraphrase"]
    ranks: list[int] = []
    per_query: list[float] = []
    for q in queries:
        started = time.perf_counter()
        v = embed([q["query"]])[0]
        per_query.append((time.perf_counter() - started) * 1000)
        sims = np.full(len(corpus), -1.0)
        for row, owner in enumerate(owners):
            sims[owner] = max(sims[owner], float(vectors[row] @ v))
        order = [keys[i] for i in np.argsort(-sims, kind="stable")]
        ranks.append(order.index(q["answer"]) + 1)
    return {
        "set": path.parent.name, "model": name, "queries": len(queries),
        "hit@1": round(sum(r == 1 for r in ranks) / len(ranks), 3),
        "hit@5": round(sum(r <= 5 for r in ranks) / len(ranks), 3),
        "mrr": round(sum(1 / r for r in ranks) / len(ranks), 3),
        "query_ms_p50": round(statistics.median(per_query), 2),
        "items_per_cpu_second": round(len(corpus) / max(item_cpu, 1e-9), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_models", description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="sets", type=Path, action="append", help="a recall set (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    rows = []
    sizes = {}
    for name, (embed, size) in MODELS.items():
        if name == "wordllama" and not semantic.installed():
            print(f"  {name}: skipped (pip install -e '.[semantic]')")
            continue
        sizes[name] = size()
        for path in args.sets or SETS:
            row = evaluate(name, embed, path)
            rows.append(row)
            print(f"  {row['model']:<12} {row['set']:<18} hit@1 {row['hit@1']:.3f}  hit@5 {row['hit@5']:.3f}  MRR {row['mrr']:.3f}"
                  f"  query {row['query_ms_p50']} ms  {row['items_per_cpu_second']} items/CPU s")
    result = {"rows": rows, "weights_bytes": sizes}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
