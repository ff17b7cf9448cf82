"""What engram keeps about a person's note: beside the note, never in it.

A person's note — any note whose frontmatter lacks engram's identity triple (``id``,
``title``, ``createdAt``; :func:`engram.store.notes.persons_note`), with no id, a
Dendron id or the id line ``engram adopt`` wrote — changes only when its owner asks (an
update that names it, ``engram adopt``). The counters other writes fold into an item's
frontmatter — reinforcement by a duplicate or a lesson, retrievals, feedback — are kept
for such a note in ``.engram/notes.json``, on this machine (local state, never
committed, like the journals they come from), keyed by the note's id::

    {"version": 1, "notes": {"note-3b14b20cf23b9960": {"reinforcementScore": 1.0,
      "retrievalCount": 3, "lastRetrievedAt": "…", "effectiveRetrievals": 1, "importance": 0.05}}}

Recall adds them to what the file says (:mod:`engram.recall.search`). When the owner
adopts a note that had no id, its entry moves to the id written into it
(:meth:`engram.items.state.VaultState.claim`) and stays here: the note is still theirs.
Typed links that name such a note are synapse files, shown on their other ends
(:mod:`engram.items.links`).

Invariants: written atomically, under the vault lock the callers hold; a file that does
not parse counts as empty (a torn or foreign file never fails a search or a write);
readers cache by the file's stamp, so recall pays one ``stat`` for it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from engram.store.fsio import atomic_write
from engram.store.model import instant

FILE = "notes.json"


@dataclass(frozen=True, slots=True)
class Kept:
    """The counters of one person's note (deltas over what its file says)."""

    reinforcement: float = 0.0
    retrievals: int = 0
    last_retrieved: str | None = None
    effective: int = 0
    failed: int = 0
    importance: float = 0.0
    last_effective: str | None = None
    last_failed: str | None = None

    def plus(self, other: Kept) -> Kept:
        return Kept(
            round(self.reinforcement + other.reinforcement, 6),
            self.retrievals + other.retrievals,
            _later(self.last_retrieved, other.last_retrieved),
            self.effective + other.effective,
            self.failed + other.failed,
            round(self.importance + other.importance, 6),
            _later(self.last_effective, other.last_effective),
            _later(self.last_failed, other.last_failed),
        )


_KEYS = {
    "reinforcement": "reinforcementScore", "retrievals": "retrievalCount", "last_retrieved": "lastRetrievedAt",
    "effective": "effectiveRetrievals", "failed": "failedUses", "importance": "importance",
    "last_effective": "lastEffectiveAt", "last_failed": "lastFailedAt",
}
#: The counters an engram before issue 28 folded into a person's note, which live here
#: now (``importance`` is left out: a person may well write that property themselves).
COUNTERS = tuple(key for name, key in _KEYS.items() if name != "importance")
_cache: dict[Path, tuple[tuple[int, int, int], dict[str, Kept]]] = {}
_cache_lock = threading.Lock()


def _later(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a or b
    try:
        return a if instant(a) >= instant(b) else b
    except ValueError:
        return max(a, b)


def _parse(data: bytes) -> dict[str, Kept]:
    try:
        raw = json.loads(data)
        notes = raw["notes"]
    except (ValueError, KeyError, TypeError):
        return {}
    out: dict[str, Kept] = {}
    if not isinstance(notes, dict):
        return out
    for item_id, entry in notes.items():
        if not isinstance(entry, dict):
            continue
        values: dict[str, Any] = {}
        for f in fields(Kept):
            value = entry.get(_KEYS[f.name])
            if value is None:
                continue
            if f.name.startswith("last_"):
                if isinstance(value, str):
                    values[f.name] = value
            elif f.name in ("reinforcement", "importance"):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    values[f.name] = float(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                values[f.name] = value
        out[str(item_id)] = Kept(**values)
    return out


def load(state_dir: Path) -> Mapping[str, Kept]:
    """Every person's note's counters kept under ``state_dir`` (empty when none)."""
    path = state_dir / FILE
    try:
        st = os.stat(path)
    except OSError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    with _cache_lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    parsed = _parse(data)
    with _cache_lock:
        _cache[path] = (stamp, parsed)
    return parsed


def _store(state_dir: Path, notes: Mapping[str, Kept]) -> None:
    body = {
        item_id: {_KEYS[f.name]: getattr(kept, f.name) for f in fields(Kept) if getattr(kept, f.name) not in (None, 0, 0.0)}
        for item_id, kept in sorted(notes.items())
    }
    data = json.dumps({"version": 1, "notes": body}, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    atomic_write(state_dir / FILE, data.encode("utf-8"))


def add(state_dir: Path, item_id: str, delta: Kept) -> Kept:
    """Add ``delta`` to the counters kept for ``item_id``; return the new totals. The
    caller holds the vault lock."""
    notes = dict(load(state_dir))
    notes[item_id] = notes.get(item_id, Kept()).plus(delta)
    _store(state_dir, notes)
    return notes[item_id]


def move(state_dir: Path, old_id: str, new_id: str) -> Kept | None:
    """Move a note's counters to the id it was adopted under (the caller holds the lock)."""
    notes = dict(load(state_dir))
    kept = notes.pop(old_id, None)
    if kept is None:
        return None
    notes[new_id] = notes.get(new_id, Kept()).plus(kept)
    _store(state_dir, notes)
    return notes[new_id]


__all__ = ["FILE", "Kept", "add", "load", "move"]
