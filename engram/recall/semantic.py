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

This module is the only one that imports ``wordllama`` or numpy; their errors are
translated here.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput
from engram.index.catalog import Index
from engram.index.vectors import vectors
from engram.recall.lexical import Candidate

#: Names the model in the vectors table: vectors from another model are not reused.
MODEL = "wordllama-l2_supercat-256"
EXTRA = "pip install 'engram-team-memory[semantic]'"

_lock = threading.Lock()
_loaded: Any = None  # the wordllama model, loaded once per process


def installed() -> bool:
    """Whether the ``semantic`` extra is installed (nothing is imported)."""
    try:
        return importlib.util.find_spec("wordllama") is not None
    except (ImportError, ValueError):  # a broken install, or one removed while running
        return False


def _model() -> Any:
    global _loaded
    with _lock:
        if _loaded is None:
            if not installed():
                raise InvalidInput(
                    "engram.yaml gives recall.semantic a weight, but semantic recall is not"
                    " installed on this machine.",
                    field="recall.semantic",
                    hint=f"Install it with `{EXTRA}`, or set recall.semantic: 0 in engram.yaml.",
                )
            # Hugging Face tokenizers would spread each batch over a thread pool: a search
            # embeds one query and a dozen items, where the pool's hand-offs cost more
            # than they save (measured: stdio p50 10.3 → 9.1 ms at 10k). A caller's own
            # choice stands.
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                import wordllama
            except ImportError as exc:  # installed, but a package it needs is missing
                raise InvalidInput(
                    f"semantic recall is installed but cannot be imported: {exc}.",
                    field="recall.semantic",
                    hint=f"Reinstall it with `{EXTRA}`, or set recall.semantic: 0 in engram.yaml.",
                ) from exc
            # The wheel carries the weights and the tokenizer; pointing the cache at the
            # package itself makes wordllama find both there, and downloads stay off.
            try:
                _loaded = wordllama.WordLlama.load(
                    "l2_supercat", dim=256, cache_dir=Path(wordllama.__file__).parent, disable_download=True,
                )
            except (OSError, ValueError) as exc:
                raise InvalidInput(
                    f"the semantic model could not be loaded: {exc}.",
                    field="recall.semantic",
                    hint=f"Reinstall it with `{EXTRA}`, or set recall.semantic: 0 in engram.yaml.",
                ) from exc
        return _loaded


def embed(texts: list[str]) -> Any:
    """Unit vectors (float32, one row per text); an empty text's vector is all zeros."""
    import numpy as np

    raw = np.asarray(_model().embed(texts, norm=False), dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    return np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)


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


def meaning(query: str, weight: float) -> Meaning | None:
    """The query's :class:`Meaning`, or None when ``recall.semantic`` is 0 (off)."""
    if weight <= 0:
        return None
    return Meaning(weight, embed([query])[0])
