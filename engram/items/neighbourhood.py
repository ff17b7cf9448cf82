"""A bounded piece of the graph: an item's neighbourhood, or the most important items.

What a graph view draws. :func:`neighbourhood` never loads the whole graph: with a focus
it walks the synapses breadth-first from that item, ``depth`` hops at most, keeping the
strongest edges first and stopping at ``limit`` nodes; without one it takes the
``limit`` most important items that pass the filters. Either way the edges returned are
those among the nodes returned, so a 100k-item vault costs what the picture shows.

Node filters (domain, kinds, statuses, minimum importance) are the listing's
(:class:`~engram.store.rules.Filters`); a walk does not pass through a node they leave
out, and the focus itself is always kept so the picture has its centre. ``synapse_kinds``
limits which edges are followed and drawn. Everything comes from the index; no file is
read.

Two sorts of edge are walked and drawn: typed synapses (their files under
``synapses/``) and the wikilinks people typed in notes, resolved by the index
(:mod:`engram.index.wikilinks`). A wikilink is an edge of kind ``links_to``
(:data:`~engram.index.wikilinks.LINK_KIND`) with weight
:data:`~engram.index.wikilinks.LINK_WEIGHT`, one per ordered pair of notes however often
one names the other, and its id is ``link:<source>><target>`` so it never collides with a
synapse's. Naming ``links_to`` in ``synapse_kinds`` follows wikilinks only, or with the
synapse kinds named; naming only synapse kinds leaves them out, as recall does.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput, UnknownKind
from engram.index.wikilinks import LINK_KIND, LINK_WEIGHT
from engram.items.state import VaultState
from engram.store.model import SYNAPSE_KINDS
from engram.store.rules import Filters

MAX_DEPTH = 3
MAX_NODES = 500
_CHUNK = 400  # ids per IN (...) list: well under SQLite's parameter limit
_NODE_COLUMNS = "id, title, kind, domain, status, importance, path"


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    title: str
    kind: str
    domain: str
    status: str
    importance: float
    path: str
    hops: int | None  # from the focus (0 for the focus); None without a focus


@dataclass(frozen=True, slots=True)
class Edge:
    id: str
    source: str
    target: str
    kind: str  # a synapse kind, or LINK_KIND for a wikilink typed in a note
    weight: float

    @property
    def wikilink(self) -> bool:
        return self.kind == LINK_KIND


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """Nodes and the edges among them; ``truncated`` when ``limit`` cut the walk short."""

    focus: str | None
    depth: int
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    truncated: bool


def neighbourhood(
    state: VaultState,
    ref: str | None = None,
    *,
    depth: int = 1,
    domain: str | Sequence[str] | None = None,
    kinds: Iterable[str] | None = None,
    statuses: Iterable[str] | None = None,
    min_importance: float | None = None,
    include_hidden: bool = False,
    synapse_kinds: Iterable[str] | None = None,
    limit: int = 150,
) -> Neighbourhood:
    """The items within ``depth`` hops of ``ref`` (or, without ``ref``, the ``limit``
    most important items) that pass the filters, and the edges among them.

    Raises NotFound (``ref``), InvalidInput (depth outside 1..3, limit outside 1..500, a
    bad filter), UnknownKind (a synapse kind).
    """
    if not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidInput(f"depth must be 1 to {MAX_DEPTH}, not {depth!r}.", field="depth", hint="e.g. 2")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_NODES:
        raise InvalidInput(f"limit must be 1 to {MAX_NODES}, not {limit!r}.", field="limit", hint="e.g. 150")
    edge_kinds = tuple(dict.fromkeys(synapse_kinds or ()))
    for kind in edge_kinds:
        if kind not in SYNAPSE_KINDS and kind != LINK_KIND:
            raise UnknownKind(kind, (*SYNAPSE_KINDS, LINK_KIND), "synapse kind")
    where, params = Filters.of(
        domain=domain, kinds=kinds, statuses=statuses, min_importance=min_importance,
        include_hidden=include_hidden,
    ).sql()
    state.ensure_fresh()
    if ref is None:
        rows = state.index.query(
            f"SELECT {_NODE_COLUMNS} FROM items WHERE {where}"
            f" ORDER BY importance DESC, retrieval_count DESC, path LIMIT {limit + 1}",
            params,
        )
        chosen = {r["id"]: _node(r, None) for r in rows[:limit]}
        edges = _edges_among(state, builtins.list(chosen), edge_kinds)
        return Neighbourhood(None, depth, tuple(chosen.values()), edges, len(rows) > limit)
    focus_id = state.resolve_id(ref)
    focus_rows = state.index.query(f"SELECT {_NODE_COLUMNS} FROM items WHERE id = ?", (focus_id,))
    chosen = {focus_id: _node(focus_rows[0], 0)}
    frontier = [focus_id]
    truncated = False
    for hop in range(1, depth + 1):
        if not frontier or truncated:
            break
        ranked = _neighbours_by_weight(state, frontier, edge_kinds, set(chosen))
        frontier = []
        # Admitted a chunk at a time, strongest first, until the limit: a note thousands
        # link to costs one chunk, not thousands of rows.
        for start in range(0, len(ranked), _CHUNK):
            if truncated:
                break
            chunk = ranked[start : start + _CHUNK]
            admitted = _admit(state, chunk, where, params)
            for other in chunk:
                row = admitted.get(other)
                if row is None:
                    continue
                if len(chosen) >= limit:
                    truncated = True
                    break
                chosen[other] = _node(row, hop)
                frontier.append(other)
    edges = _edges_among(state, builtins.list(chosen), edge_kinds)
    return Neighbourhood(focus_id, depth, tuple(chosen.values()), edges, truncated)


def _node(row: Any, hops: int | None) -> Node:
    return Node(
        row["id"], row["title"], row["kind"], row["domain"], row["status"],
        float(row["importance"]), row["path"], hops,
    )


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def _typed(edge_kinds: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    """(follow wikilinks?, the synapse kinds to follow; empty: all) for a kind filter."""
    if not edge_kinds:
        return True, ()
    typed = tuple(k for k in edge_kinds if k != LINK_KIND)
    return LINK_KIND in edge_kinds, typed


def _neighbours_by_weight(
    state: VaultState, frontier: list[str], edge_kinds: tuple[str, ...], seen: set[str]
) -> list[str]:
    """Ids one hop from ``frontier`` not yet ``seen``, strongest edge first (a wikilink
    weighs :data:`LINK_WEIGHT`)."""
    links, typed = _typed(edge_kinds)
    kind_clause = f" AND kind IN ({_marks(typed)})" if typed else ""
    best: dict[str, float] = {}
    for start in range(0, len(frontier), 300):
        chunk = frontier[start : start + 300]
        parts: list[str] = []
        params: list[Any] = []
        if typed or not edge_kinds:
            parts.append(
                "SELECT CASE WHEN source IN ({m}) THEN target ELSE source END AS other, max(weight) AS w"
                " FROM synapses WHERE (source IN ({m}) OR target IN ({m})){k} GROUP BY other".format(
                    m=_marks(chunk), k=kind_clause
                )
            )
            params += [*chunk, *chunk, *chunk, *typed]
        if links:
            parts.append(
                "SELECT CASE WHEN src_id IN ({m}) THEN target_id ELSE src_id END AS other, ? AS w"
                " FROM links WHERE status = 'ok' AND (src_id IN ({m}) OR target_id IN ({m}))"
                " GROUP BY other".format(m=_marks(chunk))
            )
            params += [*chunk, LINK_WEIGHT, *chunk, *chunk]
        for r in state.index.query(" UNION ALL ".join(parts), params):
            if r["other"] not in seen:
                best[r["other"]] = max(best.get(r["other"], 0.0), float(r["w"]))
    return sorted(best, key=lambda i: (-best[i], i))


def _admit(state: VaultState, ids: list[str], where: str, params: list[Any]) -> dict[str, Any]:
    """Rows of the ``ids`` that pass the node filters."""
    found: dict[str, Any] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        for r in state.index.query(
            f"SELECT {_NODE_COLUMNS} FROM items WHERE id IN ({_marks(chunk)}) AND {where}",
            [*chunk, *params],
        ):
            found.setdefault(r["id"], r)
    return found


def _edges_among(state: VaultState, ids: list[str], edge_kinds: tuple[str, ...]) -> tuple[Edge, ...]:
    if not ids:
        return ()
    links, typed = _typed(edge_kinds)
    edges: list[Edge] = []
    if typed or not edge_kinds:
        kind_clause = f" AND kind IN ({_marks(typed)})" if typed else ""
        rows = state.index.query(
            f"SELECT DISTINCT id, source, target, kind, weight FROM synapses"
            f" WHERE source IN ({_marks(ids)}) AND target IN ({_marks(ids)}){kind_clause} ORDER BY id",
            [*ids, *ids, *typed],
        )
        edges += [Edge(r["id"], r["source"], r["target"], r["kind"], float(r["weight"])) for r in rows]
    if links:
        rows = state.index.query(
            f"SELECT DISTINCT src_id, target_id FROM links WHERE status = 'ok' AND src_id IN ({_marks(ids)})"
            f" AND target_id IN ({_marks(ids)}) AND src_id != target_id ORDER BY src_id, target_id",
            [*ids, *ids],
        )
        edges += [
            Edge(f"link:{r['src_id']}>{r['target_id']}", r["src_id"], r["target_id"], LINK_KIND, LINK_WEIGHT)
            for r in rows
        ]
    return tuple(edges)
