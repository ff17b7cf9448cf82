"""What loading the sentence encoder costs, and which ONNX Runtime options would make it
cheaper without changing a vector (issue 30).

A one-shot ``engram search`` with meaning on loads the model once: the weights are read
and checked (sha256), the tokenizer is parsed, and ONNX Runtime builds a session. Each
variant below builds its session in a fresh process (``--runs`` times, median CPU
seconds, user+sys) and embeds a few texts; a variant is only usable if its vectors are
bit-identical to the default's, because the vault's cached item vectors were computed
with the default and ranking must not move:

- ``default`` — what :mod:`engram.recall.encoder` does (all graph optimizations, one thread);
- ``basic`` / ``none`` — lower graph optimization levels;
- ``no-prepack`` — ``session.disable_prepacking``;
- ``no-arena`` — no CPU memory arena, no memory pattern;
- ``cached-onnx`` / ``cached-ort`` — the optimized graph saved once
  (``optimized_model_filepath``, ONNX or ORT format) and loaded with optimizations off,
  as a cache under ``.engram/`` would be.

    python -m benchmarks.bench_encoder_load [--runs 5]

Prints one JSON document (and a Markdown table on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

VARIANTS = ("default", "basic", "none", "no-prepack", "no-arena", "cached-onnx", "cached-ort")
TEXTS = ["postgres bloat after deletes",
         "Use pg_repack instead of VACUUM FULL on live tables\nVACUUM FULL takes an exclusive lock.",
         "how long can a socket sit quiet before the proxy cuts it"]

CHILD = r'''
import gzip, hashlib, json, os, sys
from importlib import resources
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
from engram.recall import encoder

variant, cache, out = sys.argv[1], sys.argv[2], sys.argv[3]
def cpu():
    t = os.times()
    return t.user + t.system
start = cpu()
data = encoder.model_file().read_bytes()
hashlib.sha256(data).hexdigest()
read = cpu()
tok = Tokenizer.from_str(gzip.decompress(
    resources.files("engram.recall.data").joinpath(encoder.TOKENIZER).read_bytes()).decode("utf-8"))
tokenizer = cpu()
o = ort.SessionOptions()
o.intra_op_num_threads = o.inter_op_num_threads = 1
o.log_severity_level = 3
L = ort.GraphOptimizationLevel
model = data
if variant == "basic":
    o.graph_optimization_level = L.ORT_ENABLE_BASIC
elif variant == "none":
    o.graph_optimization_level = L.ORT_DISABLE_ALL
elif variant == "no-prepack":
    o.add_session_config_entry("session.disable_prepacking", "1")
elif variant == "no-arena":
    o.enable_cpu_mem_arena = False
    o.enable_mem_pattern = False
elif variant.startswith("cached-"):
    o.graph_optimization_level = L.ORT_DISABLE_ALL
    model = open(cache, "rb").read()
session = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
built = cpu()
vectors = []
for text in json.loads(sys.argv[4]):
    e = tok.encode(text)
    ids = np.array([e.ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    vectors.append(session.run(None, feed)[0])
ran = cpu()
np.save(out, np.concatenate([v.reshape(-1) for v in vectors]))
print(json.dumps({"read_s": read - start, "tokenizer_s": tokenizer - read, "session_s": built - tokenizer,
                  "embed_s": ran - built}))
'''

SAVE = r'''
import sys
import onnxruntime as ort
from engram.recall import encoder
o = ort.SessionOptions()
o.intra_op_num_threads = o.inter_op_num_threads = 1
o.log_severity_level = 3
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
o.optimized_model_filepath = sys.argv[1]
if sys.argv[1].endswith(".ort"):
    o.add_session_config_entry("session.save_model_format", "ORT")
ort.InferenceSession(encoder.model_file().read_bytes(), o, providers=["CPUExecutionProvider"])
'''


def child_cpu(argv: list[str]) -> tuple[float, dict[str, float]]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:4]} failed")
    return usage.ru_utime + usage.ru_stime, json.loads(out)


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        caches = {"cached-onnx": Path(tmp) / "opt.onnx", "cached-ort": Path(tmp) / "opt.ort"}
        for path in caches.values():
            subprocess.run([sys.executable, "-c", SAVE, str(path)], check=True)
        results: dict[str, Any] = {}
        vectors: dict[str, Any] = {}
        samples: dict[str, list[tuple[float, dict[str, float]]]] = {v: [] for v in VARIANTS}
        for _ in range(args.runs):
            for variant in VARIANTS:
                out = Path(tmp) / f"{variant}.npy"
                cache = str(caches.get(variant, ""))
                samples[variant].append(child_cpu([sys.executable, "-c", CHILD, variant, cache, str(out),
                                                   json.dumps(TEXTS)]))
                vectors[variant] = np.load(out)
        for variant, got in samples.items():
            parts = {k: round(statistics.median(p[k] for _, p in got), 3) for k in got[0][1]}
            results[variant] = {
                "process_cpu_s": round(statistics.median(c for c, _ in got), 3), **parts,
                "identical": bool(np.array_equal(vectors[variant], vectors["default"])),
                "max_abs_diff": float(np.abs(vectors[variant] - vectors["default"]).max()),
                "cache_bytes": caches[variant].stat().st_size if variant in caches else None,
            }
    print(json.dumps({"load": os.getloadavg(), "cpus": os.cpu_count(), "results": results}, indent=2))
    print("| variant | process CPU s | session s | embed 3 texts s | bit-identical |\n|---|---|---|---|---|",
          file=sys.stderr)
    for variant, r in results.items():
        print(f"| {variant} | {r['process_cpu_s']:.3f} | {r['session_s']:.3f} | {r['embed_s']:.3f} | "
              f"{'yes' if r['identical'] else 'no (' + format(r['max_abs_diff'], '.1e') + ')'} |", file=sys.stderr)


if __name__ == "__main__":
    main()
