"""``python -m benchmarks.preview_encoder MODEL.onnx TOKENIZER.json [--set PATH ...]``:
paraphrase recall through engram's own search with another sentence encoder, before it is
wired in.

For each recall set (default: the four of :data:`benchmarks.bench_models.SETS`), a fresh
vault is built as :mod:`benchmarks.bench_paraphrase` builds it, every item is embedded,
and each query goes through ``Vault.search`` with the vault's default settings — words,
meaning, fusion, abstention and expansion as they are — once with engram's encoder and
once with the given ONNX model in its place (swapped in this process only: its session
and tokenizer stand where engram's are, under another cache key). The thresholds stay the
ones calibrated for engram's encoder. The first pass is the control: it reproduces
``bench_paraphrase``'s figures over MCP, so the second says what wiring the model in
would give, not more.

    python -m benchmarks.preview_encoder mpnet/onnx/mpnet-own-int8pc.onnx mpnet/all-mpnet-base-v2/tokenizer.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from benchmarks.bench_models import SETS
from benchmarks.bench_paraphrase import build_vault, load, rank_of, summarize


def swap(model: Path, tokenizer: Path, dimensions: int) -> None:
    """Put ``model`` where engram's encoder is, in this process."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from engram.recall import encoder

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.enable_truncation(384)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    stand_in = types.SimpleNamespace(tokenizer=tok, session=session, inputs={"input_ids", "attention_mask"})
    encoder._encoder = lambda: stand_in  # type: ignore[assignment]
    encoder.DIMENSIONS = dimensions  # type: ignore[misc]
    encoder.MODEL = f"preview-{model.stem}"  # type: ignore[misc]  # never the cache key of engram's own


def run(path: Path) -> dict[str, Any]:
    from engram.vault import Vault

    data = load(path)
    with tempfile.TemporaryDirectory(prefix="engram-preview-") as tmp:
        root = Path(tmp) / "vault"
        ids, _ = build_vault(data, root)
        rows = []
        with Vault.open(root, actor="bench") as vault:
            vault.embed_all()
            for q in data.queries:
                answer = vault.search(q.query)
                want = ids.get(q.answer) if q.answer else None
                rows.append({
                    "kind": q.kind, "abstained": answer.status == "no_confident_match",
                    "rank": rank_of(want, [h.id for h in answer.hits]),
                    "near_miss_rank": rank_of(want, [h.id for h in answer.near_misses]),
                    "hits": [h.id for h in answer.hits],
                })
    para, absent = summarize(rows, "paraphrase"), summarize(rows, "absent")
    return {
        "set": path.parent.name, "hit@5": para["hit@5"], "mrr": para["mrr"],
        "abstained": f"{para['abstained']}/{para['n']}", "absent_abstained": f"{absent['abstained']}/{absent['n']}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preview_encoder", description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="an ONNX sentence encoder (input_ids, attention_mask → last layer)")
    parser.add_argument("tokenizer", type=Path, help="its tokenizer.json")
    parser.add_argument("--dimensions", type=int, default=768)
    parser.add_argument("--set", dest="sets", type=Path, action="append", help="a recall set (repeatable)")
    args = parser.parse_args(argv)
    sets = args.sets or list(SETS)
    for row in map(run, sets):
        print("engram's encoder", row)
    swap(args.model, args.tokenizer, args.dimensions)
    for row in map(run, sets):
        print(args.model.name, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
