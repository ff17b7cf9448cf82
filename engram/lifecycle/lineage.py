"""Lineage: where an item came from and what came of it, along the temporal and
evidential edges (``supersedes``, ``consolidates``, ``derives_from``) and the
``supersededBy`` field, in both directions.

An *ancestor* is what an item replaced, absorbed or derives from; a *descendant* is
what replaced, absorbed or derives from it. A walk is breadth-first, at most
``MAX_DEPTH`` steps, and visits each item once, so cycles (a hand-made loop) end.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from engram.items.state import VaultState
from engram.store.model import Engram

LINEAGE_KINDS = ("supersedes", "consolidates", "derives_from")
MAX_DEPTH = 50


@dataclass(frozen=True, slots=True)
class LineageStep:
    id: str
    title: str
    status: str
    path: str | None
    via: str  # supersedes / consolidates / derives_from / supersededBy
    depth: int
    parent: str  # the item this step was reached from

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status, "path": self.path,
                "via": self.via, "depth": self.depth, "from": self.parent}


@dataclass(frozen=True, slots=True)
class Lineage:
    id: str
    title: str
    status: str
    ancestors: tuple[LineageStep, ...]
    descendants: tuple[LineageStep, ...]
    current: str  # the active end of the supersede chain this item is on

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status, "current": self.current,
                "ancestors": [s.to_json() for s in self.ancestors],
                "descendants": [s.to_json() for s in self.descendants]}


def _item(state: VaultState, item_id: str) -> Engram | None:
    rows = state.index.items("id = ?", (item_id,))
    return rows[0] if rows else None


def _links(state: VaultState, item_id: str, up: bool) -> list[tuple[str, str]]:
    """(other id, via) one step up (ancestors) or down (descendants) from ``item_id``."""
    marks = ",".join("?" * len(LINEAGE_KINDS))
    side, other = ("source", "target") if up else ("target", "source")
    edges = state.index.synapses(f"{side} = ? AND kind IN ({marks})", (item_id, *LINEAGE_KINDS))
    out = [(getattr(e, other), e.kind) for e in edges]
    if up:
        out += [(i.id, "supersededBy") for i in state.index.items("superseded_by = ?", (item_id,))]
    else:
        me = _item(state, item_id)
        if me is not None and me.superseded_by:
            out.append((me.superseded_by, "supersededBy"))
    return sorted(set(out))


def _walk(state: VaultState, start: str, up: bool) -> list[LineageStep]:
    seen = {start}
    queue = deque([(start, 0)])
    out: list[LineageStep] = []
    while queue:
        node, depth = queue.popleft()
        if depth >= MAX_DEPTH:
            continue
        for other, via in _links(state, node, up):
            if other in seen:
                continue
            seen.add(other)
            item = _item(state, other)
            out.append(LineageStep(other, item.title if item else "(missing)", item.status if item else "missing",
                                   item.path if item else None, via, depth + 1, node))
            queue.append((other, depth + 1))
    return out


def lineage(state: VaultState, ref: str) -> Lineage:
    """The item's ancestors and descendants (see the module docstring). Raises NotFound."""
    state.ensure_fresh()
    item = state.read(state.resolve(ref))[0]
    down = _walk(state, item.id, up=False)
    current = item.id
    for step in down:  # the newest active item reached through succession
        if step.via in ("supersedes", "supersededBy") and step.status in ("active", "draft"):
            current = step.id
    return Lineage(item.id, item.title, item.status, tuple(_walk(state, item.id, up=True)), tuple(down), current)
