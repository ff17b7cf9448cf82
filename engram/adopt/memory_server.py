"""The reference MCP memory server's knowledge graph (``memory.jsonl``, formerly
``memory.json``; modelcontextprotocol/servers, ``src/memory``).

The file is JSON Lines: ``{"type": "entity", "name", "entityType", "observations": [...]}``
and ``{"type": "relation", "from", "to", "relationType"}``, one object a line (what
``saveGraph`` writes); the ``{"entities": [...], "relations": [...]}`` object that
``read_graph`` returns is read too.

- An entity becomes an item: title = name, body = the observations as a list (in order),
  tag = the entity type (also kept as ``entityType``), domain ``<--domain or memory>/
  <entity type>``, kind ``fact``. Its key is its name: a second import skips it.
- A relation becomes an edge between the two entities, its kind mapped by
  :mod:`.relations` (the original type kept as evidence). One whose entity is missing is
  reported as unresolved, as the server itself refuses it.
- A line that is not JSON, an entity without a name or a second entity of one name is a
  bad record, reported and skipped (the server skips such lines too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engram.adopt.batch import Batch, Link, SourceRecord
from engram.adopt.relations import kind_for
from engram.errors import InvalidInput
from engram.store.paths import domain_segment


def parse(text: str, origin: str, *, default_domain: tuple[str, ...] = ()) -> Batch:
    """A batch from the text of a memory file."""
    objects = _objects(text)
    records: list[SourceRecord] = []
    relations: list[tuple[str, Mapping[str, Any]]] = []
    index: dict[str, int] = {}
    for where, obj, problem in objects:
        if problem is not None:
            records.append(SourceRecord(where, where, problem=problem))
        elif obj.get("type") == "relation":
            relations.append((where, obj))
        elif obj.get("type") == "entity":
            record = _entity(where, obj, default_domain)
            if record.problem is None and record.key in index:
                record = SourceRecord(where, where, problem=f"a second entity named {record.key!r} "
                                      f"(first: {records[index[record.key]].where})")
            elif record.problem is None:
                index[record.key] = len(records)
            records.append(record)
        else:
            records.append(SourceRecord(where, where, problem=f"unknown type {obj.get('type')!r} "
                                        "(expected entity or relation)"))
    for where, rel in relations:
        frm, to, rtype = rel.get("from"), rel.get("to"), rel.get("relationType")
        if not all(isinstance(v, str) and v for v in (frm, to, rtype)):
            records.append(SourceRecord(where, where, problem="a relation needs from, to and relationType"))
            continue
        assert isinstance(frm, str) and isinstance(to, str) and isinstance(rtype, str)
        kind, exact = kind_for(rtype)
        link = Link(kind, to, None if exact else f"memory relation: {rtype}")
        if frm not in index:
            records.append(SourceRecord(where, where, problem=f"relation from unknown entity {frm!r}"))
            continue
        owner = records[index[frm]]
        records[index[frm]] = SourceRecord(owner.key, owner.where, owner.fields, (*owner.links, link))
    return Batch("memory-server", origin, tuple(records), unit="record")


def looks_like(text: str) -> bool:
    """Whether ``text`` is a memory-server graph (its first object is typed so)."""
    for _, obj, _problem in _objects(text)[:5]:
        if obj and obj.get("type") in ("entity", "relation"):
            return True
    return False


def _objects(text: str) -> list[tuple[str, Mapping[str, Any], str | None]]:
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.strip():
        try:
            graph = json.loads(text)
        except json.JSONDecodeError:
            graph = None
        if isinstance(graph, Mapping) and ("entities" in graph or "relations" in graph):
            out: list[tuple[str, Mapping[str, Any], str | None]] = []
            for section, typ in (("entities", "entity"), ("relations", "relation")):
                for n, obj in enumerate(graph.get(section) or [], start=1):
                    where = f"{section}[{n}]"
                    if isinstance(obj, Mapping):
                        out.append((where, {"type": typ, **obj}, None))
                    else:
                        out.append((where, {}, "not an object"))
            return out
    found: list[tuple[str, Mapping[str, Any], str | None]] = []
    for n, line in enumerate(text.split("\n"), start=1):  # LF only: NEL and U+2028 are text
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            found.append((f"line {n}", {}, f"not valid JSON ({exc.msg})"))
            continue
        if isinstance(obj, Mapping):
            found.append((f"line {n}", obj, None))
        else:
            found.append((f"line {n}", {}, "not an object"))
    return found


def _entity(where: str, obj: Mapping[str, Any], default_domain: tuple[str, ...]) -> SourceRecord:
    name, etype, observations = obj.get("name"), obj.get("entityType"), obj.get("observations", [])
    if not isinstance(name, str) or not name.strip():
        return SourceRecord(where, where, problem="an entity needs a name")
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        return SourceRecord(name, where, problem="observations must be a list of strings")
    etype = etype if isinstance(etype, str) else ""
    domain = list(default_domain or ("memory",))
    try:
        if etype.strip():
            domain.append(domain_segment(etype))
    except InvalidInput:
        pass  # an entity type that cannot be a folder name stays a tag and a property
    fields: dict[str, Any] = {
        "title": name.strip()[:300],
        "content": "".join(f"- {o.strip()}\n" for o in observations if o.strip()),
        "domain": domain,
        "kind": "fact",
        "tags": [etype] if etype.strip() else [],
        "source_type": "imported",
        "extra": {"entityType": etype} if etype else {},
    }
    return SourceRecord(name, where, fields)
