"""The append-only audit log: one JSON line per write.

Lives at ``.engram/audit.jsonl`` (machine-local: it also records writes to ``private/``
items that never leave the machine; the team-wide history is git's). Each line is
appended with one ``write`` on an ``O_APPEND`` descriptor while the vault lock is held, so
lines from concurrent processes never interleave or overwrite each other.

A line: ``{"at", "actor", "action", "target", "id", "path", "oldVersion", "newVersion",
"fields"}`` — ``target`` is ``item`` or ``synapse``; ``fields`` lists the frontmatter keys
(and ``content``) the write changed; an optional ``note`` says why in words (``learn``
records its verdict there, so every call is accounted for). Lines about trust add
``outcome`` (``refused`` for a write that was refused: a role, a secret, a version
conflict), ``rule`` (the rule that fired, e.g. ``role.others-item``,
``secret.aws-access-key``, ``screen.override-instructions``) and ``reason`` (a sentence;
never a secret's value). Readers skip lines they cannot parse rather than fail: the log
is evidence, not state.

:meth:`AuditLog.latest` pages through the log newest first by reading blocks from the
end of the file, so showing the last page of a long log costs that page, not the log.
:meth:`AuditLog.query` filters by actor, item, time and refusals (``engram audit``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from engram.store.fsio import append_line
from engram.store.model import now

_BLOCK = 64 * 1024  # read the log backwards this much at a time


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
    outcome: str | None = None  # "refused" for a refused write
    rule: str | None = None
    reason: str | None = None

    @property
    def refused(self) -> bool:
        return self.outcome == "refused"

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
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
        for key, value in (("note", self.note), ("outcome", self.outcome), ("rule", self.rule),
                           ("reason", self.reason)):
            if value is not None:
                data[key] = value
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

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
            outcome=data.get("outcome"),
            rule=data.get("rule"),
            reason=data.get("reason"),
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
        outcome: str | None = None,
        rule: str | None = None,
        reason: str | None = None,
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
            outcome=outcome,
            rule=rule,
            reason=reason,
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

    def query(
        self,
        *,
        actor: str | None = None,
        item_id: str | None = None,
        since: str | None = None,
        refused: bool = False,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        """Entries that match every given filter, oldest first (the newest ``limit``).

        ``since`` is a canonical timestamp; entries at or after it are kept (timestamps
        in the log are canonical, so they compare as strings). With a ``limit`` the log
        is read from its end (:meth:`latest`), so the newest entries cost what they are.
        """

        def keep(e: AuditEntry) -> bool:
            return (
                (item_id is None or e.id == item_id)
                and (actor is None or e.actor == actor)
                and (since is None or e.at >= since)
                and (not refused or e.refused)
            )

        if limit:
            return self.latest(limit, keep=keep)[::-1]
        return [e for e in self.entries(item_id) if keep(e)]

    def latest(
        self,
        limit: int,
        *,
        offset: int = 0,
        keep: Callable[[AuditEntry], bool] | None = None,
    ) -> list[AuditEntry]:
        """Up to ``limit`` entries, newest first, skipping the ``offset`` newest ones that
        ``keep`` accepts (all when ``keep`` is None)."""
        found: list[AuditEntry] = []
        skipped = 0
        for line in self._lines_backwards():
            try:
                entry = AuditEntry.from_json(line)
            except (ValueError, KeyError, TypeError):
                continue
            if keep is not None and not keep(entry):
                continue
            if skipped < offset:
                skipped += 1
                continue
            found.append(entry)
            if len(found) >= limit:
                break
        return found

    def _lines_backwards(self) -> Iterator[str]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return
        with handle:
            end = handle.seek(0, 2)
            tail = b""
            while end > 0:
                start = max(0, end - _BLOCK)
                handle.seek(start)
                chunk = handle.read(end - start) + tail
                end = start
                lines = chunk.split(b"\n")
                tail = lines.pop(0) if start > 0 else b""  # may be cut: finish it next round
                for raw in reversed(lines):
                    if raw.strip():
                        yield raw.decode("utf-8", errors="replace")
