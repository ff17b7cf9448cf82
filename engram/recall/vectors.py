"""Vector search over a vault's items: exact nearest neighbours by meaning.

Each opened vault's index gets one :class:`Space`: every item's passage vectors
(:mod:`engram.recall.encoder`) in one float32 matrix, read from the content-keyed cache
(:mod:`engram.index.embeddings`) and kept in memory. A query is one matrix-vector
product; an item's similarity is its best passage's cosine (max-pooling), so a long
note that answers in one paragraph is not diluted by the rest.

Freshness. The space is rebuilt from the index when the index's ``changes`` tally moved
(every insert and delete of an item row moves it), reusing the vectors of rows whose
cache key is unchanged: a search never uses the vector of an item's old text. Items
with no vector yet are *missing*; searches use the rest and say how many are missing
(:class:`Coverage`); :func:`fill` embeds them — the background thread of long-lived
processes, ``engram reindex --embed``, and a search on a vault with only a few missing.

Scale. Exact search costs ~4 ms per 100k passages on one core (a float32 product); the
matrix takes 1.5 KB per passage (150 MB at 100k) with the default model, 3 KB with
all-mpnet-base-v2 (768 dimensions; each model has a space of its own, :func:`space`).
The product runs on one BLAS thread (threadpoolctl, for the call only): OpenBLAS spreads even a 5k × 384 product over every
core, and on a busy machine its threads wait for each other — 0.4 ms on one thread took
1–12 ms on two loaded cores. Past a million passages an approximate
index (HNSW, sqlite-vec) would take over; docs/recall.md says so.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.index.catalog import Index
from engram.index.embeddings import VectorCache
from engram.recall import encoder
from engram.recall.models import DEFAULT, Model

_spaces: weakref.WeakKeyDictionary[Index, dict[str, Space]] = weakref.WeakKeyDictionary()
#: Indexes that read another's vector cache (see :func:`share_cache`): its index path.
_cache_homes: weakref.WeakKeyDictionary[Index, Path] = weakref.WeakKeyDictionary()
_spaces_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of the vault a search's meaning could see."""

    items: int
    missing: int

    @property
    def complete(self) -> bool:
        return self.missing == 0


class Space:
    """The passage vectors of one index's items by one model (see the module docstring);
    thread-safe."""

    def __init__(self, index: Index, model: Model = DEFAULT) -> None:
        self.index = index
        self.model = model
        self.cache = VectorCache(_cache_homes.get(index, index.db_path))
        self._lock = threading.RLock()
        self._tally: tuple[int, int] = (-1, -1)
        self._keys: dict[int, str] = {}  # rowid -> cache key, every item
        self._vecs: dict[int, Any] = {}  # rowid -> float32 (passages, dimensions), items with vectors
        self._matrix: Any = None
        self._owners: Any = None  # item rowid per item block, in matrix order
        self._starts: Any = None  # first matrix row of each block
        self._dirty = True

    # ------------------------------------------------------------------ freshness

    def refresh(self) -> Coverage:
        """Bring the space up to the index; how much of it has vectors."""
        with self._lock:
            tally = _changes(self.index)
            if tally != self._tally:
                rows = self.index.query("SELECT rowid, title, summary, body_hash FROM items")
                keys = {int(r[0]): encoder.cache_key(str(r[1]), str(r[2]), str(r[3]), self.model) for r in rows}
                keep = {rid: v for rid, v in self._vecs.items() if self._keys.get(rid) == keys.get(rid)}
                wanted = [k for rid, k in keys.items() if rid not in keep]
                found = self.cache.get(wanted) if wanted else {}
                for rid, key in keys.items():
                    if rid not in keep and key in found:
                        keep[rid] = _decode(*found[key], self.model.dimensions)
                self._keys, self._vecs, self._tally, self._dirty = keys, keep, tally, True
            return Coverage(len(self._keys), len(self._keys) - len(self._vecs))

    def missing(self) -> list[int]:
        """The rowids of items with no vector yet, in rowid order."""
        with self._lock:
            self.refresh()
            return sorted(set(self._keys) - set(self._vecs))

    def _build(self) -> None:
        import numpy as np

        if not self._dirty:
            return
        order = sorted(self._vecs)
        blocks = [self._vecs[rid] for rid in order]
        sizes = np.fromiter((b.shape[0] for b in blocks), dtype=np.int64, count=len(blocks))
        self._matrix = np.concatenate(blocks) if blocks else np.zeros((0, self.model.dimensions), np.float32)
        self._owners = np.asarray(order, dtype=np.int64)
        self._starts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if blocks else np.zeros(0, np.int64)
        self._dirty = False

    # ------------------------------------------------------------------ queries

    def scores(self, query: Any) -> Scores:
        """Every item's similarity to the unit vector ``query`` (its best passage's
        cosine): one matrix-vector product, shared by every use a search makes of it."""
        import numpy as np

        with self._lock:
            self.refresh()
            self._build()
            owners = self._owners
            if not len(owners):
                return Scores(owners, np.zeros(0, np.float32))
            with _one_blas_thread():
                products = self._matrix @ query
            best = np.maximum.reduceat(products, self._starts)
        return Scores(owners, best)

    # ------------------------------------------------------------------ filling

    def fill(self, limit: int | None = None, progress: Callable[[int], None] | None = None, batch: int = 32) -> int:
        """Embed up to ``limit`` missing items (all when None), ``batch`` at a time, and
        cache their vectors; how many were embedded. ``progress`` is told each batch's
        size. Raises ModelUnavailable."""
        import numpy as np

        todo = self.missing()
        if limit is not None:
            todo = todo[:limit]
        done = 0
        for i in range(0, len(todo), batch):
            chunk = todo[i : i + batch]
            marks = ",".join("?" * len(chunk))
            rows = self.index.query(f"SELECT rowid, title, summary, body, body_hash FROM items WHERE rowid IN ({marks})", chunk)
            texts: list[str] = []
            spans: list[tuple[int, str, int, int]] = []
            for r in rows:
                parts = encoder.passages(str(r[1]), str(r[2]), str(r[3]))
                spans.append((int(r[0]), encoder.cache_key(str(r[1]), str(r[2]), str(r[4]), self.model), len(texts), len(parts)))
                texts.extend(parts)
            vectors = encoder.embed(texts, model=self.model) if texts else np.zeros((0, self.model.dimensions), np.float32)
            entries = []
            with self._lock:
                for rid, key, start, n in spans:
                    block = vectors[start : start + n].astype(np.float16)
                    entries.append((key, n, block.tobytes()))
                    if self._keys.get(rid) == key:  # the row still holds the text embedded
                        self._vecs[rid] = block.astype(np.float32)
                        self._dirty = True
            self.cache.put(entries)
            done += len(spans)
            if progress is not None:
                progress(len(chunk))
        return done


@dataclass(frozen=True, slots=True)
class Scores:
    """One query's similarity to every item with vectors: ``best[i]`` is the cosine of
    the item with rowid ``owners[i]`` (``owners`` ascending)."""

    owners: Any
    best: Any

    def nearest(self, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(rowid, cosine)``, closest first."""
        import numpy as np

        k = min(k, len(self.best))
        if k <= 0:
            return []
        top = np.argpartition(-self.best, k - 1)[:k]
        top = top[np.argsort(-self.best[top], kind="stable")]
        return [(int(self.owners[i]), float(self.best[i])) for i in top]

    def of(self, rowids: Sequence[int]) -> dict[int, float]:
        """The cosine of each of ``rowids`` that has a vector."""
        import numpy as np

        if not len(self.owners) or not rowids:
            return {}
        wanted = np.asarray(rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.owners, wanted), len(self.owners) - 1)
        hit = self.owners[at] == wanted
        return {int(r): float(self.best[i]) for r, i, h in zip(wanted, at, hit, strict=True) if h}


_blas: Any = None


def _one_blas_thread() -> Any:
    """A context that runs BLAS on one thread (see the module docstring); the controller
    is built once, since finding the loaded BLAS libraries takes a few milliseconds."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


def share_cache(index: Index, owner: Index) -> None:
    """Let ``index`` read and fill ``owner``'s vector cache rather than one of its own: a
    snapshot of a vault (engram.team.past) holds mostly the vault's texts, and entries
    are keyed by content, so only versions that differ are embedded. Call it before the
    first search of ``index``."""
    _cache_homes[index] = _cache_homes.get(owner, owner.db_path)


def space(index: Index, model: Model = DEFAULT) -> Space:
    """The one :class:`Space` of ``index`` and ``model`` in this process."""
    with _spaces_lock:
        mine = _spaces.get(index)
        if mine is None:
            mine = _spaces[index] = {}
        found = mine.get(model.name)
        if found is None:
            found = mine[model.name] = Space(index, model)
        return found


def drop(index: Index, model: Model) -> None:
    """Let go of ``index``'s space for ``model`` (its vectors stay cached on disk): a
    model that stood in for another is not kept in memory once the other has taken over."""
    with _spaces_lock:
        mine = _spaces.get(index)
        if mine is not None:
            mine.pop(model.name, None)


def _changes(index: Index) -> tuple[int, int]:
    """What moves whenever an item row may have changed: the ``changes`` tally, and the
    schema cookie (a rebuilt index starts its tally again, and may give rowids anew)."""
    rows = index.query("SELECT (SELECT n FROM tally WHERE key = 'changes'), (SELECT schema_version FROM pragma_schema_version)")
    return (int(rows[0][0] or 0), int(rows[0][1] or 0)) if rows else (0, 0)


def _decode(n: int, data: bytes, dimensions: int) -> Any:
    import numpy as np

    return np.frombuffer(data, dtype=np.float16).reshape(n, dimensions).astype(np.float32)
