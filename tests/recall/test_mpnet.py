"""engram.recall.mpnet: the MPNet graph written from weights, checked against a plain
numpy forward pass of the same network (written here from Hugging Face's MPNetModel, not
from the module), on a small random model — real files, a real ONNX Runtime session."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import ModelUnavailable
from engram.recall.mpnet import Shape, build, read_safetensors, relative_buckets

TINY = Shape(hidden=16, heads=2, layers=2, eps=1e-5, pad=1, buckets=32, max_distance=128, max_tokens=40)
VOCAB = 50


def tiny_weights(seed: int = 7, shape: Shape = TINY, vocab: int = VOCAB) -> dict[str, np.ndarray[Any, Any]]:
    """Random weights of an MPNet of ``shape`` (tests/recall/test_install.py builds one as
    wide as the real model's, one layer deep)."""
    rng = np.random.default_rng(seed)
    h, ff = shape.hidden, 4 * shape.hidden

    def r(*dims: int) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(dims) * 0.3).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(vocab, h),
        "embeddings.position_embeddings.weight": r(shape.max_tokens + shape.pad + 1, h),
        "embeddings.LayerNorm.weight": 1 + r(h), "embeddings.LayerNorm.bias": r(h),
        "encoder.relative_attention_bias.weight": r(shape.buckets, shape.heads),
    }
    for i in range(shape.layers):
        at = f"encoder.layer.{i}."
        for c in "qkvo":
            w[f"{at}attention.attn.{c}.weight"], w[f"{at}attention.attn.{c}.bias"] = r(h, h), r(h)
        w[f"{at}attention.LayerNorm.weight"], w[f"{at}attention.LayerNorm.bias"] = 1 + r(h), r(h)
        w[f"{at}intermediate.dense.weight"], w[f"{at}intermediate.dense.bias"] = r(ff, h), r(ff)
        w[f"{at}output.dense.weight"], w[f"{at}output.dense.bias"] = r(h, ff), r(h)
        w[f"{at}output.LayerNorm.weight"], w[f"{at}output.LayerNorm.bias"] = 1 + r(h), r(h)
    return w


def safetensors_bytes(tensors: dict[str, np.ndarray[Any, Any]]) -> bytes:
    """The safetensors layout, written by hand: header length, JSON header, data."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    data = b""
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[array.dtype]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    head = json.dumps(header).encode()
    return len(head).to_bytes(8, "little") + head + data


def hf_bucket(relative_position: int, num_buckets: int = 32, max_distance: int = 128) -> int:
    """MPNetEncoder.relative_position_bucket, one distance at a time."""
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0) * num_buckets
    n = abs(n)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)


def reference(w: dict[str, np.ndarray[Any, Any]], ids: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """MPNetModel's last hidden state, in float64 numpy."""
    s = TINY
    d = s.hidden // s.heads

    def ln(x: np.ndarray[Any, Any], p: str) -> np.ndarray[Any, Any]:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + s.eps) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x: np.ndarray[Any, Any], p: str) -> np.ndarray[Any, Any]:
        return x @ w[p + ".weight"].astype(np.float64).T + w[p + ".bias"]

    not_pad = (ids != s.pad).astype(np.int64)
    positions = np.cumsum(not_pad, axis=1) * not_pad + s.pad
    x = ln(w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions].astype(np.float64),
           "embeddings.LayerNorm")
    length = ids.shape[1]
    buckets = np.array([[hf_bucket(k - q) for k in range(length)] for q in range(length)])
    bias = w["encoder.relative_attention_bias.weight"][buckets].transpose(2, 0, 1)[None]
    masked = (1.0 - mask[:, None, None, :]) * -1e9
    erf = np.vectorize(math.erf)
    for i in range(s.layers):
        at = f"encoder.layer.{i}."

        def heads(t: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            return t.reshape(t.shape[0], length, s.heads, d).transpose(0, 2, 1, 3)

        q, k, v = (heads(lin(x, f"{at}attention.attn.{c}")) for c in "qkv")
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias + masked
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        ctx = (p @ v).transpose(0, 2, 1, 3).reshape(x.shape)
        a = ln(lin(ctx, f"{at}attention.attn.o") + x, f"{at}attention.LayerNorm")
        inner = lin(a, f"{at}intermediate.dense")
        x = ln(lin(0.5 * inner * (1 + erf(inner / math.sqrt(2))), f"{at}output.dense") + a, f"{at}output.LayerNorm")
    return x


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[ort.InferenceSession, dict[str, Any]]:
    weights = tiny_weights()
    path = tmp_path_factory.mktemp("mpnet") / "model.safetensors"
    path.write_bytes(safetensors_bytes(weights))
    model = tmp_path_factory.mktemp("onnx") / "model.onnx"
    model.write_bytes(build(read_safetensors(path.read_bytes()), TINY))
    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]), weights


def test_the_graph_computes_what_mpnet_computes(session: tuple[ort.InferenceSession, dict[str, Any]]) -> None:
    sess, weights = session
    rng = np.random.default_rng(3)
    for length in (1, 2, 9, TINY.max_tokens):
        ids = rng.integers(3, VOCAB, size=(1, length))
        mask = np.ones_like(ids)
        got = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        assert got.shape == (1, length, TINY.hidden)
        np.testing.assert_allclose(got, reference(weights, ids, mask), atol=2e-4, rtol=1e-4)


def test_padding_changes_nothing_for_the_real_tokens(session: tuple[ort.InferenceSession, dict[str, Any]]) -> None:
    """A batch pads its shorter texts with the padding id, masked: each text's tokens come
    out as they do alone."""
    sess, weights = session
    short, long = np.array([[4, 9, 17]]), np.array([[5, 6, 7, 8, 20, 30, 40]])
    ids = np.array([[4, 9, 17] + [TINY.pad] * 4, [5, 6, 7, 8, 20, 30, 40]])
    mask = np.array([[1, 1, 1, 0, 0, 0, 0], [1] * 7])
    batch = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    alone = [sess.run(None, {"input_ids": t, "attention_mask": np.ones_like(t)})[0][0] for t in (short, long)]
    np.testing.assert_allclose(batch[0, :3], alone[0], atol=1e-5)
    np.testing.assert_allclose(batch[1], alone[1], atol=1e-5)
    np.testing.assert_allclose(batch, reference(weights, ids, mask)[:, :, :], atol=2e-4, rtol=1e-4)


def test_buckets_match_mpnets_own_rule_at_every_distance() -> None:
    distances = np.arange(-700, 701)
    assert relative_buckets(distances).tolist() == [hf_bucket(int(n)) for n in distances]


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12).filter(lambda n: n != "__metadata__"),
                       st.lists(st.floats(width=32, allow_nan=False), min_size=0, max_size=6), max_size=4))
def test_safetensors_round_trip(tensors: dict[str, list[float]]) -> None:
    arrays = {name: np.array(values, dtype=np.float32) for name, values in tensors.items()}
    read = read_safetensors(safetensors_bytes(arrays))
    assert set(read) == set(arrays)
    for name, array in arrays.items():
        assert read[name].tolist() == array.tolist()


def test_weights_that_are_not_mpnets_are_refused_with_what_to_do(tmp_path: Path) -> None:
    for data in (b"", b"\x05\x00\x00\x00\x00\x00\x00\x00{nope", b"not a safetensors file at all"):
        with pytest.raises(ModelUnavailable) as caught:
            read_safetensors(data)
        assert "engram models pull" in (caught.value.hint or "")
    weights = tiny_weights()
    del weights["encoder.layer.1.output.dense.weight"]
    with pytest.raises(ModelUnavailable, match=re.escape("encoder.layer.1.output.dense.weight")):
        build(weights, TINY)


def test_the_shape_is_read_from_the_models_config() -> None:
    config = {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12, "layer_norm_eps": 1e-5,
              "pad_token_id": 1, "relative_attention_num_buckets": 32, "max_position_embeddings": 514}
    assert Shape.of(config) == Shape()
