"""JSON and JSON Lines records: the importer for data from anywhere, and for engram's own
``engram export --format jsonl``.

A record is an object with a ``title`` and any of ``content`` (or ``body``), ``domain``
(``"a/b"`` or a list; or ``domainTags``), ``kind``, ``tags``, ``summary``,
``importance``, ``confidence``, ``sourceType``, ``visibility``, ``status``, ``source``
and ``path``; other keys become extra frontmatter keys. Links ride along as

- ``links``: ``[{"kind": "depends_on", "to": "<id, or the title of another record>",
  "weight": 0.7, "evidence": "why"}]``, written as new edges; or
- ``synapses``: whole synapse objects as engram writes them (``id``, ``from``, ``to``,
  ``kind``, ``weight``, ``evidence``, …), carried over as they are.

A record with an ``id`` is an engram item (an export): it keeps its id and the history
keys of :data:`engram.store.rules.PRESERVABLE`, its own ``source``, and its ``path``, so
an export imports back into an equal vault; a second run finds the ids and skips them.
Any other record gets ``source: {importer: jsonl, from: <file>, key: <fingerprint>}``,
so a second run of the same file skips it too.

A line that is not JSON, or a record that is not an object, is a bad record: counted,
reported and skipped, like any record ``create`` refuses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engram.adopt.batch import Batch, Link, SourceRecord
from engram.errors import InvalidInput
from engram.store.dedup import fingerprint
from engram.store.model import Synapse
from engram.store.rules import PRESERVABLE

_FIELDS = {
    "title", "content", "body", "domain", "domainTags", "kind", "tags", "summary",
    "importance", "confidence", "sourceType", "visibility", "status", "source", "path",
    "links", "synapses",
}
#: Keys of an exported item that are derived or bookkeeping: recomputed on import.
_DERIVED = {"slug", "contentHash", "contentSize", "mergeConflicts"}


def parse(text: str, origin: str, *, fmt: str = "auto", default_domain: tuple[str, ...] = ()) -> Batch:
    """A batch from JSON (a list of objects) or JSON Lines text (one object a line).

    Raises InvalidInput only when the text as a whole is not JSON of either shape.
    """
    if fmt not in ("auto", "json", "jsonl"):
        raise InvalidInput(f"unknown format {fmt!r}.", hint="Use json, jsonl or auto.")
    if fmt == "json" or (fmt == "auto" and text.lstrip().startswith("[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"not valid JSON: {exc.msg} at line {exc.lineno}.", hint="Fix the file, or pass --from jsonl."
            ) from None
        if not isinstance(data, list):
            raise InvalidInput("a JSON import must be a list of objects.", hint="Wrap the records in [ ].")
        raw: list[tuple[int, Any, str | None]] = [(n, obj, None) for n, obj in enumerate(data, start=1)]
    else:
        raw = []
        for n, line in enumerate(text.split("\n"), start=1):  # JSON Lines breaks lines at LF only
            if not line.strip():
                continue
            try:
                raw.append((n, json.loads(line), None))
            except json.JSONDecodeError as exc:
                raw.append((n, None, f"not valid JSON ({exc.msg})"))
    return from_objects(raw, origin, default_domain=default_domain)


def from_objects(
    raw: list[tuple[int, Any, str | None]], origin: str, *, default_domain: tuple[str, ...] = ()
) -> Batch:
    """A batch from already decoded records: ``(number, object, problem or None)``."""
    records: list[SourceRecord] = []
    synapses: list[Synapse] = []
    for n, obj, problem in raw:
        record = _record(n, obj, problem, default_domain)
        if record.problem is None:
            try:
                synapses += _synapses(obj)
            except (KeyError, TypeError, AttributeError, ValueError):
                record = SourceRecord(record.key, record.where, problem="a synapse in it is not a synapse object")
        records.append(record)
    return Batch("jsonl", origin, tuple(records), tuple(synapses), unit="record")


def _record(n: int, obj: Any, problem: str | None, default_domain: tuple[str, ...]) -> SourceRecord:
    where = f"line {n}"
    if problem is not None:
        return SourceRecord(where, where, problem=problem)
    if not isinstance(obj, Mapping):
        return SourceRecord(where, where, problem="a record must be an object")
    if not isinstance(obj.get("title"), str) or not obj["title"].strip():
        return SourceRecord(where, where, problem="has no title")
    content = obj.get("content", obj.get("body", ""))
    fields: dict[str, Any] = {
        "title": obj["title"],
        "content": content,
        "domain": obj.get("domainTags", obj.get("domain", list(default_domain))),
        "kind": obj.get("kind", "observation"),
        "tags": obj.get("tags", ()),
        "summary": obj.get("summary", ""),
        "importance": obj.get("importance", 0.5),
        "confidence": obj.get("confidence", 0.5),
        "source_type": obj.get("sourceType", "imported"),
        "visibility": obj.get("visibility", "team"),
        "status": obj.get("status", "active"),
        "extra": {k: v for k, v in obj.items() if k not in _FIELDS | set(PRESERVABLE) | _DERIVED},
    }
    if "path" in obj and isinstance(obj["path"], str):
        fields["path"] = obj["path"].removeprefix("private/")
    if "id" in obj:  # an engram item: keep its identity, history and provenance
        fields["preserve"] = {k: obj[k] for k in PRESERVABLE if k in obj}
        fields["source"] = obj.get("source")
        key = str(obj["id"])
    else:
        if obj.get("source") is not None:
            fields["source"] = obj["source"]
        key = "fp:" + fingerprint(str(obj["title"]), content if isinstance(content, str) else "")
    links = obj.get("links") or []
    if not isinstance(links, list) or not all(isinstance(x, Mapping) and "kind" in x and "to" in x for x in links):
        return SourceRecord(key, where, problem="links must be a list of {kind, to} objects")
    return SourceRecord(
        key,
        where,
        fields,
        tuple(Link(str(x["kind"]), str(x["to"]), x.get("evidence"), x.get("weight")) for x in links),
    )


def _synapses(obj: Any) -> list[Synapse]:
    found = obj.get("synapses") if isinstance(obj, Mapping) else None
    if not isinstance(found, list):
        return []
    if not all(isinstance(m, Mapping) and {"id", "from", "to", "kind"} <= m.keys() for m in found):
        raise ValueError("not a synapse")
    return [Synapse.from_meta(meta) for meta in found]
