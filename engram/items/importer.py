"""Bulk import of knowledge from JSON or JSON Lines.

A record is an object with a ``title`` and any of ``content`` (or ``body``), ``domain``
(``"a/b"`` or a list; or ``domainTags``), ``kind``, ``tags``, ``summary``,
``importance``, ``confidence``, ``sourceType``, ``visibility``, ``status`` and
``source``; other keys become extra frontmatter keys. Every record goes through
:func:`~engram.items.writing.create`, so deduplication applies (a record already in the
vault reinforces it instead of being written twice). Each new item's ``source`` records
where it came from (file and line) unless the record gives its own.

All records are parsed and validated before the first write: a file with any bad record
is refused as a whole, with every bad line listed, and the vault is left unchanged.

Encoding (:func:`decode`): JSON is UTF-8. A byte-order mark says which Unicode encoding a
file is in, so UTF-8 and UTF-16 files that start with one are read (PowerShell's ``>``
writes UTF-16 with a mark); UTF-16 without a mark, other encodings and binary files are
refused with an error that names the problem and the fix.
"""

from __future__ import annotations

import codecs
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram.errors import EngramError, InvalidInput, SensitiveData
from engram.items.state import VaultState
from engram.items.writing import CreateResult, admit_new, create
from engram.store import rules
from engram.store.model import new_id, now
from engram.trust import roles

_FIELDS = {
    "title", "content", "body", "domain", "domainTags", "kind", "tags", "summary",
    "importance", "confidence", "sourceType", "visibility", "status", "source",
}


@dataclass(frozen=True, slots=True)
class Record:
    line: int
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ImportReport:
    results: tuple[tuple[int, CreateResult], ...] = field(default_factory=tuple)

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(result.outcome for _, result in self.results)
        return {outcome: counted.get(outcome, 0) for outcome in ("NEW", "DUPLICATE", "UPDATE")}


_ICONV = "iconv -f {enc} -t UTF-8 FILE > FILE.utf8"


def decode(data: bytes) -> str:
    """The text of an import file (see the module docstring). Raises InvalidInput."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise InvalidInput(
                "the file starts with a UTF-16 byte-order mark but is not valid UTF-16.",
                hint="Re-save it as UTF-8.",
            ) from None
    head = data[:4096]
    if b"\x00" in head:
        # JSON text starts with ASCII; UTF-16 puts a NUL beside every ASCII character.
        odd, even = head[1::2], head[0::2]
        if head and (odd.count(0) > len(odd) // 2 or even.count(0) > len(even) // 2):
            enc = "UTF-16LE" if odd.count(0) > even.count(0) else "UTF-16BE"
            raise InvalidInput(
                f"the file looks like {enc} without a byte-order mark; engram imports UTF-8.",
                hint=f"Convert it: {_ICONV.format(enc=enc)}",
            )
        raise InvalidInput(
            "the file is binary (it has NUL bytes), not JSON text.",
            hint="Pass a JSON list or JSON Lines file in UTF-8.",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(
            f"the file is not UTF-8 (byte {exc.start:,}, on line {line}, is 0x{data[exc.start]:02x}).",
            hint="Re-save it as UTF-8 (for a Latin-1 file: " + _ICONV.format(enc="LATIN1") + ").",
        ) from None


def parse_records(text: str, fmt: str = "auto") -> list[Record]:
    """Records from JSON (a list of objects) or JSON Lines (one object per line)."""
    if fmt not in ("auto", "json", "jsonl"):
        raise InvalidInput(f"unknown format {fmt!r}.", hint="Use json, jsonl or auto.")
    stripped = text.lstrip()
    if fmt == "json" or (fmt == "auto" and stripped.startswith("[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"not valid JSON: {exc.msg} at line {exc.lineno}.", hint="Fix the file, or pass --format jsonl."
            ) from None
        if not isinstance(data, list):
            raise InvalidInput("a JSON import must be a list of objects.", hint="Wrap the records in [ ].")
        return [Record(n, obj) for n, obj in enumerate(data, start=1)]
    records = []
    problems = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(Record(n, json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not valid JSON ({exc.msg})")
    if problems:
        raise InvalidInput(_listing(problems), hint="Fix those lines; nothing was imported.")
    return records


def _listing(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:20])
    more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
    return f"{len(problems)} bad record(s): {shown}{more}."


def _create_kwargs(record: Record, origin: str, default_domain: Sequence[str]) -> dict[str, Any]:
    obj = record.fields
    if not isinstance(obj, Mapping):
        raise InvalidInput("a record must be an object", field="record")
    if "title" not in obj:
        raise InvalidInput("has no title", field="title")
    domain = obj.get("domainTags", obj.get("domain", list(default_domain)))
    return {
        "title": obj["title"],
        "content": obj.get("content", obj.get("body", "")),
        "domain": domain,
        "kind": obj.get("kind", "observation"),
        "tags": obj.get("tags", ()),
        "summary": obj.get("summary", ""),
        "importance": obj.get("importance", 0.5),
        "confidence": obj.get("confidence", 0.5),
        "source_type": obj.get("sourceType", "imported"),
        "visibility": obj.get("visibility", "team"),
        "status": obj.get("status", "active"),
        "extra": {k: v for k, v in obj.items() if k not in _FIELDS},
        "source": obj.get("source") or {"file": origin, "line": record.line},
    }


def import_records(
    state: VaultState,
    records: Sequence[Record],
    *,
    origin: str,
    default_domain: Sequence[str] = (),
    dry_run: bool = False,
) -> ImportReport:
    """Validate every record, then create them in order (unless ``dry_run``).

    Validation includes the trust checks create() makes: a record carrying a secret or
    personal data bound for a shared file (with the setting ``refuse``) refuses the whole
    file, every such record listed; instruction-shaped records are imported quarantined.
    """
    with state.refusals_audited("import", origin):
        roles.require_writer(state.actor, state.role, "import items")
    prepared: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    sensitive: list[str] = []
    for record in records:
        try:
            kwargs = _create_kwargs(record, origin, default_domain)
            # Validate exactly as create() will, without writing.
            admit_new(state, rules.build_new(new_id(), **kwargs, actor=state.actor, at=now()))
            prepared.append((record.line, kwargs))
        except SensitiveData as exc:
            problems.append(f"line {record.line}: {'; '.join(exc.findings)}")
            sensitive.append(exc.rule)
        except EngramError as exc:
            problems.append(f"line {record.line}: {exc.message.rstrip('.')}")
    if sensitive:
        with state.refusals_audited("import", origin):
            raise SensitiveData(
                _listing(problems),
                findings=problems,
                rule=",".join(dict.fromkeys(",".join(sensitive).split(","))),
                hint="Remove the secrets and personal data (or import those records with visibility private); "
                "nothing was imported.",
            )
    if problems:
        raise InvalidInput(_listing(problems), hint="Fix those records; nothing was imported.")
    if dry_run:
        return ImportReport()
    results = []
    for line, kwargs in prepared:
        results.append((line, create(state, **kwargs)))
    return ImportReport(tuple(results))
