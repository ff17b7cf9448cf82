"""Field-by-field three-way merge rules for frontmatter and synapse mappings.

A :class:`FieldMerge` merges one mapping (engram frontmatter, a synapse, an evidence
entry) given the base, ours and theirs values of every key. Each key has a rule; keys
without one follow the generic rule, so keys this version does not know are merged too.

Rules (``b``, ``o``, ``t`` are the base, ours and theirs values; absent is a value):

- every rule starts the same way: ``o == t`` → that value; only one side differs from
  the base → that side's value. The rest applies when both sides changed differently —
  or, for ``counter`` and ``delta``, when both changed at all (two sides that each
  counted 3 retrievals counted 6).
- ``counter``: ``o + t − b`` (an absent base counts as 0; with no base file at all the
  larger value, since nothing can be subtracted), never below 0 for whole counts.
- ``delta``: ``b + Δo + Δt`` clamped to [0, 1] (``unit``) or unclamped (``number``); with
  no base value, the mean of both sides.
- ``later``: the later instant (parsed, so ``…00Z`` equals ``…00.000+00:00``); an absent
  value loses to a present one.
- ``set``: additions and removals from both sides; base survivors keep their order and
  added values follow in sorted order.
- ``immutable``: a change is refused and reported; the base value stays. Without a base
  (both sides created the same id), the earliest ``createdAt`` and its side's author win.
- ``scalar``: the *tie-winner* side's value, recorded as a conflict note naming the value
  that lost (``quiet`` scalars, such as ``updatedBy``, are not noted).
- ``prevails(v)``: a scalar in which the value ``v`` beats any concurrent change, whichever
  side wrote it (``verificationStatus: refuted``); noted like a scalar. Two sides that
  both or neither chose ``v`` follow the scalar rule.
- generic (no rule): mappings merge key by key, lists as sets, timestamps as ``later``,
  anything else as ``scalar``.

The tie-winner is chosen once per document, from the documents themselves and never from
which side is "ours": the side with the later ``updatedAt``, then the side whose bytes
sort last. So fields that belong together (``title`` and ``slug``) come from one side, and
every machine picks the same winner. Every arithmetic step is commutative in ``o`` and
``t``, so the merge is symmetric to the bit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from mergedriver.codec import CodecError, format_time, parse_time

__all__ = ["MISSING", "FieldMerge", "Side", "canonical_key", "merge_sets", "prevails", "tie_winner"]


class _Missing:
    """The value of a key a mapping does not have."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


MISSING: Any = _Missing()

_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


class Side(NamedTuple):
    """Who wrote one side of a merge and when: used for tie-breaking and for labels."""

    at: str
    by: str
    order: bytes  # the side's bytes: the last tie-breaker

    @property
    def label(self) -> str:
        return f"{self.by or 'unknown'} · {self.at or 'unknown time'}"


def tie_winner(ours: Side, theirs: Side) -> bool:
    """True when ours wins ties: the later ``updatedAt``, then the bytes that sort last."""
    return (ours.at, ours.by, ours.order) > (theirs.at, theirs.by, theirs.order)


def canonical_key(value: Any) -> str:
    """A total, type-stable order over values (used for sets and value ties)."""
    if value is MISSING:
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _sort_key(value: Any) -> tuple[int, str]:
    return (0, value) if isinstance(value, str) else (1, canonical_key(value))


def merge_sets(base: Any, ours: Any, theirs: Any) -> Any:
    """Three-way set merge of lists; see the module docstring for the order."""
    b = base if isinstance(base, list) else []
    o = ours if isinstance(ours, list) else []
    t = theirs if isinstance(theirs, list) else []
    b_keys = {canonical_key(v) for v in b}
    kept = b_keys & {canonical_key(v) for v in o} & {canonical_key(v) for v in t}
    out: list[Any] = []
    seen: set[str] = set()
    for value in b:
        key = canonical_key(value)
        if key in kept and key not in seen:
            seen.add(key)
            out.append(value)
    added: dict[str, Any] = {}
    for value in (*o, *t):
        key = canonical_key(value)
        if key not in b_keys and key not in seen:
            added[key] = value
    out.extend(sorted(added.values(), key=_sort_key))
    if not out and (ours is MISSING or theirs is MISSING):
        return MISSING
    return out


def _is_instant(value: Any) -> bool:
    if not isinstance(value, str) or not _INSTANT.match(value):
        return False
    try:
        parse_time(value)
    except CodecError:
        return False
    return True


def _later(o: Any, t: Any) -> Any:
    if o is MISSING or t is MISSING:
        return t if o is MISSING else o
    # Equal instants in different spellings: the canonical spelling, whichever side had it.
    to, tt = parse_time(o), parse_time(t)
    if to == tt:
        return format_time(o) if format_time(o) in (o, t) else min(o, t)
    return o if to > tt else t


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


Rule = Callable[["FieldMerge", str, Any, Any, Any], Any]


class FieldMerge:
    """Merges mappings for one document; collects per-field strategies and conflict notes.

    ``ours_wins`` is :func:`tie_winner` for the document; ``has_base`` is False when the
    document has no common ancestor (both sides created it).
    """

    __slots__ = ("has_base", "notes", "ours_side", "ours_wins", "refused", "strategies", "theirs_side")

    def __init__(self, ours_side: Side, theirs_side: Side, has_base: bool) -> None:
        self.ours_side = ours_side
        self.theirs_side = theirs_side
        self.has_base = has_base
        self.ours_wins = tie_winner(ours_side, theirs_side)
        self.strategies: dict[str, str] = {}
        self.notes: list[str] = []
        self.refused: list[str] = []

    # ------------------------------------------------------------------ mappings

    def mapping(
        self, base: Mapping[str, Any] | None, ours: Mapping[str, Any], theirs: Mapping[str, Any],
        rules: Mapping[str, Rule], prefix: str = "",
    ) -> dict[str, Any]:
        """Merge two mappings against a base, key by key; absent results are dropped."""
        b = base or {}
        out: dict[str, Any] = {}
        for key in sorted({*b, *ours, *theirs}):
            name = prefix + key
            bv, ov, tv = b.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING)
            rule = rules.get(key, FieldMerge.generic)
            if rule is not FieldMerge.immutable and self._trivial(name, bv, ov, tv, rule):
                value = ov if tv == bv else tv
            else:
                value = rule(self, name, bv, ov, tv)
            if value is not MISSING:
                out[key] = value
        return out

    def _trivial(self, name: str, b: Any, o: Any, t: Any, rule: Rule) -> bool:
        """The cases no rule needs: both agree, or only one side changed.

        Counters and deltas do not count agreement: two sides that each added 3 to the
        same count added 6 (identical *files* are caught before any field is looked at).
        """
        if o == t and (rule not in _ADDITIVE or o == b):
            return True
        if o == b or t == b:
            self.strategies[name] = "one-side"
            return True
        return False

    def winner(self, o: Any, t: Any) -> Any:
        return o if self.ours_wins else t

    # ------------------------------------------------------------------ rules

    def generic(self, name: str, b: Any, o: Any, t: Any) -> Any:
        present = [v for v in (b, o, t) if v is not MISSING]
        if all(isinstance(v, dict) for v in present):
            self.strategies[name] = "by-key"
            merged = self.mapping(
                b if b is not MISSING else None,
                o if o is not MISSING else {},
                t if t is not MISSING else {},
                {},
                prefix=name + ".",
            )
            return merged if merged or MISSING not in (o, t) else MISSING
        if all(isinstance(v, list) for v in present):
            return self.as_set(name, b, o, t)
        if o is not MISSING and t is not MISSING and _is_instant(o) and _is_instant(t):
            return self.later(name, b, o, t)
        return self.scalar(name, b, o, t)

    def scalar(self, name: str, b: Any, o: Any, t: Any) -> Any:
        value, lost = (o, t) if self.ours_wins else (t, o)
        side, other = (
            (self.ours_side, self.theirs_side) if self.ours_wins else (self.theirs_side, self.ours_side)
        )
        self.strategies[name] = "tie:later-update"
        self.notes.append(
            f"{name}: both sides changed it; kept {_show(value)} ({side.label}) over "
            f"{_show(lost)} ({other.label})"
        )
        return value

    def quiet(self, name: str, b: Any, o: Any, t: Any) -> Any:
        self.strategies[name] = "tie:later-update"
        return self.winner(o, t)

    def later(self, name: str, b: Any, o: Any, t: Any) -> Any:
        self.strategies[name] = "later"
        return _later(o, t)

    def as_set(self, name: str, b: Any, o: Any, t: Any) -> Any:
        self.strategies[name] = "set"
        return merge_sets(b, o, t)

    def counter(self, name: str, b: Any, o: Any, t: Any) -> Any:
        no, nt = _number(o if o is not MISSING else 0), _number(t if t is not MISSING else 0)
        nb = _number(b if b is not MISSING else 0)
        if no is None or nt is None or nb is None:
            return self.scalar(name, b, o, t)
        if not self.has_base:
            self.strategies[name] = "max"
            total = max(no, nt)
        else:
            self.strategies[name] = "add"
            total = (no + nt) - nb
        if all(isinstance(v, int) for v in (o, t) if v is not MISSING):
            return max(0, round(total))
        return round(total, 6) + 0.0

    def unit(self, name: str, b: Any, o: Any, t: Any) -> Any:
        return self._delta(name, b, o, t, clamp=True)

    def delta(self, name: str, b: Any, o: Any, t: Any) -> Any:
        return self._delta(name, b, o, t, clamp=False)

    def _delta(self, name: str, b: Any, o: Any, t: Any, *, clamp: bool) -> Any:
        no, nt, nb = _number(o), _number(t), _number(b)
        if no is None or nt is None:
            return self.scalar(name, b, o, t)
        if nb is None:
            self.strategies[name] = "mean"
            value = (no + nt) / 2
        else:
            self.strategies[name] = "add-deltas"
            value = nb + ((no - nb) + (nt - nb))
        if clamp:
            value = min(1.0, max(0.0, value))
        return round(value, 6) + 0.0

    def immutable(self, name: str, b: Any, o: Any, t: Any) -> Any:
        if o == t:
            return o
        if b is MISSING:
            # Both sides created the item: the earliest creation is the creation.
            self.strategies[name] = "earliest"
            return self._earliest_creation(name, o, t)
        self.strategies[name] = "immutable"
        changed = sorted({canonical_key(v) for v in (o, t) if v != b})
        note = f"{name}: must not change; kept {_show(b)} (a side had {', '.join(changed)})"
        self.notes.append(note)
        self.refused.append(name)
        return b

    def _earliest_creation(self, name: str, o: Any, t: Any) -> Any:
        if o is MISSING or t is MISSING:
            return t if o is MISSING else o
        if _is_instant(o) and _is_instant(t):
            return o if parse_time(o) < parse_time(t) else t if parse_time(t) < parse_time(o) else min(o, t)
        return self.winner(o, t)


_ADDITIVE: tuple[Rule, ...] = (FieldMerge.counter, FieldMerge.unit, FieldMerge.delta)


def prevails(value: Any, why: str) -> Rule:
    """A scalar rule in which ``value`` wins over a concurrent change (see the module
    docstring); it depends on the values only, so it is symmetric in ``o`` and ``t``."""

    def rule(fm: FieldMerge, name: str, b: Any, o: Any, t: Any) -> Any:
        if (o == value) == (t == value):
            return fm.scalar(name, b, o, t)
        kept, lost = (o, t) if o == value else (t, o)
        fm.strategies[name] = "prevails"
        fm.notes.append(f"{name}: both sides changed it; kept {_show(kept)} over {_show(lost)} ({why})")
        return kept

    return rule


def _show(value: Any) -> str:
    if value is MISSING:
        return "nothing (removed)"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
