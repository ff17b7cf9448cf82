"""Merge laws for every frontmatter field the lifecycle layer writes, field by field.

``tests/mergedriver/test_merge_laws.py`` checks the laws on whole items; this file pins
each lifecycle field to the rule ``docs/merge.md`` promises for it, against an oracle
written from that table, on generated (base, ours, theirs) triples in which every
lifecycle field may be absent, kept, changed or removed on each side:

=========================================== ======================================
``provenance``, ``verifications``,          set: additions and removals of both
``preconditions``                           sides; nothing either side added is lost
``steps``, ``composedOf``, ``situation``,  one value (the tie rule); the losing value
``status``, ``verificationStatus``          is written into ``mergeConflicts``
``verificationStatus`` refuted on one side  refuted, whichever side is the tie-winner;
and changed otherwise on the other          the losing value noted the same way
``supersededBy``                            one side's value, never flagged
``effectiveRetrievals``, ``failedUses``,    counters: ``o + t − b``
``reinforcementScore``
``lastEffectiveAt``, ``lastFailedAt``,      the later instant
``lastVerifiedAt``, ``activatedAt``,
``deactivatedAt``
``importance``                              both deltas added, clamped to 0–1
``validWhile``                              by shape: text by the tie rule, lists as sets
=========================================== ======================================

Every law also holds with the sides swapped (byte for byte) and on a second run, and
the merged file is one engram can load (:func:`engram.store.format.parse_engram`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.format import parse_engram as load_engram
from mergedriver import codec
from mergedriver.fields import MISSING, canonical_key
from mergedriver.merge import CONFLICTS_KEY, merge_file
from tests.merge_helpers import (
    AUTHORS,
    PRECONDITIONS,
    PROVENANCE,
    STEPS,
    VERIFICATIONS,
    engram,
    meta,
)

EXAMPLES = int(os.environ.get("ENGRAM_LAW_EXAMPLES", "150"))
LAWS = settings(max_examples=EXAMPLES)
#: The cheaper laws need fewer examples to cover the same edits.
LIGHT = settings(max_examples=max(10, EXAMPLES // 3))
PATH = "engineering/python/copying-a-frozen-dataclass.md"

#: Instants in more than one spelling: ``later`` compares instants, not strings.
STAMPS = (
    "2026-06-22T10:00:00.000Z", "2026-06-22T10:00:00Z", "2026-06-22T11:30:00.000Z",
    "2026-06-23T09:00:00.000+02:00", "2026-06-24T00:00:00.000Z", "2025-12-31T23:59:59.999Z",
)
SUCCESSORS = ("01J8ZQ7TRY9F8G7H6J5K4L3M2N", "01J8ZQ7TRY9F8G7H6J5K4L3M2P", "01J8ZQ7TRY9F8G7H6J5K4L3M2Q")
#: Composed skills' component lists: orders matter, so a reordering is a change.
COMPONENTS = (
    ("01J8ZQ7TRY9F8G7H6J5K4L3M2N",), ("01J8ZQ7TRY9F8G7H6J5K4L3M2N", "01J8ZQ7TRY9F8G7H6J5K4L3M2P"),
    ("01J8ZQ7TRY9F8G7H6J5K4L3M2P", "01J8ZQ7TRY9F8G7H6J5K4L3M2N"), ("01J8ZQ7TRY9F8G7H6J5K4L3M2Q",),
)
SITUATIONS = ("deploying to staging", "on a cold cache", "während einer Migration", "crème brûlée day")
PREMISES: tuple[Any, ...] = (
    "while CI runs on the old image", "until the 2027 audit",
    ["CI on ubuntu-22.04", "Postgres 15"], ["Postgres 15"], ["Postgres 16", "pgbouncer 1.22"],
)
MORE_PROVENANCE = (
    {"action": "learned", "by": "alice", "at": "2026-06-22T09:00:00.000Z"},
    {"action": "supersede", "id": "01J8ZQ3K5P7R2V8Y3M4N6ZH0WD", "title": "Old «port» note", "version": 4,
     "by": "bob", "at": "2026-06-22T09:30:00.000Z", "why": "port: 5432 → 6432"},
)

SET_FIELDS = {
    "provenance": st.lists(st.sampled_from((*PROVENANCE, *MORE_PROVENANCE)), unique_by=canonical_key, max_size=4),
    "verifications": st.lists(st.sampled_from(VERIFICATIONS), unique_by=canonical_key, max_size=3),
    "preconditions": st.lists(st.sampled_from((*PRECONDITIONS, "the CA is reachable")), unique=True, max_size=4),
}
SCALAR_FIELDS = {
    "steps": st.sampled_from(STEPS).map(list),
    "composedOf": st.sampled_from(COMPONENTS).map(list),
    "situation": st.sampled_from(SITUATIONS),
    "verificationStatus": st.sampled_from(
        ("unverified", "plausible", "probable", "verified", "refuted", "disputed", "stale")),
    "status": st.sampled_from(("active", "draft", "superseded", "frozen", "forgotten")),
}
QUIET_FIELDS = {"supersededBy": st.sampled_from(SUCCESSORS)}
COUNTER_FIELDS = {
    "effectiveRetrievals": st.integers(0, 40),
    "failedUses": st.integers(0, 40),
    "reinforcementScore": st.sampled_from((0.0, 0.5, 1.0, 2.5, 3.0, 7.25)),
}
LATER_FIELDS = {name: st.sampled_from(STAMPS) for name in
                ("lastEffectiveAt", "lastFailedAt", "lastVerifiedAt", "activatedAt", "deactivatedAt")}
UNIT_FIELDS = {"importance": st.sampled_from((0.0, 0.05, 0.3, 0.5, 0.55, 0.8, 0.95, 1.0))}
ANY_FIELDS = {"validWhile": st.sampled_from(PREMISES)}
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    **SET_FIELDS, **SCALAR_FIELDS, **QUIET_FIELDS, **COUNTER_FIELDS, **LATER_FIELDS, **UNIT_FIELDS, **ANY_FIELDS,
}
#: Fields the base item always has (``meta()`` gives them); the others may be absent.
REQUIRED = frozenset({"status", "verificationStatus", "importance", "effectiveRetrievals", "failedUses",
                      "reinforcementScore"})
NONE = object()  # "remove this key" in a generated edit


@st.composite
def field_values(draw: st.DrawFn, *, edit_of: dict[str, Any] | None = None, force: str = "") -> dict[str, Any]:
    """Lifecycle field values: a base (``edit_of`` None) or one side's edit of it, which
    always changes the field ``force``."""
    out: dict[str, Any] = {}
    for name, values in FIELDS.items():
        if edit_of is None:
            present = name in REQUIRED or draw(st.booleans())
            out[name] = draw(values) if present else NONE
            continue
        choice = "change" if name == force else draw(st.sampled_from(("keep", "keep", "change", "remove")))
        if choice == "keep" or (choice == "remove" and name in REQUIRED):
            out[name] = edit_of[name]
        elif choice == "remove":
            out[name] = NONE
        else:
            out[name] = draw(values)
    return out


def document(values: dict[str, Any], stamp: str, by: str, version: int, body: str) -> bytes:
    changes = {k: (None if v is NONE else v) for k, v in values.items()}
    return engram(body, updatedAt=stamp, updatedBy=by, version=version, **changes)


BODIES = ("line one\nline two\nline three\n", "line one\nline two\nline three\nline four\n",
          "line zero\nline one\nline two\nline three\n")


@st.composite
def triples(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    base_values = draw(field_values())
    base = document(base_values, "2026-06-21T10:30:00.000Z", "dana", 3, BODIES[0])
    # One field both sides change (to the same value or not), so every rule's own case
    # is reached in every run, not only its one-side case.
    focus = draw(st.sampled_from(sorted(FIELDS)))
    sides = []
    for _ in range(2):
        values = draw(field_values(edit_of=base_values, force=focus))
        body = draw(st.sampled_from(BODIES))
        if values == base_values and body == BODIES[0]:
            sides.append(base)
            continue
        stamp = draw(st.sampled_from(("2026-06-22T12:00:00.000Z", "2026-06-22T13:00:00.000Z")))
        sides.append(document(values, stamp, draw(st.sampled_from(AUTHORS)), 4, body))
    return base, sides[0], sides[1]


def fields_of(data: bytes) -> dict[str, Any]:
    front = codec.parse_engram(data)[0]
    return {name: front.get(name, MISSING) for name in FIELDS}


def notes_of(data: bytes) -> list[str]:
    return list(codec.parse_engram(data)[0].get(CONFLICTS_KEY) or [])


def _keys(value: Any) -> list[str]:
    return [canonical_key(v) for v in value] if isinstance(value, list) else []


def expected_set(b: Any, o: Any, t: Any) -> set[str]:
    """What a three-way set merge must hold: the base values both sides kept, and every
    value either side added."""
    kb, ko, kt = set(_keys(b)), set(_keys(o)), set(_keys(t))
    return (kb & ko & kt) | (ko - kb) | (kt - kb)


def _one_side(b: Any, o: Any, t: Any) -> tuple[bool, Any]:
    """(decided, value) for the cases every rule shares: agreement or one side changed."""
    if o == t:
        return True, o
    if o == b:
        return True, t
    if t == b:
        return True, o
    return False, None


def _instant(value: Any) -> Any:
    return codec.parse_time(value) if isinstance(value, str) else value


def _loads(data: bytes) -> None:
    """engram's own typed reader accepts the result and reads the same lifecycle values."""
    item, _ = load_engram(data, PATH)
    front = codec.parse_engram(data)[0]
    assert item.id == front["id"] and item.status == front["status"]
    assert list(item.provenance or []) == list(front.get("provenance") or [])
    assert list(item.steps or []) == list(front.get("steps") or [])
    assert list(item.composed_of or []) == list(front.get("composedOf") or [])
    assert item.failed_uses == front["failedUses"] and item.superseded_by == front.get("supersededBy")


def _refutation_prevails(o: Any, t: Any) -> bool:
    """Exactly one side refuted: that side's value wins, not the tie-winner's."""
    return (o == "refuted") != (t == "refuted")


def _one_winner(base: bytes, ours: bytes, theirs: bytes, merged: bytes) -> None:
    """The tie-winner is chosen once per file: a skill's steps and its situation (or a
    status and its successor) never mix two edits."""
    b, o, t, m = fields_of(base), fields_of(ours), fields_of(theirs), fields_of(merged)
    winners = set()
    for name in (*SCALAR_FIELDS, *QUIET_FIELDS):
        if name == "verificationStatus" and _refutation_prevails(o[name], t[name]):
            continue  # refuted wins whichever side wrote it
        if not _one_side(b[name], o[name], t[name])[0]:
            winners.add("ours" if m[name] == o[name] else "theirs")
    assert len(winners) <= 1, winners


# --------------------------------------------------------------------------- the laws


@LAWS
@given(triples())
def test_every_lifecycle_field_merges_by_its_documented_rule(triple: tuple[bytes, bytes, bytes]) -> None:
    """The oracle, field by field; and the merge is symmetric, deterministic, loadable."""
    base, ours, theirs = triple
    result = merge_file(base, ours, theirs, PATH)
    assert result.ok and result.kind in ("engram", "trivial")
    assert merge_file(base, theirs, ours, PATH).data == result.data
    assert merge_file(base, ours, theirs, PATH).data == result.data
    _loads(result.data)
    merged = fields_of(result.data)
    if result.kind == "trivial":
        assert result.data in (ours, theirs)
        return
    _one_winner(base, ours, theirs, result.data)
    b, o, t = fields_of(base), fields_of(ours), fields_of(theirs)
    notes = notes_of(result.data)
    for name in FIELDS:
        bv, ov, tv, mv = b[name], o[name], t[name], merged[name]
        if name in COUNTER_FIELDS:
            # Counters add even when both sides reached the same number.
            def n(v: Any) -> float:
                return 0 if v is MISSING else v

            total = n(ov) + n(tv) - n(bv)
            assert mv == (max(0, total) if isinstance(total, int) else round(total, 6)), name
            continue
        if name in UNIT_FIELDS:  # additive too: two equal moves are two moves
            if ov == bv or tv == bv:
                want = tv if ov == bv else ov
            elif bv is MISSING:
                want = (ov + tv) / 2
            else:
                want = min(1.0, max(0.0, bv + (ov - bv) + (tv - bv)))
            assert mv == round(want, 6), (name, bv, ov, tv, mv)
            continue
        decided, value = _one_side(bv, ov, tv)
        if name in SET_FIELDS:
            assert set(_keys(mv)) == expected_set(bv, ov, tv), name
            assert len(_keys(mv)) == len(set(_keys(mv))), (name, "a record twice")
            continue
        if decided:
            assert mv == value, (name, bv, ov, tv, mv)
            continue
        if name == "verificationStatus" and _refutation_prevails(ov, tv):
            assert mv == "refuted", (bv, ov, tv, mv)
        if name in SCALAR_FIELDS:
            assert mv in (ov, tv), name
            lost = tv if mv == ov else ov
            shown = "nothing (removed)" if lost is MISSING else json.dumps(lost, ensure_ascii=False, sort_keys=True)
            assert any(note.startswith(f"{name}:") and shown in note for note in notes), (name, notes)
        elif name in QUIET_FIELDS:
            assert mv in (ov, tv), name
            assert not any(note.startswith(f"{name}:") for note in notes), notes
        elif name in LATER_FIELDS:
            present = [v for v in (ov, tv) if v is not MISSING]
            assert mv is not MISSING and _instant(mv) == max(_instant(v) for v in present), name
        elif name in ANY_FIELDS:
            if all(isinstance(v, list) for v in (bv, ov, tv) if v is not MISSING):  # a list of premises: a set
                assert set(_keys(mv)) == expected_set(bv, ov, tv), (bv, ov, tv, mv)
            else:
                assert mv in (ov, tv), name
                assert any(note.startswith(f"{name}:") for note in notes), notes


@LIGHT
@given(triples())
def test_identities_hold_for_lifecycle_edits(triple: tuple[bytes, bytes, bytes]) -> None:
    base, ours, _ = triple
    assert merge_file(base, ours, base, PATH).data == ours
    assert merge_file(base, base, ours, PATH).data == ours
    assert merge_file(base, ours, ours, PATH).data == ours


@LIGHT
@given(triples())
def test_a_merge_of_a_merge_with_either_side_changes_nothing_more(triple: tuple[bytes, bytes, bytes]) -> None:
    """Once merged, pulling the same side in again is a no-op for the set fields: a
    record is never duplicated by merging twice (a clone that syncs twice)."""
    base, ours, theirs = triple
    merged = merge_file(base, ours, theirs, PATH).data
    again = merge_file(ours, merged, theirs, PATH).data
    m1, m2 = fields_of(merged), fields_of(again)
    for name in SET_FIELDS:
        k1, k2 = _keys(m1[name]), _keys(m2[name])
        assert len(k2) == len(set(k2)), name
        assert set(k1) <= set(k2) | (set(_keys(fields_of(ours)[name])) - set(_keys(fields_of(theirs)[name]))), name


# --------------------------------------------------------------------------- concrete cases


def test_two_clones_adding_the_same_verification_event_keep_one_copy() -> None:
    event = VERIFICATIONS[1]
    base = engram()
    ours = engram(verifications=[event], updatedAt="2026-06-22T10:00:00.000Z", updatedBy="alice", version=2,
                  retrievalCount=11)
    theirs = engram(verifications=[event], updatedAt="2026-06-22T11:00:00.000Z", updatedBy="bob", version=2)
    merged = codec.parse_engram(merge_file(base, ours, theirs, PATH).data)[0]
    assert merged["verifications"] == [event]


def test_a_precondition_removed_on_one_side_and_kept_on_the_other_is_removed() -> None:
    base = engram(preconditions=["table is bloated", "replica is healthy"])
    ours = engram(preconditions=["table is bloated"], updatedAt="2026-06-22T10:00:00.000Z", version=2)
    theirs = engram(preconditions=["table is bloated", "replica is healthy", "off-peak hours"],
                    updatedAt="2026-06-22T11:00:00.000Z", version=2)
    result = merge_file(base, ours, theirs, PATH)
    assert codec.parse_engram(result.data)[0]["preconditions"] == ["table is bloated", "off-peak hours"]
    assert merge_file(base, theirs, ours, PATH).data == result.data


def test_a_verification_upgrade_on_each_clone_keeps_both_events_and_the_later_check() -> None:
    base = engram(verificationStatus="unverified")
    ours = engram(verificationStatus="plausible", verifications=[VERIFICATIONS[0]],
                  updatedAt="2026-06-22T10:00:00.000Z", updatedBy="alice", version=2)
    theirs = engram(verificationStatus="verified", verifications=[VERIFICATIONS[1]],
                    lastVerifiedAt="2026-06-23T10:00:00.000Z",
                    updatedAt="2026-06-22T11:00:00.000Z", updatedBy="bob", version=2)
    result = merge_file(base, ours, theirs, PATH)
    front = codec.parse_engram(result.data)[0]
    assert len(front["verifications"]) == 2
    assert front["verificationStatus"] == "verified"  # the later edit
    assert front["lastVerifiedAt"] == "2026-06-23T10:00:00.000Z"
    assert any(n.startswith("verificationStatus:") and '"plausible"' in n for n in front[CONFLICTS_KEY])


def test_a_refutation_wins_over_a_concurrent_verification_whichever_side_is_later() -> None:
    """One clone refutes, the other verifies: the item is refuted, both events are kept,
    the verification that lost is flagged for review — on either order of the edits."""
    refuted = {"at": "2026-06-22T10:00:00.000Z", "by": "alice", "from": "plausible", "to": "refuted",
               "note": "the bucket deletes logs after 7 days"}
    verified = {"at": "2026-06-22T11:00:00.000Z", "by": "bob", "from": "plausible", "to": "verified",
                "note": "checked the config"}
    base = engram(verificationStatus="plausible")
    for refute_at, verify_at in (("2026-06-22T10:00:00.000Z", "2026-06-22T11:00:00.000Z"),
                                 ("2026-06-22T11:00:00.000Z", "2026-06-22T10:00:00.000Z")):
        ours = engram(verificationStatus="refuted", verifications=[refuted], updatedAt=refute_at,
                      updatedBy="alice", version=2)
        theirs = engram(verificationStatus="verified", verifications=[verified],
                        lastVerifiedAt="2026-06-22T11:00:00.000Z", updatedAt=verify_at, updatedBy="bob", version=2)
        result = merge_file(base, ours, theirs, PATH)
        assert merge_file(base, theirs, ours, PATH).data == result.data
        front = codec.parse_engram(result.data)[0]
        assert front["verificationStatus"] == "refuted"
        assert {v["to"] for v in front["verifications"]} == {"refuted", "verified"}
        assert any(n.startswith("verificationStatus:") and '"verified"' in n for n in front[CONFLICTS_KEY])
        assert not result.clean


def test_feedback_folded_on_two_clones_adds_every_count() -> None:
    base = engram(effectiveRetrievals=4, failedUses=1, reinforcementScore=0.5, importance=0.5)
    ours = engram(effectiveRetrievals=6, failedUses=1, reinforcementScore=1.5, importance=0.55,
                  lastEffectiveAt="2026-06-22T10:00:00.000Z")
    theirs = engram(effectiveRetrievals=5, failedUses=3, reinforcementScore=0.5, importance=0.45,
                    lastEffectiveAt="2026-06-22T09:00:00.000Z", lastFailedAt="2026-06-22T09:30:00.000Z")
    front = codec.parse_engram(merge_file(base, ours, theirs, PATH).data)[0]
    assert (front["effectiveRetrievals"], front["failedUses"]) == (7, 3)
    assert front["reinforcementScore"] == 1.5 and front["importance"] == 0.5
    assert front["lastEffectiveAt"] == "2026-06-22T10:00:00.000Z"
    assert front["lastFailedAt"] == "2026-06-22T09:30:00.000Z"
    assert CONFLICTS_KEY not in front  # counters never conflict


def test_forgotten_on_one_clone_and_restored_edit_on_the_other_is_flagged_not_silent() -> None:
    base = engram(status="frozen")
    ours = engram(status="forgotten", updatedAt="2026-06-22T10:00:00.000Z", updatedBy="alice", version=2)
    theirs = engram(status="active", updatedAt="2026-06-22T11:00:00.000Z", updatedBy="bob", version=2)
    result = merge_file(base, ours, theirs, PATH)
    front = codec.parse_engram(result.data)[0]
    assert front["status"] == "active"
    assert any(n.startswith("status:") and '"forgotten"' in n for n in front[CONFLICTS_KEY])
    assert not result.clean


def test_the_meta_helper_has_every_required_lifecycle_field() -> None:
    """The oracle assumes the base always holds these; keep the helper honest."""
    assert set(meta()) >= REQUIRED
