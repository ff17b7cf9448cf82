"""``python -m benchmarks.mpnet_graph DIR OUT``: all-mpnet-base-v2 as ONNX, without PyTorch.

:mod:`benchmarks.export_mpnet` needs PyTorch to trace the model. This writes the same
network node by node from the checked ``model.safetensors`` with the ``onnx`` package
alone (``pip install onnx``), so a machine with engram's runtime and that one package can
build the model: ``OUT/mpnet-own.onnx`` (fp32) and ``OUT/mpnet-own-int8pc.onnx`` (ONNX
Runtime's dynamic int8 quantization, one scale per output channel). On ONNX Runtime the
fp32 graph's last layer is bit-identical to PyTorch's export (three texts and a padded
batch, 7 December), and ``python -m benchmarks.bench_models --mpnet DIR --onnx
OUT/mpnet-own.onnx --onnx OUT/mpnet-own-int8pc.onnx`` gives the same table.

The network (Hugging Face's ``MPNetModel``, as all-mpnet-base-v2 configures it): word and
position embeddings (positions count the non-padding tokens from ``padding_idx + 1``),
layer norm; twelve layers of twelve-head self-attention whose scores get a learned bias
per relative distance (32 buckets, log-spaced past 8, up to 128), each followed by a
GELU feed-forward layer, both with residual connections and layer norms (eps 1e-5).
The bucket of every distance up to 512 tokens is computed here, in numpy, and stored as
a table the graph looks up.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

HIDDEN, HEADS, LAYERS, EPS, PAD, BUCKETS, MAX_DISTANCE, MAX_TOKENS = 768, 12, 12, 1e-5, 1, 32, 128, 512
_DTYPES = {"F32": np.float32, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """Every tensor of a ``.safetensors`` file: an 8-byte little-endian header length, a
    JSON header (name → dtype, shape, byte range), then the data."""
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        begin, end = spec["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype=_DTYPES[spec["dtype"]]).reshape(spec["shape"])
    return out


def relative_buckets(distance: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """MPNet's bucket for each relative distance (key position minus query position)."""
    half = BUCKETS // 2
    n = -distance
    out = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    scaled = np.log(np.maximum(n, 1).astype(np.float32) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)
    large = np.minimum(exact + scaled.astype(np.int64), half - 1)
    return out + np.where(n < exact, n, large)


def build(weights: dict[str, np.ndarray[Any, Any]]) -> Any:
    """The ONNX model: ``input_ids``, ``attention_mask`` → ``last_hidden_state``."""
    import onnx  # type: ignore[import-not-found, unused-ignore]
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    initializers: list[Any] = []
    count = 0

    def fresh(prefix: str) -> str:
        nonlocal count
        count += 1
        return f"{prefix}_{count}"

    def const(array: Any) -> str:
        name = fresh("w")
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(kind: str, inputs: list[str], **attrs: Any) -> str:
        out = fresh(kind.lower())
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def i64(*values: int) -> str:
        return const(np.array(values if len(values) > 1 else values[0], np.int64))

    def f32(value: float) -> str:
        return const(np.array(value, np.float32))

    def norm(x: str, prefix: str) -> str:
        return op("LayerNormalization", [x, const(weights[prefix + ".weight"]), const(weights[prefix + ".bias"])],
                  epsilon=EPS, axis=-1)

    def linear(x: str, prefix: str) -> str:
        return op("Add", [op("MatMul", [x, const(weights[prefix + ".weight"].T)]), const(weights[prefix + ".bias"])])

    def split_heads(x: str) -> str:
        return op("Transpose", [op("Reshape", [x, const(np.array([0, 0, HEADS, HIDDEN // HEADS], np.int64))])],
                  perm=[0, 2, 1, 3])

    ids, mask = "input_ids", "attention_mask"
    real = op("Cast", [op("Not", [op("Equal", [ids, i64(PAD)])])], to=TensorProto.INT64)
    positions = op("Add", [op("Mul", [op("CumSum", [real, i64(1)]), real]), i64(PAD)])
    x = op("Add", [op("Gather", [const(weights["embeddings.word_embeddings.weight"]), ids]),
                   op("Gather", [const(weights["embeddings.position_embeddings.weight"]), positions])])
    x = norm(x, "embeddings.LayerNorm")
    length = op("Gather", [op("Shape", [ids]), i64(1)])
    steps = op("Range", [i64(0), length, i64(1)])
    distance = op("Sub", [op("Unsqueeze", [steps, const(np.array([0], np.int64))]),
                          op("Unsqueeze", [steps, const(np.array([1], np.int64))])])
    table = relative_buckets(np.arange(-(MAX_TOKENS - 1), MAX_TOKENS, dtype=np.int64))
    bucket = op("Gather", [const(table), op("Add", [distance, i64(MAX_TOKENS - 1)])])
    bias = op("Unsqueeze", [op("Transpose", [op("Gather", [const(weights["encoder.relative_attention_bias.weight"]), bucket])],
                                perm=[2, 0, 1]), const(np.array([0], np.int64))])
    padding = op("Cast", [op("Unsqueeze", [mask, const(np.array([1, 2], np.int64))])], to=TensorProto.FLOAT)
    scores_bias = op("Add", [bias, op("Mul", [op("Sub", [f32(1.0), padding]), f32(-1e9)])])
    scale = f32(1 / math.sqrt(HIDDEN // HEADS))
    for layer in range(LAYERS):
        at = f"encoder.layer.{layer}."
        q, k, v = (split_heads(linear(x, f"{at}attention.attn.{c}")) for c in "qkv")
        scores = op("Add", [op("Mul", [op("MatMul", [q, op("Transpose", [k], perm=[0, 1, 3, 2])]), scale]), scores_bias])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), const(np.array([0, 0, HIDDEN], np.int64))])
        attended = norm(op("Add", [linear(context, f"{at}attention.attn.o"), x]), f"{at}attention.LayerNorm")
        inner = linear(attended, f"{at}intermediate.dense")
        gelu = op("Mul", [op("Mul", [inner, f32(0.5)]),
                          op("Add", [f32(1.0), op("Erf", [op("Div", [inner, f32(math.sqrt(2.0))])])])])
        x = norm(op("Add", [linear(gelu, f"{at}output.dense"), attended]), f"{at}output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "all-mpnet-base-v2",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "length"]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "length"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "length", HIDDEN])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what ONNX Runtime 1.17, engram's oldest, reads
    onnx.checker.check_model(model)
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mpnet_graph", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the all-mpnet-base-v2 folder (its model.safetensors)")
    parser.add_argument("out", type=Path, help="where to write mpnet-own.onnx and mpnet-own-int8pc.onnx")
    args = parser.parse_args(argv)
    from benchmarks.bench_models import check_mpnet

    check_mpnet(args.folder)  # refuses weights that are not the published ones
    import onnx  # type: ignore[import-not-found, unused-ignore]
    from onnxruntime.quantization import QuantType, quantize_dynamic

    args.out.mkdir(parents=True, exist_ok=True)
    fp32, int8 = args.out / "mpnet-own.onnx", args.out / "mpnet-own-int8pc.onnx"
    onnx.save(build(read_safetensors(args.folder / "model.safetensors")), str(fp32))
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
    for path in (fp32, int8):
        print(f"{path}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
