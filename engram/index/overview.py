"""The breadth view: the vault's domain tree with cumulative item counts.

Before an agent searches it should know what the memory covers. :func:`tree` groups the
visible items of the index by ``domainTags`` path and returns a tree in which each node
carries ``count`` (items filed exactly there) and ``total`` (there and below), so
``ops (41) → postgres (17)`` reads at a glance. One ``GROUP BY`` on the index; no file
is read. Items with no domain are counted on the root.

:func:`counts` is the census a person's dashboard opens with: items by kind, status,
visibility (scope) and top-level domain, and synapses by kind, from one grouped pass
over each table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.index.catalog import Index
from engram.store import rules


@dataclass(frozen=True, slots=True)
class DomainNode:
    name: str  # the last segment ("" for the root)
    path: str  # the full domain path ("" for the root)
    count: int  # items filed exactly here
    total: int  # items here and below
    children: tuple[DomainNode, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "path": self.path, "count": self.count, "total": self.total,
            "children": [c.to_json() for c in self.children],
        }

    def lines(self, indent: str = "  ") -> list[str]:
        """The tree as indented text lines (``name  total``), children by size."""
        out: list[str] = []

        def walk(node: DomainNode, level: int) -> None:
            for child in node.children:
                own = f" ({child.count} here)" if child.count and child.children else ""
                out.append(f"{indent * level}{child.name}/  {child.total}{own}")
                walk(child, level + 1)

        walk(self, 0)
        return out


@dataclass(frozen=True, slots=True)
class Counts:
    """How many items and synapses the index holds, broken down (hidden statuses included,
    since a census that left out quarantined items would hide what needs a look)."""

    items: int
    synapses: int
    by_kind: dict[str, int]
    by_status: dict[str, int]
    by_visibility: dict[str, int]
    by_domain: dict[str, int]  # top-level domain ("" for items with none) -> items
    by_synapse_kind: dict[str, int]
    broken_files: int


def counts(index: Index) -> Counts:
    """The census of :class:`Counts`, largest groups first."""
    # One pass over the items grouped by all four columns (a few hundred groups), summed
    # here: five GROUP BY passes cost five scans of the table.
    rows = index.query(
        "SELECT kind, status, visibility, CASE WHEN instr(domain, '/') > 0"
        " THEN substr(domain, 1, instr(domain, '/') - 1) ELSE domain END AS top, count(*) AS n"
        " FROM items GROUP BY kind, status, visibility, top"
    )
    tallies: dict[str, dict[str, int]] = {"kind": {}, "status": {}, "visibility": {}, "top": {}}
    for row in rows:
        for column, tally in tallies.items():
            tally[str(row[column])] = tally.get(str(row[column]), 0) + int(row["n"])
    synapse_kinds = {
        str(r["kind"]): int(r["n"]) for r in index.query("SELECT kind, count(*) AS n FROM synapses GROUP BY kind")
    }

    def ranked(tally: dict[str, int]) -> dict[str, int]:
        return dict(sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))

    return Counts(
        items=sum(int(r["n"]) for r in rows),
        synapses=sum(synapse_kinds.values()),
        by_kind=ranked(tallies["kind"]),
        by_status=ranked(tallies["status"]),
        by_visibility=ranked(tallies["visibility"]),
        by_domain=ranked(tallies["top"]),
        by_synapse_kind=ranked(synapse_kinds),
        broken_files=int(index.query("SELECT count(*) AS n FROM files WHERE kind = 'bad'")[0]["n"]),
    )


def tree(
    index: Index,
    *,
    domain: str | Sequence[str] | None = None,
    depth: int | None = None,
    include_hidden: bool = False,
) -> DomainNode:
    """The domain tree of the visible items under ``domain``, ``depth`` levels deep
    (deeper folders are folded into their ancestor's total). Raises InvalidInput."""
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise InvalidInput(f"depth must be 1 or more, not {depth!r}.", field="depth", hint="e.g. 2")
    where, params = rules.Filters.of(domain=domain, include_hidden=include_hidden).sql()
    rows = index.query(f"SELECT domain, count(*) AS n FROM items WHERE {where} GROUP BY domain", params)
    base = tuple(rules.domain_tags(domain)) if domain else ()
    trie: _Trie = {}
    for row in rows:
        parts = [p for p in str(row["domain"]).split("/") if p][len(base):]
        if depth is not None:
            parts = parts[:depth]
        node = trie
        for part in parts:
            node = node.setdefault(part, {})
        node[_OWN] = node.get(_OWN, 0) + int(row["n"])
    return _build(base, trie)


_OWN = "\0count"  # a key no domain segment can be (segments are slugs)
_Trie = dict[str, Any]


def _build(path: tuple[str, ...], trie: _Trie) -> DomainNode:
    children = [_build((*path, name), sub) for name, sub in trie.items() if name != _OWN]
    children.sort(key=lambda c: (-c.total, c.name))
    own = int(trie.get(_OWN, 0))
    return DomainNode(
        name=path[-1] if path else "",
        path="/".join(path),
        count=own,
        total=own + sum(c.total for c in children),
        children=tuple(children),
    )
