"""``contradiction_resolve``: a person (or curator agent) settles two items that disagree.

``old`` is the item that was there first, ``new`` the one that contradicts it (for a
disputed lesson: the disputed draft). Resolutions:

=========== ===========================================================================
keep_new    ``new`` supersedes ``old`` (provenance, edge, ``deactivatedAt``); ``new``
            becomes active and ``plausible``
keep_old    ``new`` is frozen (out of recall, kept); ``old`` gets a verification event
merge       ``old`` absorbs ``new``'s sentences it lacks (its own text kept byte for
            byte), ``new`` is superseded by ``old`` with a ``consolidates`` edge; a
            sentence of ``new`` that contradicts one of ``old``'s (the claim in dispute)
            is kept with it in a ``> [!conflict]`` block and the item is flagged
            (``mergeConflicts``) for a person, as a git merge does
archive     both are frozen: neither is trusted now
=========== ===========================================================================

An open ``dispute`` proposal about the pair is closed with the decision. Every write goes
through :mod:`engram.items.writing` and is audited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engram.errors import InvalidInput
from engram.items import links, writing
from engram.items.state import VaultState
from engram.lifecycle import proposals
from engram.lifecycle.classify import Lesson, compare
from engram.lifecycle.signals import analyse, same_value, sentences
from engram.lifecycle.succession import provenance_entry, supersede
from engram.store.model import Engram, now
from mergedriver.body import CALLOUT

Resolution = Literal["keep_new", "keep_old", "merge", "archive"]
RESOLUTIONS: tuple[Resolution, ...] = ("keep_new", "keep_old", "merge", "archive")


@dataclass(frozen=True, slots=True)
class Resolved:
    resolution: str
    kept: tuple[Engram, ...]
    retired: tuple[Engram, ...]
    proposal: str | None
    #: merge: the claims in dispute kept in a conflict block (see :class:`Dispute`).
    disputed: tuple[Dispute, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"resolution": self.resolution,
                "kept": [{"id": i.id, "path": i.path, "status": i.status} for i in self.kept],
                "retired": [{"id": i.id, "path": i.path, "status": i.status} for i in self.retired],
                "proposal": self.proposal,
                "disputed": [d.to_json() for d in self.disputed]}


@dataclass(frozen=True, slots=True)
class Dispute:
    """A sentence of ``new`` that contradicts one of ``old``'s, and how (the classifier's
    conflicts, e.g. ``api: 8080 → 9090``)."""

    old: str
    new: str
    conflicts: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "conflicts": list(self.conflicts)}


def absorb(old: Engram, new: Engram) -> tuple[list[str], list[Dispute]]:
    """What a merge takes from ``new``: the sentences ``old`` lacks, and the claims in
    dispute. A sentence is known when ``old`` holds its words *and its values* (a port
    that changed is not "known" because the word "port" is); it is in dispute when the
    classifier finds it contradicting a sentence of ``old``."""
    mine = sentences(old.content) or [old.title]
    whole = analyse(old.content or old.title)
    fresh: list[str] = []
    disputed: list[Dispute] = []
    for sentence in sentences(new.content):
        clash = next((Dispute(o, sentence, c.conflicts) for o in mine
                      if (c := compare(Lesson(sentence), Lesson(o))).relation == "contradicts"), None)
        if clash is not None:
            disputed.append(clash)
            continue
        said = analyse(sentence)
        stated = all(any(same_value(q, o) for o in whole.quantities) for q in said.quantities)
        if not (said.stems <= whole.stems and stated):
            fresh.append(sentence)
    return fresh, disputed


def dispute_block(old: Engram, new: Engram, disputed: list[Dispute]) -> str:
    """The claims in dispute, both sides, in the callout the merge driver uses for a
    conflict (so ``engram conflicts`` and Obsidian show it the same way)."""
    lines = [
        f"{CALLOUT} Claims in dispute: merging {new.id} ({new.title}) kept what it says against this item."
        f" Keep what is right, delete this block, then run `engram conflicts --resolve {old.id}`.",
        f"> **this item: {old.updated_by or old.created_by or 'unknown'} · {old.updated_at}**",
        *(f"> {line}" for line in dict.fromkeys(d.old for d in disputed)),
        ">",
        f"> **{new.id}: {new.updated_by or new.created_by or 'unknown'} · {new.updated_at}**",
        *(f"> {d.new}" for d in disputed),
        ">",
        "> *" + "; ".join(dict.fromkeys(c for d in disputed for c in d.conflicts)) + "*",
    ]
    return "\n".join(lines)


def _read(state: VaultState, ref: str) -> Engram:
    return state.read(state.resolve(ref))[0]


def contradiction_resolve(
    state: VaultState, old_ref: str, new_ref: str, resolution: str, *, note: str | None = None
) -> Resolved:
    """Settle a contradiction between ``old`` and ``new`` (see the module docstring)."""
    if resolution not in RESOLUTIONS:
        raise InvalidInput(f"resolution {resolution!r} is not one of {', '.join(RESOLUTIONS)}.",
                           field="resolution", hint="keep_new, keep_old, merge or archive.")
    with state.lock.hold():
        state.ensure_fresh()
        old, new = _read(state, old_ref), _read(state, new_ref)
        if old.id == new.id:
            raise InvalidInput("old and new are the same item.", hint="Name the two items that disagree.")
        why = note or f"resolved by {state.actor}: {resolution}"
        kept: tuple[Engram, ...]
        retired: tuple[Engram, ...]
        disputed: list[Dispute] = []
        if resolution == "keep_new":
            if new.status != "active" or new.verification_status == "disputed":
                new = writing.update(state, new.id, {"status": "active", "verification_status": "plausible"},
                                     expected_version=new.version)
            done = supersede(state, old.id, new.id, reason=why)
            kept, retired = (done.new,), (done.old,)
        elif resolution == "keep_old":
            new = writing.update(state, new.id, {"status": "frozen"}, expected_version=new.version)
            old = writing.update(state, old.id, {"verifications": [*(dict(v) for v in old.verifications or ()),
                                 {"at": now(), "by": state.actor, "from": old.verification_status,
                                  "to": old.verification_status, "note": f"kept over {new.id}: {why}"}]},
                                 expected_version=old.version)
            kept, retired = (old,), (new,)
        elif resolution == "merge":
            if proposals.narrowest([new.visibility, old.visibility]) != old.visibility:
                # new's sentences would be shared wider than new is (a private note into a team item).
                raise InvalidInput(
                    f"merging would copy {new.visibility} item {new.id} into {old.visibility} item {old.id}.",
                    field="resolution",
                    hint="Give the two items one visibility first, or keep_new / keep_old instead.",
                )
            fresh, disputed = absorb(old, new)
            changes: dict[str, Any] = {
                "provenance": [*(dict(p) for p in old.provenance or ()),
                               provenance_entry("absorb", new, state.actor, now(), why)],
            }
            added = ["\n".join(fresh)] if fresh else []
            if disputed:
                added.append(dispute_block(old, new, disputed))
                changes["merge_conflicts"] = [
                    *(old.merge_conflicts or ()),
                    f"merge of {new.id}: {len(disputed)} claim(s) in dispute kept in a conflict block ("
                    + "; ".join(dict.fromkeys(c for d in disputed for c in d.conflicts)) + ")",
                ]
            if added:
                changes["content"] = old.content.rstrip("\n") + "\n\n" + "\n\n".join(added) + "\n"
            old = writing.update(state, old.id, changes, expected_version=old.version)
            new = writing.update(state, new.id, {"status": "superseded", "superseded_by": old.id,
                                                 "deactivated_at": now()}, expected_version=new.version)
            links.link(state, old.id, "consolidates", new.id, weight=1.0, evidence=why)
            kept, retired = (_read(state, old.id),), (_read(state, new.id),)
        else:
            old = writing.update(state, old.id, {"status": "frozen"}, expected_version=old.version)
            new = writing.update(state, new.id, {"status": "frozen"}, expected_version=new.version)
            kept, retired = (), (old, new)
        closed = None
        for prop in proposals.list_proposals(state, status="open", kind="dispute"):
            if set(prop.targets) == {old.id, new.id}:
                proposals.record_decision(state, prop, "dismissed" if resolution == "keep_old" else "accepted",
                                          f"{resolution}: {why}")
                closed = prop.id
        return Resolved(resolution, kept, retired, closed, tuple(disputed))
