"""``python -m benchmarks.export_mpnet DIR OUT``: all-mpnet-base-v2 as ONNX, for bench_models.

Reads the sentence-transformers folder ``DIR`` (its weights checked against the hub's
sha256 by :func:`benchmarks.bench_models.check_mpnet`), exports the transformer to
``OUT/mpnet.onnx`` (fp32, dynamic batch and length, opset 17) and quantizes it with ONNX
Runtime's dynamic quantization (int8 weights and activations): ``OUT/mpnet-int8.onnx``
with one scale per weight tensor, ``OUT/mpnet-int8pc.onnx`` with one per output channel.
Needs PyTorch, sentence-transformers and ``onnx``; engram's runtime needs none of them. What each export gives is measured with ``python -m benchmarks.bench_models
--mpnet DIR --onnx OUT/mpnet.onnx --onnx OUT/mpnet-int8.onnx --onnx OUT/mpnet-int8pc.onnx``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.export_mpnet", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the all-mpnet-base-v2 folder (sentence-transformers layout)")
    parser.add_argument("out", type=Path, help="where to write mpnet.onnx, mpnet-int8.onnx and mpnet-int8pc.onnx")
    args = parser.parse_args(argv)
    from benchmarks.bench_models import check_mpnet

    check_mpnet(args.folder)  # refuses weights that are not the published ones
    import torch  # type: ignore[import-not-found, unused-ignore]
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found, unused-ignore]

    model = SentenceTransformer(str(args.folder), device="cpu")
    transformer = model[0].auto_model.eval()
    sample = model.tokenizer(["a sentence to trace the graph with"], return_tensors="pt")
    args.out.mkdir(parents=True, exist_ok=True)
    fp32, int8, per_channel = args.out / "mpnet.onnx", args.out / "mpnet-int8.onnx", args.out / "mpnet-int8pc.onnx"
    axes = {0: "batch", 1: "length"}
    torch.onnx.export(
        transformer, (sample["input_ids"], sample["attention_mask"]), str(fp32),
        input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
        dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
        opset_version=17, dynamo=False,
    )
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    quantize_dynamic(str(fp32), str(per_channel), weight_type=QuantType.QInt8, per_channel=True)
    for path in (fp32, int8, per_channel):
        print(f"{path}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
