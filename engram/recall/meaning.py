"""The meaning stage of recall: candidates by meaning, and each candidate's closeness.

One query's :class:`Sense` holds its vector (:mod:`engram.recall.encoder`) and the
vault's vector space (:mod:`engram.recall.vectors`). Recall uses it three ways:

- **candidates** — the items nearest the query join those its words found, so an answer
  worded differently from the question is found at all (:meth:`Sense.nearest`);
- **score** — every candidate gains ``meaning · closeness(cos)`` as its ``meaning``
  part, where closeness maps the cosine onto 0..1 between what unrelated text scores
  with the vault's model and what a paraphrase scores (:class:`~engram.recall.models.Model`);
- **abstention** — a candidate at least ``minSimilarity`` close is a confident answer
  even when it shares no word with the query; with neither a lexical nor a meaning
  match the answer stays ``no_confident_match``.

How the two sources fuse is a weighted sum of calibrated scores, not rank fusion: the
lexical relevance (0..1, the best hit 1) and the closeness (0..1) are both absolute
enough to add, and a sum keeps "matches the words *and* the meaning" above either alone.
The calibration points are the model's (:mod:`engram.recall.models`), read off the
project's own development sets, never the blind sets (docs/benchmarks.md).

The stage runs beside the word stage (:func:`foresee`, on a few worker threads per
process): the query's vector and its product with every item's are ready by the time
the words have found their candidates. ONNX Runtime, numpy and SQLite release the GIL,
so on a machine with a core to spare the encoder's milliseconds are hidden behind
BM25's instead of added to them; on a busy one it costs what it did in line. The
answer is the same either way: the stage reads nothing the word stage writes.

When the encoder cannot run, the stage is ``unavailable``: the search answers by words
and says why; nothing fails. When some items have no vector yet, the stage is
``partial`` and says how many; a search embeds them itself when they are few
(``embedOnSearch``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput, ModelUnavailable
from engram.items.state import VaultState
from engram.recall import encoder, semantic
from engram.recall.lexical import Candidate
from engram.recall.models import AUTO, DEFAULT, Model, preferred
from engram.recall.results import Meaning
from engram.recall.settings import RecallSettings, recall_settings
from engram.recall.vectors import Coverage, Scores, Space, drop, space


def closeness(cos: float, model: Model = DEFAULT) -> float:
    """The cosine mapped onto 0..1 between the model's unrelated and paraphrase points."""
    return min(1.0, max(0.0, (cos - model.unrelated) / (model.same - model.unrelated)))


@dataclass(frozen=True, slots=True)
class Sense:
    """One query's meaning: its vector, the vault's vectors and the weights."""

    vector: Any  # None when no item has a vector (see understand)
    scores: Scores  # the query against every item with vectors, computed once
    weight: float
    confident: float  # minSimilarity
    model: Model = DEFAULT
    #: The nearest item's rowid when it stands out from the rest (Model.margin), else None.
    #: A question the vault cannot answer has several items about as (un)related as each
    #: other; an answer in other words is one item ahead of the rest.
    standout: int | None = None

    def nearest(self, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(rowid, cos)`` of the items closest to the query, leaving out
        those no closer than unrelated text."""
        return [(rid, cos) for rid, cos in self.scores.nearest(k) if cos > self.model.unrelated]

    def closeness(self, cos: float) -> float:
        """``cos`` mapped onto 0..1 by the model's calibration (:func:`closeness`)."""
        return closeness(cos, self.model)

    def apply(self, cands: Iterable[Candidate]) -> None:
        """Give each candidate without one its similarity and ``meaning`` part (and re-sum its score)."""
        todo = [c for c in cands if "meaning" not in c.parts]
        if not todo:
            return
        known = self.scores.of([int(c.row["rowid"]) for c in todo])
        for cand in todo:
            cos = known.get(int(cand.row["rowid"]))
            if cos is not None:
                cand.similarity = cos if cand.similarity is None else max(cand.similarity, cos)
            cand.parts["meaning"] = round(self.weight * self.closeness(cand.similarity or 0.0), 4)
            cand.score = round(sum(cand.parts.values()), 4)

    def sure(self, cand: Candidate) -> bool:
        """Whether ``cand`` is close enough in meaning to be a confident answer: at
        ``minSimilarity``, or the nearest item standing out from the rest."""
        if cand.similarity is None:
            return False
        return cand.similarity >= self.confident or int(cand.row["rowid"]) == self.standout


_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()
#: Searches on the server's threads each get a worker while there are cores for them.
_WORKERS = min(4, os.cpu_count() or 1)


def _forget_worker() -> None:
    # A forked child has the executor but not its threads: it would queue work forever.
    global _worker
    _worker = None


os.register_at_fork(after_in_child=_forget_worker)


def foresee(state: VaultState, query: str, s: RecallSettings) -> Future[tuple[Sense | None, Meaning]]:
    """Start :func:`understand` on a worker thread, for the search to collect once its
    words have found their candidates: it goes on with them meanwhile."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="engram-meaning")
    return _worker.submit(understand, state, query, s)


def understand(state: VaultState, query: str, s: RecallSettings) -> tuple[Sense | None, Meaning]:
    """The query's :class:`Sense` (None when meaning is off or cannot run) and what the
    stage could do, for the answer."""
    if s.meaning <= 0:
        return None, Meaning("off")
    vectors, instead, coverage = _choose(state, s)
    try:
        return _sense(vectors, query, s, instead, coverage)
    except ModelUnavailable as exc:
        if s.model == AUTO and not vectors.model.bundled:  # a broken pull: the bundled model stands in
            try:
                return _sense(space(state.index, DEFAULT), query, s, f"{vectors.model.name} cannot run here ({exc})")
            except ModelUnavailable:
                pass
        return None, Meaning("unavailable", problem=str(exc))


def target(state: VaultState, s: RecallSettings) -> Space:
    """The vectors the vault's items are embedded into: those of the model ``recall.model``
    asks for on this machine."""
    return space(state.index, preferred(s.model))


def _choose(state: VaultState, s: RecallSettings) -> tuple[Space, str, Coverage | None]:
    """The vectors a search meets, why not the target's ("" when they are), and their
    coverage when this looked at it (so it is not asked twice). Under
    ``auto``, a model pulled since the vault was embedded has few vectors yet: until it
    has no more left to embed than a search does itself, the bundled model answers when it
    has more of the vault embedded — a pull never makes meaning worse while it catches up."""
    best = target(state, s)
    if s.model != AUTO or best.model.bundled:
        return best, "", None
    coverage = best.refresh()
    if coverage.missing <= s.embed_on_search:
        drop(state.index, DEFAULT)  # the stand-in's vectors, if it stood in, are not needed in memory
        return best, "", coverage
    stand_in = space(state.index, DEFAULT)
    covered = stand_in.refresh()
    if covered.missing < coverage.missing:
        return stand_in, f"{best.model.name} has {coverage.missing} of {coverage.items} items still to embed (`engram serve` embeds them in the background, or run `engram reindex --embed`)", covered
    return best, "", coverage


def _sense(vectors: Space, query: str, s: RecallSettings, instead: str, coverage: Coverage | None = None) -> tuple[Sense, Meaning]:
    model = vectors.model
    coverage = coverage or vectors.refresh()
    if 0 < coverage.missing <= s.embed_on_search:
        vectors.fill()
        coverage = vectors.refresh()
    # With no item's vector to meet, the query's cannot change the answer: the model
    # is not loaded for it (~0.5 s of CPU in a one-shot search). Weights that are not
    # installed are still reported as they would be (encoder.embed fails at once).
    nothing_to_meet = coverage.missing == coverage.items and encoder.model_file_exists(model)
    vector = None if nothing_to_meet else encoder.embed([query], model=model)[0]
    meant = Meaning("on" if coverage.complete else "partial", coverage.items, coverage.missing, model=model.name, instead=instead)
    scores = vectors.scores(vector)
    top = scores.nearest(2)
    standout = None
    if top and top[0][1] >= model.stands_out and (len(top) == 1 or top[0][1] - top[1][1] >= model.margin):
        standout = top[0][0]
    confident = model.confident if s.min_similarity is None else float(s.min_similarity)
    return Sense(vector, scores, s.meaning, confident, model, standout), meant


def unembedded(state: VaultState) -> int:
    """How many vectors the vault's models still have to compute: the encoder's (when
    ``recall.meaning`` is on) and the static model's (when ``recall.semantic`` is)."""
    state.ensure_fresh()
    s = recall_settings(state)
    missing = target(state, s).refresh().missing if s.meaning > 0 else 0
    return missing + (semantic.missing(state) if s.semantic > 0 else 0)


def embed_all(state: VaultState, progress: Callable[[int], None] | None = None, batch: int = 32) -> int:
    """Embed every item that has no vector yet with each model the vault turns on,
    ``batch`` at a time (``progress`` is told each batch's size); how many vectors were
    computed. Searches then never wait for one. Raises InvalidInput when both are off,
    ModelUnavailable when the encoder cannot run."""
    state.ensure_fresh()
    s = recall_settings(state)
    if s.meaning <= 0 and s.semantic <= 0:
        raise InvalidInput(
            "recall.meaning and recall.semantic are both 0 in engram.yaml, so no search would use vectors.",
            field="recall.meaning",
            hint="Turn meaning on (recall: meaning: 1.0, docs/recall.md), then run this again.",
        )
    done = target(state, s).fill(progress=progress, batch=batch) if s.meaning > 0 else 0
    if s.semantic > 0:
        done += semantic.embed_all(state, progress=progress, batch=batch)
    return done
