"""Reading the merge records: ``engram merge stats`` and ``engram merge anomalies``.

The git driver and ``engram sync`` append one JSON line per merged file to
``.engram/merges.jsonl`` (see :mod:`mergedriver.records`). This module only reads them:

- :func:`stats` — how many merges, how many resolved without a person (the *resolve
  rate*: merges git could commit as they were, kept conflicts included, because those are
  flagged in the item rather than blocking), how many kept conflicts, and how often each
  strategy ran;
- :func:`anomalies` — paths that keep conflicting, sides that did not parse, and other
  fallbacks to a text merge: the places where a person (or a fix to a writer) is needed.

Lines that are not valid records are skipped: the log is evidence, not state.
:func:`merge_stats` and :func:`merge_anomalies` are the same two readings of an opened
vault (what :class:`~engram.vault.Vault` exposes).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mergedriver.codec import CodecError, parse_time
from mergedriver.records import LOG_NAME

if TYPE_CHECKING:
    from engram.items.state import VaultState

__all__ = [
    "Anomaly", "MergeStats", "anomalies", "merge_anomalies", "merge_stats", "read_records", "stats",
]


@dataclass(frozen=True, slots=True)
class MergeStats:
    days: int | None
    merges: int = 0
    clean: int = 0
    kept: int = 0
    failed: int = 0
    conflicts_kept: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_via: dict[str, int] = field(default_factory=dict)
    by_strategy: dict[str, int] = field(default_factory=dict)

    @property
    def resolve_rate(self) -> float | None:
        """Share of merges that needed no person to finish (None when there were none)."""
        return (self.merges - self.failed) / self.merges if self.merges else None

    def to_json(self) -> dict[str, Any]:
        return {
            "days": self.days, "merges": self.merges, "clean": self.clean, "kept": self.kept,
            "failed": self.failed, "resolveRate": self.resolve_rate, "conflictsKept": self.conflicts_kept,
            "byKind": self.by_kind, "byVia": self.by_via, "byStrategy": self.by_strategy,
        }


@dataclass(frozen=True, slots=True)
class Anomaly:
    code: str  # conflicts_often | unparseable | different_items | fallback
    path: str
    count: int
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "path": self.path, "count": self.count, "detail": self.detail}


def read_records(state_dir: Path, days: int | None = None) -> Iterator[dict[str, Any]]:
    """Valid records, oldest first; only the last ``days`` days when given."""
    since = datetime.now(UTC) - timedelta(days=days) if days is not None else None
    try:
        handle = (state_dir / LOG_NAME).open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
                at = parse_time(record["at"])
            except (ValueError, KeyError, TypeError, CodecError):
                continue
            if not isinstance(record, dict) or not isinstance(record.get("path"), str):
                continue
            if since is None or at >= since:
                yield record


def stats(state_dir: Path, days: int | None = None) -> MergeStats:
    """Totals over the records of the last ``days`` days (all when None)."""
    kinds: Counter[str] = Counter()
    vias: Counter[str] = Counter()
    strategies: Counter[str] = Counter()
    merges = clean = kept = failed = notes = 0
    for record in read_records(state_dir, days):
        merges += 1
        kinds[str(record.get("kind"))] += 1
        vias[str(record.get("via"))] += 1
        strategies.update(str(s) for s in (record.get("strategies") or {}).values())
        if not record.get("ok"):
            failed += 1
        elif record.get("clean"):
            clean += 1
        else:
            kept += 1
            notes += len(record.get("conflicts") or [])
    return MergeStats(days, merges, clean, kept, failed, notes, dict(kinds), dict(vias), dict(strategies))


def anomalies(state_dir: Path, days: int | None = None, often: int = 3) -> list[Anomaly]:
    """Where merges need people: frequent conflicts (``often`` or more), bad input, fallbacks."""
    conflicted: Counter[str] = Counter()
    failures: dict[tuple[str, str], list[str]] = {}
    for record in read_records(state_dir, days):
        path = record["path"]
        if record.get("ok") and not record.get("clean"):
            conflicted[path] += 1
        if not record.get("ok"):
            reason = str(record.get("reason") or "text conflict")
            failures.setdefault((_failure_code(reason), path), []).append(reason)
    found = [
        Anomaly("conflicts_often", path, n, f"kept conflicts in {n} merges; consider splitting the item")
        for path, n in conflicted.items()
        if n >= often
    ]
    found += [
        Anomaly(code, path, len(reasons), reasons[-1]) for (code, path), reasons in failures.items()
    ]
    return sorted(found, key=lambda a: (-a.count, a.code, a.path))


def merge_stats(state: VaultState, days: int | None = None) -> MergeStats:
    """This clone's merge totals over the last ``days`` days (all when None); see :func:`stats`."""
    return stats(state.state_dir, days)


def merge_anomalies(state: VaultState, days: int | None = None) -> list[Anomaly]:
    """Where this clone's merges needed people; see :func:`anomalies`."""
    return anomalies(state.state_dir, days)


def _failure_code(reason: str) -> str:
    if "is not a valid" in reason:
        return "unparseable"
    if "different items" in reason or "different edges" in reason:
        return "different_items"
    return "fallback"
