"""The append-only audit log: one JSON line per write.

Lives at ``.engram/audit.jsonl`` (machine-local: it also records writes to ``private/``
items that never leave the machine; the team-wide history is git's). Each line is
appended with one ``write`` on an ``O_APPEND`` descriptor while the vault lock is held, so
lines from concurrent processes never interleave or overwrite each other.

A line: ``{"at", "actor", "action", "target", "id", "path", "oldVersion", "newVersion",
"fields"}`` — ``target`` is ``item`` or ``synapse``; ``fields`` lists the frontmatter keys
(and ``content``) the write changed; an optional ``note`` says why in words (``learn``
records its verdict there, so every call is accounted for). Readers skip lines they cannot parse rather than
fail: the log is evidence, not state.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from engram.store.fsio import append_line
from engram.store.model import now


@dataclass(frozen=True, slots=True)
class AuditEntry:
    at: str
    actor: str
    action: str
    target: str
    id: str
    path: str | None = None
    old_version: int | None = None
    new_version: int | None = None
    fields: tuple[str, ...] = ()
    note: str | None = None

    def to_json(self) -> str:
        data = {
            "at": self.at,
            "actor": self.actor,
            "action": self.action,
            "target": self.target,
            "id": self.id,
            "path": self.path,
            "oldVersion": self.old_version,
            "newVersion": self.new_version,
            "fields": list(self.fields),
        }
        if self.note is not None:
            data["note"] = self.note
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> AuditEntry:
        data = json.loads(line)
        return cls(
            at=data["at"],
            actor=data.get("actor", ""),
            action=data["action"],
            target=data.get("target", "item"),
            id=data["id"],
            path=data.get("path"),
            old_version=data.get("oldVersion"),
            new_version=data.get("newVersion"),
            fields=tuple(data.get("fields") or ()),
            note=data.get("note"),
        )


class AuditLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def record(
        self,
        actor: str,
        action: str,
        item_id: str,
        *,
        target: str = "item",
        path: str | None = None,
        old_version: int | None = None,
        new_version: int | None = None,
        fields: Sequence[str] = (),
        note: str | None = None,
    ) -> AuditEntry:
        entry = AuditEntry(
            at=now(),
            actor=actor,
            action=action,
            target=target,
            id=item_id,
            path=path,
            old_version=old_version,
            new_version=new_version,
            fields=tuple(fields),
            note=note,
        )
        append_line(self.path, entry.to_json())
        return entry

    def entries(self, item_id: str | None = None) -> Iterator[AuditEntry]:
        """All entries, oldest first (optionally only those about one id)."""
        try:
            handle = self.path.open(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        with handle:
            for line in handle:
                if item_id is not None and item_id not in line:
                    continue
                try:
                    entry = AuditEntry.from_json(line)
                except (ValueError, KeyError, TypeError):
                    continue
                if item_id is None or entry.id == item_id:
                    yield entry
