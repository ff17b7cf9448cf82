"""Builders shared by the merge tests: engram/synapse bytes and hypothesis strategies.

Items are built through the canonical codec, so every generated file is exactly what
engram writes; sides are derived from a base by the edits people and agents make
(tags added and removed, counters bumped, lines inserted, replaced and deleted, …).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from mergedriver import codec

ITEM_ID = "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"
T0 = "2026-06-21T10:30:00.000Z"


def meta(**changes: Any) -> dict[str, Any]:
    """A complete item frontmatter, with ``changes`` applied (None removes a key)."""
    base: dict[str, Any] = {
        "id": ITEM_ID,
        "title": "Copying a frozen dataclass",
        "slug": "copying-a-frozen-dataclass",
        "domainTags": ["engineering", "python"],
        "kind": "pattern",
        "tags": ["gotcha", "python"],
        "summary": "Use dataclasses.replace",
        "importance": 0.5,
        "confidence": 0.5,
        "sourceType": "firsthand",
        "status": "active",
        "verificationStatus": "unverified",
        "visibility": "team",
        "createdBy": "dana",
        "createdAt": T0,
        "updatedBy": "dana",
        "updatedAt": T0,
        "version": 1,
        "retrievalCount": 10,
        "effectiveRetrievals": 4,
        "failedUses": 1,
        "reinforcementScore": 0.5,
    }
    for key, value in changes.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def engram(content: str = "line one\nline two\nline three\n", derived: Sequence[str] = (), **changes: Any) -> bytes:
    """Canonical engram bytes (``contentHash``/``contentSize`` computed)."""
    m = meta(**changes)
    m["contentHash"] = codec.content_hash(content)
    m["contentSize"] = len(codec.canonical_content(content).encode())
    return codec.render_engram(m, content, derived)


def parsed(data: bytes) -> tuple[dict[str, Any], str, str]:
    return codec.parse_engram(data)


def synapse(evidence: Sequence[dict[str, Any]] = (), **changes: Any) -> bytes:
    data: dict[str, Any] = {
        "id": "syn-1a6b906f8bfcf8f1",
        "from": "01J8ZQ7TRY9F8G7H6J5K4L3M2N",
        "to": ITEM_ID,
        "kind": "extends",
        "weight": 0.5,
        "evidence": list(evidence),
        "createdBy": "dana",
        "createdAt": T0,
        "updatedAt": T0,
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return codec.render_synapse(data)


def evidence(description: str, by: str = "dana", at: str = T0, confidence: float | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"description": description, "addedBy": by, "addedAt": at}
    if confidence is not None:
        entry["confidence"] = confidence
    return entry


# --------------------------------------------------------------------------- strategies

WORDS = ("alpha", "beta", "gamma", "delta", "", "- item", "```", "---", "> quote", "## Heading", "épsilon")
TAGS = ("python", "gotcha", "perf", "sql", "cli", "docs")
AUTHORS = ("alice", "bob", "carol")
TIMES = tuple(f"2026-06-2{d}T1{h}:00:00.000Z" for d in range(2, 5) for h in range(0, 3))
LINKS = (
    "- → [[engineering/python/a|A · extends]]",
    "- ← [[engineering/python/b|B · causes]]",
    "- → [[ops/c|C · similar_to]]",
)

lines_st = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12)


@st.composite
def edited_lines(draw: st.DrawFn, lines: list[str]) -> list[str]:
    """``lines`` after a few random insertions, deletions and replacements."""
    out = list(lines)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(("insert", "delete", "replace")))
        pos = draw(st.integers(0, len(out)))
        if op == "insert" or not out:
            out[pos:pos] = draw(st.lists(st.sampled_from((*WORDS, f"new {pos}")), min_size=1, max_size=3))
        elif op == "delete":
            del out[min(pos, len(out) - 1)]
        else:
            out[min(pos, len(out) - 1)] = draw(st.sampled_from(WORDS)) + " changed"
    return out


def text(lines: list[str]) -> str:
    return codec.canonical_content("\n".join(lines))


@st.composite
def side_of(draw: st.DrawFn, base_meta: dict[str, Any], base_lines: list[str], base_links: list[str]) -> bytes:
    """One side: the base with a random subset of field edits and a body edit."""
    changes: dict[str, Any] = {}
    if draw(st.booleans()):
        tags = set(base_meta["tags"])
        tags ^= set(draw(st.lists(st.sampled_from(TAGS), max_size=3)))
        changes["tags"] = draw(st.permutations(sorted(tags)))
    if draw(st.booleans()):
        changes["retrievalCount"] = base_meta["retrievalCount"] + draw(st.integers(0, 5))
    if draw(st.booleans()):
        changes["importance"] = draw(st.sampled_from((0.0, 0.3, 0.55, 0.8, 1.0)))
    if draw(st.booleans()):
        changes["status"] = draw(st.sampled_from(("active", "archived", "draft", "quarantined")))
    if draw(st.booleans()):  # a curator's release (engram.trust): an extra key like any other
        changes["quarantineReleased"] = draw(st.sampled_from(("sha256:aa11", "sha256:bb22")))
    if draw(st.booleans()):
        changes["title"] = draw(st.sampled_from(("Copying a frozen dataclass", "Frozen copies", "Replace it")))
    if draw(st.booleans()):
        changes["lastRetrievedAt"] = draw(st.sampled_from(TIMES))
    if draw(st.booleans()):
        changes["extraNote"] = draw(st.sampled_from(("x", "y", {"k": 1}, [1, 2])))
    if draw(st.booleans()):
        changes.update(draw(lifecycle_edits(base_meta)))
    lines = draw(edited_lines(base_lines)) if draw(st.booleans()) else base_lines
    links = draw(st.lists(st.sampled_from(LINKS), unique=True)) if draw(st.booleans()) else base_links
    if changes or lines != base_lines or links != base_links:
        changes["updatedBy"] = draw(st.sampled_from(AUTHORS))
        changes["updatedAt"] = draw(st.sampled_from(TIMES))
        changes["version"] = base_meta["version"] + 1
    return engram(text(lines), sorted(links), **{**base_meta, **changes})


SITUATIONS = ("deploying to staging", "on a cold cache", "during a migration")
PROVENANCE = tuple(
    {"action": action, "id": f"01J8ZQ3K5P7R2V8Y3M4N6ZH0W{c}", "version": v, "by": by, "at": at}
    for action, c, v, by, at in (
        ("supersede", "A", 1, "alice", TIMES[0]), ("absorb", "B", 2, "bob", TIMES[1]),
        ("supersede", "C", 3, "carol", TIMES[2]),
    )
)
STEPS = (("check the lock", "run pg_repack"), ("run pg_repack",), ("check the lock", "wait", "wait", "retry"))
PRECONDITIONS = ("table is bloated", "replica is healthy", "off-peak hours")
VERIFICATIONS = tuple(
    {"at": at, "by": by, "from": a, "to": b, "note": "checked"}
    for at, by, a, b in (
        (TIMES[0], "alice", "unverified", "plausible"), (TIMES[3], "bob", "plausible", "verified"),
        (TIMES[4], "carol", "verified", "stale"),
    )
)


@st.composite
def lifecycle_edits(draw: st.DrawFn, base_meta: dict[str, Any]) -> dict[str, Any]:
    """Edits to the lifecycle fields: situation, provenance, steps, preconditions,
    verification events, failure counts and times, succession."""
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["situation"] = draw(st.sampled_from(SITUATIONS))
    if draw(st.booleans()):
        out["provenance"] = draw(st.lists(st.sampled_from(PROVENANCE), unique_by=lambda p: p["id"], max_size=3))
    if draw(st.booleans()):
        out["steps"] = list(draw(st.sampled_from(STEPS)))
    if draw(st.booleans()):
        out["preconditions"] = draw(st.lists(st.sampled_from(PRECONDITIONS), unique=True, max_size=3))
    if draw(st.booleans()):
        out["verifications"] = draw(st.lists(st.sampled_from(VERIFICATIONS), unique_by=lambda v: v["at"], max_size=3))
    if draw(st.booleans()):
        out["failedUses"] = base_meta["failedUses"] + draw(st.integers(1, 3))
        out["lastFailedAt"] = draw(st.sampled_from(TIMES))
    if draw(st.booleans()):
        out["effectiveRetrievals"] = base_meta["effectiveRetrievals"] + draw(st.integers(1, 3))
        out["lastEffectiveAt"] = draw(st.sampled_from(TIMES))
    if draw(st.booleans()):
        out["status"] = draw(st.sampled_from(("superseded", "frozen", "forgotten")))
        out["supersededBy"] = draw(st.sampled_from(("01J8ZQ7TRY9F8G7H6J5K4L3M2N", "01J8ZQ7TRY9F8G7H6J5K4L3M2P")))
        out["deactivatedAt"] = draw(st.sampled_from(TIMES))
    if draw(st.booleans()):
        out["verificationStatus"] = draw(st.sampled_from(("plausible", "verified", "disputed", "stale")))
        out["lastVerifiedAt"] = draw(st.sampled_from(TIMES))
    return out


@st.composite
def engram_triples(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    """(base, ours, theirs) for one item."""
    base_lines = draw(lines_st)
    base_links = draw(st.lists(st.sampled_from(LINKS), unique=True))
    base_meta = meta(tags=draw(st.lists(st.sampled_from(TAGS), unique=True, max_size=3)))
    base = engram(text(base_lines), sorted(base_links), **base_meta)
    ours = draw(side_of(base_meta, base_lines, base_links))
    theirs = draw(side_of(base_meta, base_lines, base_links))
    return base, ours, theirs


@st.composite
def synapse_triples(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    pool = [evidence(f"reason {i}", by) for i in range(3) for by in AUTHORS[:2]]
    base_ev = draw(st.lists(st.sampled_from(pool), unique_by=lambda e: (e["description"], e["addedBy"]), max_size=3))

    def side() -> bytes:
        ev = [e for e in base_ev if draw(st.booleans())]
        ev += draw(st.lists(st.sampled_from(pool), max_size=2))
        if draw(st.booleans()) and ev:
            ev[0] = {**ev[0], "confidence": draw(st.sampled_from((0.2, 0.9)))}
        ev = list({(e["description"], e["addedBy"]): e for e in ev}.values())
        return synapse(
            ev,
            weight=draw(st.sampled_from((0.1, 0.5, 0.9))),
            updatedAt=draw(st.sampled_from(TIMES)),
            updatedBy=draw(st.sampled_from(AUTHORS)),
        )

    return synapse(base_ev), side(), side()


PROPOSAL_ID = "prop-3f9a0c1d2e4b5a6c"


def proposal(**changes: Any) -> bytes:
    data: dict[str, Any] = {
        "id": PROPOSAL_ID,
        "kind": "archive",
        "status": "open",
        "title": "Archive the item",
        "reason": "failed 3 of 3 uses",
        "targets": [ITEM_ID],
        "payload": {"status": "frozen"},
        "score": 1.0,
        "createdBy": "maintenance",
        "createdAt": T0,
        "updatedBy": "maintenance",
        "updatedAt": T0,
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return codec.render_proposal(data)


@st.composite
def proposal_triples(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    """(base, ours, theirs) for one proposal: decided, re-scored, retargeted, noted."""

    def side() -> bytes:
        changes: dict[str, Any] = {}
        if draw(st.booleans()):
            changes["status"] = draw(st.sampled_from(("open", "accepted", "dismissed")))
            changes["decidedBy"] = draw(st.sampled_from(AUTHORS))
            changes["decidedAt"] = draw(st.sampled_from(TIMES))
            changes["note"] = draw(st.sampled_from(("looks right", "not yet", "keep it")))
        if draw(st.booleans()):
            changes["score"] = draw(st.sampled_from((0.5, 0.8)))
        if draw(st.booleans()):
            changes["targets"] = [ITEM_ID, *draw(st.lists(st.sampled_from(("01J8ZQ7TRY9F8G7H6J5K4L3M2N", "01K0")), unique=True))]
        if draw(st.booleans()):
            changes["reason"] = draw(st.sampled_from(("failed 4 of 4 uses", "unused for 200 days")))
        if changes:
            changes["updatedAt"] = draw(st.sampled_from(TIMES))
            changes["updatedBy"] = draw(st.sampled_from(AUTHORS))
        return proposal(**changes)

    return proposal(), side(), side()
