"""``python -m benchmarks.mpnet_graph DIR OUT``: all-mpnet-base-v2 as ONNX, without PyTorch.

:mod:`benchmarks.export_mpnet` needs PyTorch to trace the model. This builds it with
:mod:`engram.recall.mpnet` instead — the network written node by node from the checked
``model.safetensors`` with the ``onnx`` package alone — and quantizes it, with the
functions ``engram models pull`` uses (:mod:`engram.recall.install`):
``OUT/mpnet-own.onnx`` (fp32) and ``OUT/mpnet-own-int8pc.onnx`` (ONNX Runtime's dynamic
int8 quantization, one scale per output channel). On ONNX Runtime the fp32 graph's last
layer is bit-identical to PyTorch's export (three texts and a padded batch, 7 December),
and ``python -m benchmarks.bench_models --mpnet DIR --onnx OUT/mpnet-own.onnx --onnx
OUT/mpnet-own-int8pc.onnx`` measures both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from engram.recall.install import build_graph, quantize


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mpnet_graph", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the all-mpnet-base-v2 folder (its model.safetensors)")
    parser.add_argument("out", type=Path, help="where to write mpnet-own.onnx and mpnet-own-int8pc.onnx")
    args = parser.parse_args(argv)
    from benchmarks.bench_models import check_mpnet

    check_mpnet(args.folder)  # refuses weights that are not the published ones
    args.out.mkdir(parents=True, exist_ok=True)
    fp32, int8 = args.out / "mpnet-own.onnx", args.out / "mpnet-own-int8pc.onnx"
    graph = build_graph({name: (args.folder / name).read_bytes() for name in ("config.json", "model.safetensors")})
    fp32.write_bytes(graph)
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        int8.write_bytes(quantize(graph, Path(tmp)))
    for path in (fp32, int8):
        print(f"{path}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
