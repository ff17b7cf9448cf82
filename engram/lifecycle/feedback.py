"""Feedback: an item helped or failed; importance moves, neighbours share, failures propose.

A feedback call computes and explains every change at once — the item's importance
step, its counters, each neighbour's Hebbian share — and journals them to
``.engram/feedback.jsonl`` (machine-local); it never rewrites Markdown on the spot, so
feedback does not race writers or dirty the git tree. :func:`fold` (``engram flush``,
``engram maintain light``, and ``engram sync`` before it commits) folds the usage
journal and this one into frontmatter in one batch, under the vault lock, without a
version bump: these are counters and the merge driver adds them across machines
(``importance`` adds both sides' deltas). A note its owner has not adopted keeps them
beside it instead (:mod:`engram.items.sidecar`), never in the note.

The step, for feedback with confidence ``c`` (0–1, the caller's certainty or measured
effectiveness) and the lifecycle ``feedbackStep`` ``s``:

- helped: ``+s·c·(1 − importance)``; failed: ``−s·c·importance``. So one call moves
  importance by at most ``s``, and it approaches 0 and 1 without reaching them.
- neighbours along edges of weight ≥ ``strongEdge`` (never ``contradicts`` or
  ``supersedes``) get ``hebbianShare × weight`` of the item's step, on success only
  unless ``shareFailures`` is set: one failure says little about what an item links to.
- counters: ``effectiveRetrievals`` or ``failedUses`` + 1; ``lastEffectiveAt`` or
  ``lastFailedAt``. For a skill these are its success and failure counts.

The failure path: once an active item has failed ``archiveAfterFailures`` times and more
often than it helped, an ``archive`` proposal is written; a frozen item that keeps failing
(``forgetAfterFailures``) gets a ``forget`` proposal. Nothing changes status unasked.

Journal lines are appended under the vault lock; a fold moves the journal aside, folds
it, and records each folded id in ``feedback.flushing.done`` so an interrupted fold
resumes without counting anything twice.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engram.errors import FormatError, InvalidInput
from engram.items import sidecar
from engram.items.repair import rewrite_item
from engram.items.state import VaultState
from engram.lifecycle import proposals
from engram.lifecycle.settings import LifecycleSettings, lifecycle_settings
from engram.recall.usage import FlushStats
from engram.recall.usage import flush as flush_usage
from engram.store import rules
from engram.store.fsio import append_line
from engram.store.model import Engram, instant, now
from mergedriver.codec import CodecError, format_time

JOURNAL = "feedback.jsonl"
FLUSHING = "feedback.flushing.jsonl"
DONE = "feedback.flushing.done"
Outcome = Literal["helped", "failed"]
#: Edges that never carry a Hebbian share: disagreement and succession are not support.
UNSHARED = frozenset({"contradicts", "supersedes"})


@dataclass(frozen=True, slots=True)
class Change:
    """One journaled change to one item, and why."""

    id: str
    title: str
    importance_before: float
    importance_delta: float
    effective: int = 0
    failed: int = 0
    via: str | None = None  # the synapse id a Hebbian share came along
    why: str = ""

    @property
    def importance_after(self) -> float:
        return round(min(1.0, max(0.0, self.importance_before + self.importance_delta)), 6)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "importanceBefore": self.importance_before,
            "importanceDelta": self.importance_delta, "importanceAfter": self.importance_after,
            "effective": self.effective, "failed": self.failed, "via": self.via, "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    id: str
    outcome: Outcome
    confidence: float
    changes: tuple[Change, ...]
    proposals: tuple[str, ...] = ()
    success_rate: float | None = None  # skills: (successes + 1) / (uses + 2)
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "outcome": self.outcome, "confidence": self.confidence,
            "changes": [c.to_json() for c in self.changes], "proposals": list(self.proposals),
            "successRate": self.success_rate, "pending": True, "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Pending:
    """Feedback journaled for one item and not yet folded."""

    importance: float = 0.0
    effective: int = 0
    failed: int = 0
    last_effective: str | None = None
    last_failed: str | None = None


@dataclass(frozen=True, slots=True)
class FoldStats:
    usage: FlushStats
    items: int = 0
    feedback: int = 0
    missing: int = 0
    details: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "retrievals": {"items": self.usage.items, "retrievals": self.usage.retrievals,
                           "missing": self.usage.missing},
            "feedback": {"items": self.items, "entries": self.feedback, "missing": self.missing},
        }


def _read_lines(path: os.PathLike[str] | str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn or foreign line
            if isinstance(entry, dict) and isinstance(entry.get("changes"), list):
                entry["at"] = _stamp(entry.get("at"))
                out.append(entry)
    return out


def _stamp(value: Any) -> str:
    """An entry's time in canonical form, or "" when it is not one: the counts of a
    line with a bad stamp still fold, but its stamp must not reach (and break) the file."""
    try:
        return format_time(str(value)) if value else ""
    except CodecError:
        return ""


def _aggregate(entries: list[dict[str, Any]]) -> dict[str, Pending]:
    agg: dict[str, Pending] = {}
    for entry in entries:
        at = str(entry.get("at", ""))
        for change in entry["changes"]:
            try:
                item_id = str(change["id"])
                delta = float(change.get("importance", 0.0))
                eff, fail = int(change.get("effective", 0)), int(change.get("failed", 0))
            except (KeyError, TypeError, ValueError):
                continue
            old = agg.get(item_id, Pending())
            agg[item_id] = Pending(
                round(old.importance + delta, 6), old.effective + eff, old.failed + fail,
                max(filter(None, (old.last_effective, at if eff else None)), default=None),
                max(filter(None, (old.last_failed, at if fail else None)), default=None),
            )
    return agg


def pending(state: VaultState) -> dict[str, Pending]:
    """Unfolded feedback by item id (both the journal and an interrupted fold's file)."""
    entries = _read_lines(state.state_dir / FLUSHING) + _read_lines(state.state_dir / JOURNAL)
    return _aggregate(entries)


def feedback(
    state: VaultState,
    ref: str,
    outcome: str,
    *,
    confidence: float = 1.0,
    note: str | None = None,
) -> FeedbackResult:
    """Record that the item helped or failed (see the module docstring); every change is
    explained in the result and applied at the next fold. Raises NotFound, InvalidInput."""
    if outcome not in ("helped", "failed"):
        raise InvalidInput(f"outcome must be helped or failed, not {outcome!r}.", field="outcome",
                           hint="Use helped (it worked) or failed (it did not).")
    confidence = rules.unit("confidence", confidence)
    if note is not None:
        note = rules.text("note", note, rules.MAX_SUMMARY_CHARS) or None
    settings = lifecycle_settings(state)
    with state.lock.hold():
        state.ensure_fresh()
        item = state.read(state.resolve(ref))[0]
        waiting = pending(state)
        changes = _changes(state, item, outcome, confidence, settings, waiting)  # type: ignore[arg-type]
        stamp = now()
        entry = {
            "at": stamp, "by": state.actor, "id": item.id, "outcome": outcome,
            "confidence": confidence, "note": note,
            "changes": [
                {"id": c.id, "importance": c.importance_delta, "effective": c.effective,
                 "failed": c.failed, "via": c.via}
                for c in changes
            ],
        }
        append_line(state.state_dir / JOURNAL, json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        state.audit.record(state.actor, "feedback", item.id, path=item.path, note=f"{outcome} ({confidence:g})"
                           + (f": {note}" if note else ""))
        mine = waiting.get(item.id, Pending())
        successes = item.effective_retrievals + mine.effective + changes[0].effective
        failures = item.failed_uses + mine.failed + changes[0].failed
        made = _failure_path(state, item, successes, failures, settings) if outcome == "failed" else ()
    rate = round((successes + 1) / (successes + failures + 2), 4) if item.kind == "skill" else None
    return FeedbackResult(
        item.id, outcome, confidence, tuple(changes), made, rate, _message(item, changes, made, rate)  # type: ignore[arg-type]
    )


def _changes(
    state: VaultState, item: Engram, outcome: Outcome, confidence: float,
    settings: LifecycleSettings, waiting: Mapping[str, Pending],
) -> list[Change]:
    before = round(min(1.0, max(0.0, item.importance + waiting.get(item.id, Pending()).importance)), 6)
    step = settings.feedback_step * confidence
    delta = round(step * (1 - before) if outcome == "helped" else -step * before, 6)
    how = f"{'+' if outcome == 'helped' else '−'}{settings.feedback_step:g} step × confidence {confidence:g}"
    how += f" × {'room left' if outcome == 'helped' else 'importance'} {(1 - before) if outcome == 'helped' else before:.2f}"
    out = [Change(item.id, item.title, before, delta, int(outcome == "helped"), int(outcome == "failed"), None, how)]
    if outcome == "failed" and not settings.share_failures:
        return out
    if delta == 0:
        return out
    for edge in sorted(state.incident(item.id), key=lambda e: e.id):
        if edge.kind in UNSHARED or edge.weight < settings.strong_edge:
            continue
        other = edge.other(item.id)
        rows = state.index.items("id = ?", (other,))
        if not rows or other == item.id:
            continue
        neighbour = rows[0]
        n_before = round(min(1.0, max(0.0, neighbour.importance + waiting.get(other, Pending()).importance)), 6)
        share = round(delta * settings.hebbian_share * edge.weight, 6)
        share = min(share, round(1 - n_before, 6)) if share > 0 else max(share, -n_before)
        if share == 0:
            continue
        out.append(Change(
            other, neighbour.title, n_before, share, 0, 0, edge.id,
            f"Hebbian share {settings.hebbian_share:g} × {edge.kind} weight {edge.weight:g} of {delta:+.4f}",
        ))
    return out


def _failure_path(
    state: VaultState, item: Engram, successes: int, failures: int, settings: LifecycleSettings
) -> tuple[str, ...]:
    if item.status == "active" and failures >= settings.archive_after_failures and failures > successes:
        made, _ = proposals.propose(
            state, "archive", [item.id], title=f"Archive {item.title!r}",
            reason=f"failed {failures} time(s), helped {successes}: freeze it (out of default recall,"
            " restorable)", payload={"status": "frozen"}, score=failures / (failures + successes),
        )
        return (made.id,)
    if item.status == "frozen" and failures >= settings.forget_after_failures:
        made, _ = proposals.propose(
            state, "forget", [item.id], title=f"Forget {item.title!r}",
            reason=f"frozen and still failing ({failures} failures): forget it (restorable until purged)",
            payload={"status": "forgotten"}, score=failures / (failures + successes),
        )
        return (made.id,)
    return ()


def _message(item: Engram, changes: list[Change], made: tuple[str, ...], rate: float | None) -> str:
    head = changes[0]
    text = (
        f"{item.id}: importance {head.importance_before:.3f} → {head.importance_after:.3f} ({head.why}); "
        + ("effectiveRetrievals + 1" if head.effective else "failedUses + 1")
    )
    shared = [c for c in changes[1:]]
    if shared:
        text += "; neighbours: " + ", ".join(f"{c.id} {c.importance_delta:+.4f}" for c in shared)
    if rate is not None:
        text += f"; success rate now {rate:.0%}"
    if made:
        text += f"; proposed: {', '.join(made)} (see `engram proposals`)"
    return text + ". Applied at the next fold (`engram flush`, `engram sync`)."


# ---------------------------------------------------------------------- folding


def fold(state: VaultState) -> FoldStats:
    """Fold the usage journal and the feedback journal into frontmatter in one batch."""
    with state.lock.hold():
        usage = flush_usage(state)
        flushing = state.state_dir / FLUSHING
        journal = state.state_dir / JOURNAL
        if journal.exists():
            if flushing.exists():  # an interrupted fold: fold both
                with open(journal, "rb") as src, open(flushing, "ab") as dst:
                    dst.write(src.read())
                journal.unlink()
            else:
                os.replace(journal, flushing)
        entries = _read_lines(flushing)
        agg = _aggregate(entries)
        done_file = state.state_dir / DONE
        done: set[str] = set()
        with contextlib.suppress(FileNotFoundError):
            done = set(done_file.read_text(encoding="utf-8").split())
        items = missing = 0
        for item_id, change in sorted(agg.items()):
            if item_id in done:
                continue
            rows = state.index.item_rows("id = ?", (item_id,))
            if not rows:
                missing += 1
            if any(row.by_person for row in rows):
                # A person's note: the feedback is kept beside it.
                sidecar.add(state.state_dir, item_id, sidecar.Kept(
                    effective=change.effective, failed=change.failed, importance=change.importance,
                    last_effective=change.last_effective, last_failed=change.last_failed,
                ))
                items += 1
                rows = []
            for row in rows:
                try:
                    item, _ = state.read(row.path)
                except (FileNotFoundError, FormatError):
                    continue
                rewrite_item(state, row.path, record=False, **_applied(item, change))
                items += 1
            append_line(done_file, item_id)
        for path in (flushing, done_file):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return FoldStats(usage, items, len(entries), missing)


def _applied(item: Engram, change: Pending) -> dict[str, Any]:
    out: dict[str, Any] = {
        "importance": round(min(1.0, max(0.0, item.importance + change.importance)), 6),
        "effective_retrievals": item.effective_retrievals + change.effective,
        "failed_uses": item.failed_uses + change.failed,
    }
    for attr, stamp in (("last_effective_at", change.last_effective), ("last_failed_at", change.last_failed)):
        current = getattr(item, attr)
        if stamp and (current is None or instant(stamp) > instant(current)):
            out[attr] = stamp
    return out
