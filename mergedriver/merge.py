"""Three-way merges of vault files: pure functions from three byte strings to one.

:func:`merge_file` is the entry point both the git driver (``python -m mergedriver``) and
``engram sync`` call. It dispatches on the file:

- an engram (a ``.md`` file whose frontmatter has an ``id``) → :func:`merge_engram`:
  frontmatter field by field (:mod:`mergedriver.fields`), content line by line and the
  derived link section as a set (:mod:`mergedriver.body`);
- a synapse (``…/synapses/<kind>/*.yaml``) → :func:`merge_synapse`;
- a proposal (``…/proposals/<kind>/*.yaml``) → :func:`merge_proposal`;
- anything else → :func:`merge_text`, git's own line merge (``git merge-file``).

An engram or synapse side that does not parse — or two sides that are different items —
falls back to the text merge with conflict markers and ``ok=False``: git then stops and
shows the conflict, and no side is ever dropped.

Laws (``tests/test_merge_laws.py`` checks them on generated items): the result depends
only on the three inputs and is the same byte for byte when ours and theirs are swapped;
``merge(b, x, b) == merge(b, b, x) == merge(b, x, x) == x``; every line either side added
to the content is in the result; a structured result always parses.

Kept conflicts. A structured merge always completes (``ok=True``): where both sides
changed the same lines, both versions stay in the body in a ``> [!conflict]`` callout,
and every kept or refused conflict is recorded in the frontmatter list
``mergeConflicts`` (:data:`CONFLICTS_KEY`), which ``engram conflicts`` and ``engram
doctor`` list until a person resolves it. ``clean`` is False for such a merge.

Version bookkeeping: ``contentHash`` and ``contentSize`` are recomputed from the merged
content; ``version`` is the larger side's version when the result equals that side, else
the larger version + 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from mergedriver import codec
from mergedriver.body import merge_content, merge_derived
from mergedriver.fields import FieldMerge, Rule, Side, prevails
from mergedriver.lines import common_base, diff3, render_markers

__all__ = [
    "CONFLICTS_KEY",
    "MergeResult",
    "Unmergeable",
    "flag_engram",
    "kind_of",
    "merge_engram",
    "merge_file",
    "merge_proposal",
    "merge_synapse",
    "merge_text",
]

#: The frontmatter list that flags an item for review after a merge kept a conflict.
CONFLICTS_KEY = "mergeConflicts"

ENGRAM, SYNAPSE, PROPOSAL, TEXT = "engram", "synapse", "proposal", "text"
_COMPUTED = ("version", "contentHash", "contentSize")


class Unmergeable(ValueError):
    """The sides cannot be merged structurally (a side does not parse, or different items)."""


_NONE: Mapping[str, str] = MappingProxyType({})


class MergeResult(NamedTuple):
    """The merged bytes and what the merge did.

    ``ok``: a finished merge git may commit (the driver exits 0). ``clean``: no conflict
    was kept or reported. ``kind``: ``trivial`` (a side was unchanged), ``engram``,
    ``synapse``, ``text``, or ``fallback`` (structured input that could not be merged
    structurally; ``reason`` says why). ``strategies`` maps each field both sides
    changed to the rule that merged it; ``conflicts`` are the notes of kept conflicts.
    """

    data: bytes
    ok: bool
    clean: bool
    kind: str
    strategies: Mapping[str, str] = _NONE
    conflicts: tuple[str, ...] = ()
    reason: str | None = None

    def record(self, path: str) -> dict[str, Any]:
        """The merge record (one JSON line in ``.engram/merges.jsonl``), minus time and origin."""
        return {
            "path": path,
            "kind": self.kind,
            "ok": self.ok,
            "clean": self.clean,
            "strategies": dict(self.strategies),
            "conflicts": list(self.conflicts),
            "reason": self.reason,
        }


# --------------------------------------------------------------------------- dispatch


def _trivial(base: bytes | None, ours: bytes, theirs: bytes) -> MergeResult | None:
    """What git itself does when a side is unchanged: take the other side verbatim."""
    if ours == theirs or theirs == base:
        return MergeResult(ours, True, True, "trivial")
    if ours == base:
        return MergeResult(theirs, True, True, "trivial")
    return None


def _looks_like_engram(data: bytes | None) -> bool:
    if not data:
        return False
    head = data.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")
    if not head.startswith(b"---\n"):
        return False
    end = head.find(b"\n---", 3)
    front = head[: end if end > 0 else len(head)]
    return front.startswith(b"---\nid:") or b"\nid:" in front


def kind_of(path: str, base: bytes | None, ours: bytes, theirs: bytes) -> str:
    """``engram``, ``synapse`` or ``text`` for a vault-relative (or repo-relative) path."""
    parts = path.replace("\\", "/").split("/")
    if parts[-1].endswith(".yaml") and len(parts) >= 3 and parts[-3] == "synapses":
        return SYNAPSE  # synapses/<kind>/<id>.yaml, under a vault folder or not
    if parts[-1].endswith(".yaml") and len(parts) >= 3 and parts[-3] == "proposals":
        return PROPOSAL
    if (parts[-1].endswith(".md") or not path) and any(
        _looks_like_engram(side) for side in (base, ours, theirs)
    ):
        return ENGRAM
    return TEXT


def merge_file(
    base: bytes | None, ours: bytes, theirs: bytes, path: str = "", marker_size: int = 7
) -> MergeResult:
    """Merge one file of any kind (see the module docstring); never raises on bad input."""
    base = base or None
    trivial = _trivial(base, ours, theirs)
    if trivial is not None:
        return trivial
    kind = kind_of(path, base, ours, theirs)
    if kind == TEXT:
        return merge_text(base, ours, theirs, marker_size)
    try:
        if kind == ENGRAM:
            return merge_engram(base, ours, theirs, path)
        if kind == PROPOSAL:
            return merge_proposal(base, ours, theirs, path)
        return merge_synapse(base, ours, theirs, path)
    except Unmergeable as exc:
        text = merge_text(base, ours, theirs, marker_size)
        return MergeResult(text.data, False, False, "fallback", {}, (), str(exc))


# --------------------------------------------------------------------------- engrams

_R = FieldMerge
ENGRAM_RULES: dict[str, Rule] = {
    "id": _R.immutable,
    "createdAt": _R.immutable,
    "createdBy": _R.immutable,
    "retrievalCount": _R.counter,
    "effectiveRetrievals": _R.counter,
    "failedUses": _R.counter,
    "reinforcementScore": _R.counter,
    "importance": _R.unit,
    "confidence": _R.unit,
    "tags": _R.as_set,
    CONFLICTS_KEY: _R.as_set,
    # Lifecycle lists: what an item superseded or absorbed, and verification events, are
    # records that only grow; preconditions are a set. A skill's steps are an ordered
    # procedure: a union of two edits would interleave two procedures, so it is one value;
    # so is the ordered list of skills a composed skill is made of (``composedOf``), and
    # the tie-winner is chosen once per file, so steps and components come from one side.
    "provenance": _R.as_set,
    "verifications": _R.as_set,
    "preconditions": _R.as_set,
    "steps": _R.scalar,
    "composedOf": _R.scalar,
    "situation": _R.scalar,
    # One clone refuted the item while another raised or confirmed it: the refutation
    # wins, whichever edit was later — the other side checked without the evidence that
    # it is false, and a refuted item comes back only by a new check (verify_entry). The
    # losing state is flagged, so a person sees both; both events stay in verifications.
    "verificationStatus": prevails("refuted", "a refutation outweighs a concurrent change; re-check with verify"),
    # Two clones that superseded one item with two different lessons: either successor
    # is right for the merge, and `engram sync` then makes the newer the current one
    # (engram.lifecycle.succession.settle_heads), so this is no conflict to flag.
    "supersededBy": _R.quiet,
    # Scopes: recall evidence and endorsement/promotion records only grow, so two machines'
    # additions are a union; the example is one value (the concrete body it replaced).
    "recalledBy": _R.as_set,
    "recallDays": _R.as_set,
    "endorsements": _R.as_set,
    "promotions": _R.as_set,
    "example": _R.scalar,
    # The domain is a folder path, not a bag of tags: a union of two moves would name a
    # folder nobody chose, so it is one value.
    "domainTags": _R.scalar,
    "updatedBy": _R.quiet,
    "slug": _R.quiet,
    **{key: _R.later for key, kind in codec.ENGRAM_KEYS if kind == codec.TIME and key != "createdAt"},
}


class _Doc(NamedTuple):
    meta: dict[str, Any]
    content: str
    derived: str
    side: Side


def _parse_engram(data: bytes, which: str) -> _Doc:
    try:
        meta, content, derived = codec.parse_engram(data)
    except codec.CodecError as exc:
        raise Unmergeable(f"{which} is not a valid engram file: {exc}") from None
    side = Side(str(meta.get("updatedAt", "")), str(meta.get("updatedBy", "")), data)
    return _Doc(meta, content, derived, side)


def _without(meta: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k not in keys}


def merge_engram(base: bytes | None, ours: bytes, theirs: bytes, path: str = "") -> MergeResult:
    """Merge three versions of an engram file. Raises :class:`Unmergeable` on bad input."""
    trivial = _trivial(base or None, ours, theirs)
    if trivial is not None:
        return trivial
    o, t = _parse_engram(ours, "ours"), _parse_engram(theirs, "theirs")
    if o.meta["id"] != t.meta["id"]:
        raise Unmergeable(
            f"the two sides are different items (ids {min(o.meta['id'], t.meta['id'])} and "
            f"{max(o.meta['id'], t.meta['id'])}) at the same path"
        )
    b = _parse_engram(base, "base") if base else None
    if b is not None and b.meta["id"] != o.meta["id"]:
        b = None  # the path held another item before: merge as two new versions of this one
    fm = FieldMerge(o.side, t.side, has_base=b is not None)
    meta = fm.mapping(
        _without(b.meta, _COMPUTED) if b else None,
        _without(o.meta, _COMPUTED),
        _without(t.meta, _COMPUTED),
        ENGRAM_RULES,
    )
    if b is None and "createdAt" in fm.strategies:
        creator = o if meta.get("createdAt") == o.meta.get("createdAt") else t
        if "createdBy" in creator.meta:
            meta["createdBy"] = creator.meta["createdBy"]
    ours_first = not fm.ours_wins  # the earlier edit is listed first
    content, blocks = merge_content(
        b.content if b else None,
        o.content,
        t.content,
        ours_first=ours_first,
        ours_label=o.side.label,
        theirs_label=t.side.label,
        ref=str(meta["id"]),
    )
    fm.strategies["content"] = "lines" if not blocks else "lines:conflict-kept"
    if o.content == t.content or (b is not None and b.content in (o.content, t.content)):
        del fm.strategies["content"]
    if blocks:
        first, second = (o.side, t.side) if ours_first else (t.side, o.side)
        fm.notes.append(
            f"content: both sides changed the same lines; {blocks} conflict block(s) keep "
            f"both versions ({first.label}; {second.label})"
        )
    derived = merge_derived(b.derived if b else None, o.derived, t.derived)
    _add_notes(meta, fm.notes)
    meta["contentHash"] = codec.content_hash(content)
    meta["contentSize"] = len(content.encode("utf-8"))
    meta["version"] = _version(meta, content, derived, (o, t))
    # render(normalized meta) always parses back (the codec's round-trip invariant, which
    # the law tests check); re-parsing here would cost a third of the merge.
    data = codec.render_engram(meta, content, derived)
    return MergeResult(data, True, not fm.notes, ENGRAM, fm.strategies, tuple(fm.notes))


def _add_notes(meta: dict[str, Any], notes: list[str]) -> None:
    if not notes:
        return
    existing = list(meta.get(CONFLICTS_KEY) or [])
    meta[CONFLICTS_KEY] = existing + sorted({n for n in notes if n not in existing})


def _version(meta: Mapping[str, Any], content: str, derived: list[str], docs: tuple[_Doc, ...]) -> int:
    """The larger version if the result equals that side, else the larger version + 1."""
    versions = [d.meta["version"] for d in docs if isinstance(d.meta.get("version"), int)]
    top = max(versions, default=0)
    plain = _without(meta, _COMPUTED)
    for doc in docs:
        if (
            doc.meta.get("version") == top
            and _without(doc.meta, _COMPUTED) == plain
            and doc.content == content
            and doc.derived == "\n".join(derived)
        ):
            return top
    return top + 1


def flag_engram(data: bytes, note: str) -> bytes:
    """Add a conflict note to an engram file (version + 1). Raises :class:`Unmergeable`."""
    doc = _parse_engram(data, "the file")
    meta = dict(doc.meta)
    _add_notes(meta, [note])
    meta["version"] = int(meta.get("version", 0)) + 1
    return codec.render_engram(meta, doc.content, doc.derived.split("\n") if doc.derived else [])


# --------------------------------------------------------------------------- synapses

SYNAPSE_RULES: dict[str, Rule] = {
    "id": _R.immutable,
    "from": _R.immutable,
    "to": _R.immutable,
    "kind": _R.immutable,
    "createdAt": _R.immutable,
    "createdBy": _R.immutable,
    "updatedAt": _R.later,
    "updatedBy": _R.quiet,
    "weight": _R.unit,
    "retrievalWeight": _R.delta,
}
EVIDENCE_RULES: dict[str, Rule] = {"confidence": _R.unit, "addedAt": _R.later}
_IDENTITY = ("id", "from", "to", "kind")


def _parse_synapse(data: bytes, which: str) -> dict[str, Any]:
    try:
        return codec.parse_synapse(data)
    except codec.CodecError as exc:
        raise Unmergeable(f"{which} is not a valid synapse file: {exc}") from None


def _evidence_key(entry: Mapping[str, Any]) -> str:
    return f"{entry.get('description', '')}\x00{entry.get('addedBy', '')}"


def _merge_evidence(fm: FieldMerge, name: str, b: Any, o: Any, t: Any) -> Any:
    """Evidence as a set keyed by (description, author); an edit beats a removal."""
    fm.strategies[name] = "set"
    maps = [
        {_evidence_key(e): e for e in reversed(v)} if isinstance(v, list) else {} for v in (b, o, t)
    ]
    out: list[dict[str, Any]] = []
    for key in sorted({*maps[0], *maps[1], *maps[2]}):
        eb, eo, et = (m.get(key) for m in maps)
        if eo == et or et == eb:
            entry = eo
        elif eo == eb or eo is None:
            entry = et
        elif et is None:
            entry = eo
        else:
            entry = fm.mapping(eb, eo, et, EVIDENCE_RULES, prefix=f"{name}[{key.split(chr(0))[0]}].")
        if entry is not None:
            out.append(entry)
    return codec.sort_evidence(out)


def merge_synapse(base: bytes | None, ours: bytes, theirs: bytes, path: str = "") -> MergeResult:
    """Merge three versions of a synapse file. Raises :class:`Unmergeable` on bad input."""
    trivial = _trivial(base or None, ours, theirs)
    if trivial is not None:
        return trivial
    o, t = _parse_synapse(ours, "ours"), _parse_synapse(theirs, "theirs")
    if any(o[k] != t[k] for k in _IDENTITY):
        raise Unmergeable("the two sides are different edges (id, endpoints or kind differ)")
    b = _parse_synapse(base, "base") if base else None
    if b is not None and any(b[k] != o[k] for k in _IDENTITY):
        b = None
    sides = [
        Side(str(d.get("updatedAt", d.get("createdAt", ""))), str(d.get("updatedBy", d.get("createdBy", ""))), raw)
        for d, raw in ((o, ours), (t, theirs))
    ]
    fm = FieldMerge(sides[0], sides[1], has_base=b is not None)
    rules = {**SYNAPSE_RULES, "evidence": _merge_evidence}
    merged = fm.mapping(b, o, t, rules)
    merged.setdefault("evidence", [])
    data = codec.render_synapse(merged)
    return MergeResult(data, True, not fm.notes, SYNAPSE, fm.strategies, tuple(fm.notes))


# --------------------------------------------------------------------------- proposals

#: A decision outranks no decision, and an accepted proposal (its change is made) outranks
#: a dismissed one: a merge cannot un-make a change, so it says so.
DECISION_RANK = {"open": 0, "dismissed": 1, "accepted": 2}
_DECISION = ("status", "decidedBy", "decidedAt", "note")


def _merge_decision(fm: FieldMerge, name: str, b: Any, o: Any, t: Any) -> Any:
    fm.strategies[name] = "decision"
    return max((o, t), key=lambda v: (DECISION_RANK.get(str(v), -1), str(v)))


PROPOSAL_RULES: dict[str, Rule] = {
    "id": _R.immutable,
    "kind": _R.immutable,
    "createdAt": _R.immutable,
    "createdBy": _R.immutable,
    "status": _merge_decision,
    "targets": _R.as_set,
    "updatedAt": _R.later,
    "decidedAt": _R.later,
    "updatedBy": _R.quiet,
    "decidedBy": _R.quiet,
}


def _parse_proposal(data: bytes, which: str) -> dict[str, Any]:
    try:
        return codec.parse_proposal(data)
    except codec.CodecError as exc:
        raise Unmergeable(f"{which} is not a valid proposal file: {exc}") from None


def merge_proposal(base: bytes | None, ours: bytes, theirs: bytes, path: str = "") -> MergeResult:
    """Merge three versions of a proposal file. Raises :class:`Unmergeable` on bad input.

    Field by field like a synapse; the decision (``status`` with who decided, when and
    why) comes whole from the side whose status ranks higher (:data:`DECISION_RANK`).
    """
    trivial = _trivial(base or None, ours, theirs)
    if trivial is not None:
        return trivial
    o, t = _parse_proposal(ours, "ours"), _parse_proposal(theirs, "theirs")
    if o["id"] != t["id"]:
        raise Unmergeable("the two sides are different proposals (ids differ)")
    b = _parse_proposal(base, "base") if base else None
    if b is not None and b["id"] != o["id"]:
        b = None
    sides = [
        Side(str(d.get("updatedAt", d.get("createdAt", ""))), str(d.get("updatedBy", "")), raw)
        for d, raw in ((o, ours), (t, theirs))
    ]
    fm = FieldMerge(sides[0], sides[1], has_base=b is not None)
    merged = fm.mapping(b, o, t, PROPOSAL_RULES)
    if o.get("status") != t.get("status"):
        decider = o if merged.get("status") == o.get("status") else t
        for key in _DECISION[1:]:
            merged.pop(key, None)
            if key in decider:
                merged[key] = decider[key]
    data = codec.render_proposal(merged)
    return MergeResult(data, True, not fm.notes, PROPOSAL, fm.strategies, tuple(fm.notes))


# --------------------------------------------------------------------------- text


def _is_binary(data: bytes | None) -> bool:
    return bool(data) and b"\x00" in (data or b"")[:8000]


def merge_text(
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    marker_size: int = 7,
    labels: tuple[str, str, str] = ("ours", "base", "theirs"),
) -> MergeResult:
    """git's line merge (``git merge-file``); markers and ``ok=False`` where it conflicts.

    A binary side cannot be merged by lines: ours is kept unchanged with ``ok=False``, as
    git does. Without a ``git`` binary a pure-Python diff3 writes the same marker style.
    """
    trivial = _trivial(base, ours, theirs)
    if trivial is not None:
        return trivial
    if any(_is_binary(side) for side in (base, ours, theirs)):
        return MergeResult(ours, False, False, "fallback", {}, (), "binary file")
    try:
        data, conflicts = _git_merge_file(base or b"", ours, theirs, marker_size, labels)
    except OSError:
        data, conflicts = _python_merge_file(base or b"", ours, theirs, marker_size, labels)
    if conflicts < 0:
        return MergeResult(ours, False, False, "fallback", {}, (), "git merge-file failed")
    return MergeResult(data, conflicts == 0, conflicts == 0, TEXT, {"text": "lines"})


def _git_merge_file(
    base: bytes, ours: bytes, theirs: bytes, marker_size: int, labels: tuple[str, str, str]
) -> tuple[bytes, int]:
    # Imported here: only text merges need them, and they cost the driver ~10 ms to load.
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="engram-merge-") as tmp:
        names = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            target = Path(tmp) / name
            target.write_bytes(data)
            names.append(str(target))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        proc = subprocess.run(
            ["git", "merge-file", "-p", f"--marker-size={marker_size}",
             "-L", labels[0], "-L", labels[1], "-L", labels[2], *names],
            capture_output=True, check=False, env=env,
        )
    if proc.returncode < 0 or proc.returncode > 127:
        return ours, -1
    return proc.stdout, proc.returncode


def _python_merge_file(
    base: bytes, ours: bytes, theirs: bytes, marker_size: int, labels: tuple[str, str, str]
) -> tuple[bytes, int]:
    sides = [data.decode("utf-8", "surrogateescape").split("\n") for data in (base, ours, theirs)]
    chunks = diff3(sides[0] if base else common_base(sides[1], sides[2]), sides[1], sides[2])
    lines, conflicts = render_markers(chunks, marker_size, labels)
    return "\n".join(lines).encode("utf-8", "surrogateescape"), conflicts
