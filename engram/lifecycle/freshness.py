"""Freshness and verification: knowledge ages, evidence re-verifies it, staleness is reported.

Freshness is ``2^(−age / halfLife)``, the age counted from ``lastVerifiedAt`` (else the
creation). The half-life depends on the kind (``lifecycle.halfLifeDays``: a fact ages
faster than a pattern), grows with importance (``× (0.5 + importance)``: what matters
is re-checked less often only if it is also confirmed), and shrinks for facts that name
versions (``× versionHalfLifeFactor``: "uses Node 18.19" goes stale first).

Verification states move only on evidence, each move an event in the item's
``verifications`` list (``at``, ``by``, ``from``, ``to``, ``note``). The ladder is
Co-Engram's — unverified → plausible → probable → verified — with ``refuted`` beside it:

======================== ============================================================
``upgrade_verification`` one step up: unverified → plausible → probable → verified;
                         stale → plausible
``verify_entry``         someone checked it still holds: ``lastVerifiedAt`` = now,
                         → verified (also from refuted: the one way back)
``refute``               evidence shows it false: → refuted, the evidence the event's note
``mark_verification``    the state an accepted ``verify``/``stale`` proposal names
======================== ============================================================

A refuted item is kept, text and status unchanged: it records what was found false, so
the next agent who meets the claim reads that it was refuted and why. Nothing lifts it
but a new check — ``verify_entry``, by someone who looked again — never a step of
``upgrade_verification`` nor a proposal written before the refutation (the evidence that
it held is what the refutation overturned). ``disputed`` items move only through
``contradiction_resolve``. Nothing here changes an
item on its own: :func:`stale_report` *reports* items past their half-life (shared items,
oldest-verified first, with their ``validWhile`` premises) and maintenance may *propose*
``stale``; an item is never silently downgraded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.items import writing
from engram.items.state import VaultState
from engram.lifecycle.settings import LifecycleSettings, lifecycle_settings
from engram.store import rules
from engram.store.model import Engram, instant, now

_DAY = 86_400.0
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\b|\bversion\s+\d+", re.IGNORECASE)
#: What every _VERSION match contains; a plain scan for it is several times faster than
#: the pattern, and most notes name no version (the report scans every shared item).
_VERSION_HINT = re.compile(r"\d\.\d|[Vv][Ee][Rr][Ss][Ii][Oo][Nn]")
UPGRADE = {"unverified": "plausible", "plausible": "probable", "probable": "verified", "stale": "plausible",
           "verified": "verified"}
#: What mark_verification may set: the ladder and stale (refuted only through refute).
MARKABLE = ("unverified", "plausible", "probable", "verified", "stale")


def half_life_days(item: Engram, settings: LifecycleSettings) -> float:
    """The item's freshness half-life in days (see the module docstring)."""
    base = float(settings.half_life_days.get(item.kind, settings.half_life_days.get("observation", 60.0)))
    days = base * (0.5 + item.importance)
    text = f"{item.title}\n{item.content}"
    if _VERSION_HINT.search(text) and _VERSION.search(text):
        days *= settings.version_half_life_factor
    return round(max(days, 1.0), 3)


def freshness(
    item: Engram, settings: LifecycleSettings, at: str | None = None, half_life: float | None = None
) -> tuple[float, float]:
    """(freshness 0–1, age in days since last verified or created); ``half_life`` if the
    caller has it already."""
    since = item.last_verified_at or item.created_at or item.updated_at
    if not since:
        return 1.0, 0.0
    age = max(0.0, (instant(at or now()) - instant(since)).total_seconds() / _DAY)
    return round(0.5 ** (age / (half_life or half_life_days(item, settings))), 4), round(age, 2)


@dataclass(frozen=True, slots=True)
class StaleEntry:
    id: str
    title: str
    path: str | None
    kind: str
    visibility: str
    verification_status: str
    last_verified_at: str | None
    age_days: float
    half_life_days: float
    freshness: float
    stale: bool
    premises: Any  # validWhile, as written

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "path": self.path, "kind": self.kind,
                "visibility": self.visibility, "verificationStatus": self.verification_status,
                "lastVerifiedAt": self.last_verified_at, "ageDays": self.age_days,
                "halfLifeDays": self.half_life_days, "freshness": self.freshness, "stale": self.stale,
                "validWhile": self.premises}


@dataclass(frozen=True, slots=True)
class StaleReport:
    threshold: float
    entries: tuple[StaleEntry, ...]
    checked: int

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "checked": self.checked,
                "entries": [e.to_json() for e in self.entries]}


def stale_report(
    state: VaultState, *, include_fresh: bool = False, limit: int | None = None, at: str | None = None
) -> StaleReport:
    """Shared (team, org) active items, oldest-verified first, with freshness and premises.

    Only stale ones (below ``lifecycle.staleBelow``, or marked ``stale``) unless
    ``include_fresh``; never refuted ones. Reports; changes nothing.
    """
    if limit is not None and limit < 1:  # a slice would drop the oldest entry (-1) or none (0)
        raise InvalidInput(f"limit must be at least 1, not {limit!r}.", field="limit",
                           hint="Leave it out to list every stale item.")
    settings = lifecycle_settings(state)
    state.ensure_fresh()
    items = state.index.items("visibility IN ('team', 'org') AND status = 'active'")
    at = at or now()  # one instant for the whole report
    entries: list[StaleEntry] = []
    for item in items:
        if item.verification_status == "refuted":
            continue  # known false: nothing to re-check until someone looks again (verify_entry)
        days = half_life_days(item, settings)
        score, age = freshness(item, settings, at, days)
        stale = score < settings.stale_below or item.verification_status == "stale"
        if stale or include_fresh:
            entries.append(StaleEntry(
                item.id, item.title, item.path, item.kind, item.visibility, item.verification_status,
                item.last_verified_at, age, days, score, stale, item.valid_while,
            ))
    entries.sort(key=lambda e: (-e.age_days, e.id))  # the longest since verified (or created) first
    return StaleReport(settings.stale_below, tuple(entries[:limit] if limit else entries), len(items))


def _event(item: Engram, to: str, by: str, note: str | None) -> list[dict[str, Any]]:
    event: dict[str, Any] = {"at": now(), "by": by, "from": item.verification_status, "to": to}
    if note:
        event["note"] = note
    return [*(dict(v) for v in item.verifications or ()), event]


def _current(state: VaultState, ref: str) -> Engram:
    state.ensure_fresh()
    return state.read(state.resolve(ref))[0]


def _note(note: str | None) -> str | None:
    return rules.text("note", note, rules.MAX_SUMMARY_CHARS) or None if note is not None else None


def _evidence(evidence: str, hint: str) -> str:
    text = _note(evidence)
    if not text:
        raise InvalidInput("evidence is empty.", field="evidence", hint=hint)
    return text


def _not_disputed(item: Engram) -> None:
    if item.verification_status == "disputed":
        raise InvalidInput(
            f"{item.id} is disputed: a contradiction must be resolved first.",
            hint=f"`engram resolve {item.id} OTHER --keep new|old|merge|archive`.",
        )


def _not_refuted(item: Engram) -> None:
    if item.verification_status == "refuted":
        found = [v for v in item.verifications or () if isinstance(v, dict) and v.get("to") == "refuted"]
        why = f" ({found[-1].get('note')})" if found and found[-1].get("note") else ""
        raise InvalidInput(
            f"{item.id} was refuted{why}: evidence that it held is what the refutation overturned.",
            hint=f"If you checked it again and it holds, `engram verify {item.id} --note WHAT-YOU-CHECKED` "
            "(verify_entry) reinstates it as verified.",
        )


def upgrade_verification(state: VaultState, ref: str, evidence: str) -> Engram:
    """One verification step up on ``evidence`` (see the module docstring). Raises
    InvalidInput (no evidence; a disputed or refuted item), NotFound."""
    evidence_text = _evidence(evidence, "Say what shows it holds.")
    with state.lock.hold():
        item = _current(state, ref)
        _not_disputed(item)
        _not_refuted(item)
        to = UPGRADE.get(item.verification_status, "plausible")
        changes: dict[str, Any] = {"verification_status": to, "verifications": _event(item, to, state.actor, evidence_text)}
        if to == "verified":
            changes["last_verified_at"] = now()
        return writing.update(state, item.id, changes, expected_version=item.version)


def verify_entry(state: VaultState, ref: str, note: str | None = None, *, valid_while: Any = None) -> Engram:
    """Someone checked that the item still holds: stamp ``lastVerifiedAt``, → verified;
    ``valid_while`` records the premise it holds under."""
    text = _note(note)
    with state.lock.hold():
        item = _current(state, ref)
        _not_disputed(item)
        changes: dict[str, Any] = {
            "last_verified_at": now(), "verification_status": "verified",
            "verifications": _event(item, "verified", state.actor, text or "checked: still holds"),
        }
        if valid_while is not None:
            changes["valid_while"] = valid_while
        return writing.update(state, item.id, changes, expected_version=item.version)


def refute(state: VaultState, ref: str, evidence: str) -> Engram:
    """Record that ``evidence`` shows the item false: → refuted, the item and its text kept
    (see the module docstring). Raises InvalidInput (no evidence; a disputed item), NotFound."""
    evidence_text = _evidence(evidence, "Say what shows it is false, e.g. 'the bucket deletes logs after 7 days'.")
    with state.lock.hold():
        item = _current(state, ref)
        _not_disputed(item)
        changes: dict[str, Any] = {"verification_status": "refuted",
                                   "verifications": _event(item, "refuted", state.actor, evidence_text)}
        return writing.update(state, item.id, changes, expected_version=item.version)


def mark_verification(state: VaultState, ref: str, to: str, note: str | None = None) -> Engram:
    """Set a verification state with an event (used by accepted ``verify``/``stale``
    proposals). Raises InvalidInput for a refuted item (see the module docstring)."""
    rules.choice("verificationStatus", to, MARKABLE)
    with state.lock.hold():
        item = _current(state, ref)
        if item.verification_status == to:
            return item
        _not_refuted(item)
        changes: dict[str, Any] = {"verification_status": to, "verifications": _event(item, to, state.actor, _note(note))}
        return writing.update(state, item.id, changes, expected_version=item.version)
