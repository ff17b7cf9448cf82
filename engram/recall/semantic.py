"""Optional semantic recall: a small static embedding model blended into the ranking.

Off unless ``recall.semantic`` in ``engram.yaml`` gives it a weight, and then it needs the
``semantic`` extra (``pip install 'engram-team-memory[semantic]'``). The model is
WordLlama's ``l2_supercat`` at 256 dimensions (MIT licence): token embeddings distilled
from a large language model, shipped *inside* the ``wordllama`` wheel (16 MB of weights,
numpy and Hugging Face ``tokenizers``; no PyTorch, nothing downloaded at run time). An
item's vector is the mean of its tokens' vectors (title, summary and body), scaled to unit
length; it is computed the first time a search ranks the item and kept in the derived
index (:mod:`engram.index.vectors`), as float16.

How it ranks: each candidate the lexical pass judged, and each item graph expansion
reaches, gains ``semantic · max(0, cos(query, item))`` as the ``semantic`` part of its
score. Relevance, and so abstention (``minRelevance``), stays lexical: meaning re-orders
what the words found and what the graph reached; it never makes an answer confident.
Why this shape, and not a dense retriever fused by rank: measured on the harness
(docs/benchmarks.md), this model alone ranks far below BM25 and rank fusion loses
quality on two collections of three. The blend gains on LoCoMo and Cranfield and leaves
known-item lookups level.

This module is the only one that reads the model (with numpy, ``safetensors`` and
``tokenizers``, which come with ``wordllama``); their errors are translated here.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput
from engram.index.catalog import Index
from engram.index.vectors import unembedded, unembedded_rowids, vectors
from engram.items.state import VaultState
from engram.recall.lexical import Candidate
from engram.recall.settings import recall_settings

#: Names the model in the vectors table: vectors from another model are not reused.
MODEL = "wordllama-l2_supercat-256"
EXTRA = "pip install 'engram-team-memory[semantic]'"

_lock = threading.Lock()
_loaded: _Model | None = None  # loaded once per process

#: The files of the ``wordllama`` wheel this module reads (``WordLlama.load``'s own
#: lookup misses the tokenizer it ships, and importing the package costs more than
#: reading both: pydantic, requests, its trainers' configs).
WEIGHTS = ("weights", "l2_supercat_256.safetensors")
TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")


@dataclass(frozen=True, slots=True)
class _Model:
    tokenizer: Any  # tokenizers.Tokenizer
    matrix: Any  # float32 (vocabulary, 256)


def installed() -> bool:
    """Whether the ``semantic`` extra is installed (nothing is imported)."""
    return _package() is not None


def _package() -> Path | None:
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):  # a broken install, or one removed while running
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _model() -> _Model:
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def _load() -> _Model:
    package = _package()
    if package is None:
        raise _refusal(
            "engram.yaml gives recall.semantic a weight, but semantic recall is not installed on this machine.",
            "Install",
        )
    # Hugging Face tokenizers would spread each batch over a thread pool: a search embeds
    # one query and a dozen items, where the pool's hand-offs cost more than they save
    # (measured: stdio p50 10.3 → 9.1 ms at 10k). A caller's own choice stands.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import numpy as np
        from safetensors import safe_open
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(package.joinpath(*TOKENIZER)))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        with safe_open(str(package.joinpath(*WEIGHTS)), framework="np") as weights:
            matrix = np.ascontiguousarray(weights.get_tensor("embedding.weight"), dtype=np.float32)
    except ImportError as exc:  # installed, but a package it needs is missing
        raise _refusal(f"semantic recall is installed but cannot be imported: {exc}.", "Reinstall") from exc
    except Exception as exc:  # safetensors and tokenizers raise kinds of their own (or bare Exception)
        raise _refusal(f"the semantic model could not be loaded from {package}: {exc}.", "Reinstall") from exc
    return _Model(tokenizer, matrix)


def _refusal(message: str, verb: str) -> InvalidInput:
    """Why the model cannot run here, and the two ways out."""
    return InvalidInput(
        message, field="recall.semantic",
        hint=f"{verb} it with `{EXTRA}`, or set recall.semantic: 0 in engram.yaml.",
    )


def embed(texts: list[str]) -> Any:
    """Unit vectors (float32, one row per text): the mean of each text's token vectors,
    as ``WordLlama.embed`` computes it; an empty text's vector is all zeros."""
    import numpy as np

    model = _model()
    out = np.zeros((len(texts), model.matrix.shape[1]), dtype=np.float32)
    last = model.matrix.shape[0] - 1
    for row, encoding in enumerate(model.tokenizer.encode_batch(texts, add_special_tokens=False)):
        if encoding.ids:
            ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, last)
            out[row] = model.matrix[ids].mean(axis=0, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def _as_bytes(texts: list[str]) -> list[bytes]:
    import numpy as np

    return [row.tobytes() for row in embed(texts).astype(np.float16)]


@dataclass(frozen=True, slots=True)
class Meaning:
    """One query's vector and the weight its cosine carries in the score."""

    weight: float
    vector: Any

    def apply(self, index: Index, cands: Iterable[Candidate]) -> None:
        """Give each candidate without one its ``semantic`` part (and re-sum its score)."""
        import numpy as np

        todo = [c for c in cands if "semantic" not in c.parts]
        if not todo:
            return
        stored = vectors(index, [int(c.row["rowid"]) for c in todo], MODEL, _as_bytes)
        for cand in todo:
            vec = stored.get(int(cand.row["rowid"]))
            cos = 0.0 if vec is None else float(np.frombuffer(vec, dtype=np.float16).astype(np.float32) @ self.vector)
            cand.parts["semantic"] = round(self.weight * max(0.0, cos), 4)
            cand.score = round(sum(cand.parts.values()), 4)


def missing(state: VaultState) -> int:
    """How many items have no vector of the model yet."""
    return unembedded(state.index, MODEL)


def embed_all(state: VaultState, progress: Callable[[int], None] | None = None, batch: int = 256) -> int:
    """Embed every item that has no vector yet, ``batch`` at a time (``progress`` is told
    each batch's size); how many vectors were stored. Searches then never pay for a
    first ranking. Raises InvalidInput when ``recall.semantic`` is 0 or the extra is missing."""
    state.ensure_fresh()
    if recall_settings(state).semantic <= 0:
        raise InvalidInput(
            "recall.semantic is 0 in engram.yaml, so no search would use the vectors.",
            field="recall.semantic",
            hint="Turn it on first (recall: semantic: 0.5, docs/recall.md), then run this again.",
        )
    _model()  # the missing-extra error before any work
    before, last = missing(state), 0
    while True:
        # Walking up the rowids, so a batch the index could not store is not fetched again.
        rowids = unembedded_rowids(state.index, MODEL, last, batch)
        if not rowids:
            return max(0, before - missing(state))
        vectors(state.index, rowids, MODEL, _as_bytes)
        last = rowids[-1]
        if progress is not None:
            progress(len(rowids))


def meaning(query: str, weight: float) -> Meaning | None:
    """The query's :class:`Meaning`, or None when ``recall.semantic`` is 0 (off)."""
    if weight <= 0:
        return None
    return Meaning(weight, embed([query])[0])
