"""Spreading activation over synapses: how linked knowledge surfaces in recall.

Recall seeds activation on its best lexical hits (each with its relevance, 0..1) and lets
it flow along edges for at most ``max_hops`` hops. Crossing an edge multiplies the
activation by

    kind weight × (0.5 + 0.5 × edge weight) × hop decay × fan damping

where the kind weight comes from the ``recall.edgeWeights`` settings, an edge of default
weight (0.5) passes three quarters, and fan damping (``min(1, sqrt(fanLimit / degree))``)
keeps a hub with hundreds of edges from flooding the results with its neighbours. Edges
are followed in both directions: a hit's parts, extensions and dependencies are worth
seeing, and so are the things it is part of, extends or depends on.

An item's activation is the sum of what reaches it (capped at 1), so knowledge linked to
several hits ranks above knowledge linked to one; its explanation keeps the single
strongest path. Seeds receive activation from each other (two linked hits support each
other) but spread only their own. Two kinds never spread: ``contradicts`` (recall reports those neighbours
as warnings on the hit instead) and ``supersedes`` (recall replaces a superseded item by
its successor before expanding).

The graph is read straight from the index's ``synapses`` table one hop at a time (two
indexed lookups per hop), so expansion costs the same at 1k items as at 100k; an
in-memory graph would have to be rebuilt on every change another process makes.
Invariant: a node is only expanded through if ``admit`` accepts it, so filters and
visibility apply to paths as well as to results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from engram.index.catalog import Index
from engram.index.search import Edge

#: Kinds that never carry activation (see the module docstring).
NON_SPREADING = frozenset({"contradicts", "supersedes"})


@dataclass(frozen=True, slots=True)
class Step:
    """One edge crossed on an expansion path."""

    source: str  # the item activation came from
    target: str  # the item it reached
    kind: str
    direction: str  # "out" when the synapse points source → target, else "in"
    weight: float  # the factor this edge applied (kind × edge × decay × fan)
    activation: float  # activation that reached ``target`` along this path


@dataclass(frozen=True, slots=True)
class Activation:
    node: str
    value: float
    path: tuple[Step, ...]  # the strongest path from a seed, seed first

    @property
    def seed(self) -> str:
        return self.path[0].source if self.path else self.node


@dataclass(frozen=True, slots=True)
class SpreadSettings:
    kind_weights: Mapping[str, float]
    max_hops: int = 2
    decay: float = 0.6
    min_activation: float = 0.05
    fan_limit: int = 4
    max_edges_per_node: int = 64


#: ``around(ids, top, rank, useful)``: for each id, its degree (edges that may spread) and
#: at most ``top`` of them, ranked as :func:`spread` ranks them; an id whose degree is past
#: ``useful[id]`` (where fan damping silences every edge) is left out unread
#: (:meth:`EdgeCache.around`).
Around = Callable[
    [Sequence[str], int, Mapping[str, float], Mapping[str, float]], Mapping[str, tuple[int, Sequence[Edge]]]
]


def spread(
    seeds: Mapping[str, float],
    edges_of: Callable[[Sequence[str]], Iterable[Edge]],
    admit: Callable[[Mapping[str, float], bool], set[str]],
    settings: SpreadSettings,
    around: Around | None = None,
) -> dict[str, Activation]:
    """Activation reached by every non-seed item, keyed by id.

    ``seeds`` maps item ids to starting activation (0..1). ``edges_of(ids)`` returns the
    synapses touching those ids; ``admit(reached, final)`` gets the newly reached ids with
    the activation each has gathered and returns the subset that may appear in results
    and carry activation further (filters, visibility, status). On the ``final`` hop
    nothing spreads further, so it may also refuse items that could not matter.

    With ``around``, each node's degree and its ``max_edges_per_node`` strongest edges
    come from it instead, and ``edges_of`` is not called: the same activation, at a cost
    bounded whatever a node's degree (a hub of 10,000 links cost 150 ms a search).
    """
    best: dict[str, Activation] = {}
    total: dict[str, float] = {}
    verdict: dict[str, bool] = {}  # admit() answers, asked once per node
    expanded: set[str] = set(seeds)
    frontier: dict[str, Activation] = {
        node: Activation(node, value, ()) for node, value in seeds.items() if value > 0
    }
    for hop in range(1, settings.max_hops + 1):
        if not frontier:
            break
        by_node: dict[str, list[Edge]] = {}
        degree: dict[str, int] = {}
        if around is not None:
            # Through a node of degree d an edge passes at most strongest × decay × fan(d)
            # (edge weights are 0..1): past the degree where that falls under the weakest
            # activation worth following (see the loop), fan damping silences every edge.
            strongest = max((w for w in settings.kind_weights.values()), default=0.0) * settings.decay
            weakest = settings.min_activation / 4
            useful = {
                n: settings.fan_limit * (a.value * strongest / weakest) ** 2 if weakest > 0 else math.inf
                for n, a in frontier.items()
            }
            for node, (count, top) in around(
                sorted(frontier), settings.max_edges_per_node, settings.kind_weights, useful
            ).items():
                if top:
                    by_node[node], degree[node] = list(top), count
        else:
            for edge in edges_of(sorted(frontier)):
                if edge.kind in NON_SPREADING or edge.source == edge.target:
                    continue
                for end in (edge.source, edge.target):
                    if end in frontier:
                        by_node.setdefault(end, []).append(edge)
            degree = {node: len(edges) for node, edges in by_node.items()}
        reached: dict[str, Activation] = {}
        for node, edges in sorted(by_node.items()):
            source = frontier[node]
            fan = min(1.0, math.sqrt(settings.fan_limit / degree[node]))
            edges.sort(key=lambda e: (-settings.kind_weights.get(e.kind, 0.0) * e.weight, e.source, e.target, e.kind))
            for edge in edges[: settings.max_edges_per_node]:
                kind_weight = settings.kind_weights.get(edge.kind, 0.0)
                other = edge.target if edge.source == node else edge.source
                if kind_weight <= 0 or other == node or any(st.source == other for st in source.path):
                    continue  # no echo: activation never flows back along its own path
                factor = kind_weight * (0.5 + 0.5 * edge.weight) * settings.decay * fan
                value = source.value * factor
                if value < settings.min_activation / 4:
                    continue  # too weak to matter even summed with others
                direction = "out" if edge.source == node else "in"
                step = Step(node, other, edge.kind, direction, round(factor, 4), round(value, 4))
                arrival = Activation(other, value, (*source.path, step))
                total[other] = total.get(other, 0.0) + value
                if other not in best or value > best[other].value:
                    best[other] = arrival
                if other not in reached or value > reached[other].value:
                    reached[other] = arrival
        unknown = {n: total[n] for n in reached if n not in verdict}
        if unknown:
            allowed = admit(unknown, hop == settings.max_hops)
            verdict.update({n: n in allowed for n in unknown})
        for node in [n for n in reached if not verdict[n]]:
            del reached[node]
            best.pop(node, None)
            total.pop(node, None)
        # A node expands once, from its strongest arrival on the hop it was first reached.
        frontier = {
            n: a for n, a in reached.items()
            if n not in expanded and a.value >= settings.min_activation
        } if hop < settings.max_hops else {}
        expanded.update(frontier)
    out: dict[str, Activation] = {}
    for node, activation in best.items():
        value = min(1.0, total[node])
        if value >= settings.min_activation:
            out[node] = Activation(node, round(value, 4), activation.path)
    return out


class EdgeCache:
    """Synapses by item id, fetched once per search: succession, expansion and warnings
    all read the same candidates' edges, so one query serves the three."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.by_id: dict[str, list[Edge]] = {}

    def __call__(self, ids: Iterable[str]) -> list[Edge]:
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in self.by_id]
        for i in missing:
            self.by_id[i] = []
        for edge in self.index.search.edges(missing):
            for end in {edge.source, edge.target}:
                if end in self.by_id and end in missing:
                    self.by_id[end].append(edge)
        seen: dict[tuple[str, str, str], Edge] = {}
        for i in wanted:
            for edge in self.by_id[i]:
                seen[(edge.source, edge.target, edge.kind)] = edge
        return list(seen.values())

    def around(
        self, ids: Sequence[str], top: int, rank: Mapping[str, float], useful: Mapping[str, float]
    ) -> dict[str, tuple[int, list[Edge]]]:
        """For each of ``ids``, its degree and at most ``top`` of its edges that may
        spread, strongest first (:data:`Around`). Nodes of degree ``top`` or less are read
        whole through the cache; a hub's ``top`` strongest are sorted out by SQLite; a
        hub past ``useful`` is not read at all."""
        search = self.index.search
        degree = search.degrees(ids, NON_SPREADING)
        ids = [i for i in ids if degree.get(i, 0) <= useful.get(i, math.inf)]
        small = {i for i in ids if 0 < degree.get(i, 0) <= top}
        out: dict[str, list[Edge]] = {}
        for edge in self(sorted(small)) if small else ():
            if edge.kind in NON_SPREADING or edge.source == edge.target:
                continue
            for end in (edge.source, edge.target):
                if end in small:
                    out.setdefault(end, []).append(edge)
        for i in ids:
            if degree.get(i, 0) > top:
                out[i] = search.top_edges(i, top, rank, NON_SPREADING)
        return {i: (degree[i] if i not in small else len(edges), edges) for i, edges in out.items()}

    def contradicts(self, ids: Iterable[str]) -> list[Edge]:
        """The ``contradicts`` synapses of ``ids``: from the cache where an item's edges
        were read, else by an indexed lookup of that kind alone."""
        wanted = list(dict.fromkeys(ids))
        found = [e for e in self([i for i in wanted if i in self.by_id]) if e.kind == "contradicts"]
        rest = [i for i in wanted if i not in self.by_id]
        found += self.index.search.edges(rest, kinds=("contradicts",))
        return list({(e.source, e.target, e.kind): e for e in found}.values())
