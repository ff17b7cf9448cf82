"""``contradiction_resolve``: a person (or curator agent) settles two items that disagree.

``old`` is the item that was there first, ``new`` the one that contradicts it (for a
disputed lesson: the disputed draft). Resolutions:

=========== ===========================================================================
keep_new    ``new`` supersedes ``old`` (provenance, edge, ``deactivatedAt``); ``new``
            becomes active and ``plausible``
keep_old    ``new`` is frozen (out of recall, kept); ``old`` gets a verification event
merge       ``old`` absorbs ``new``'s sentences it lacks (its own text kept byte for
            byte), ``new`` is superseded by ``old`` with a ``consolidates`` edge
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
from engram.lifecycle.signals import analyse, sentences
from engram.lifecycle.succession import provenance_entry, supersede
from engram.store.model import Engram, now

Resolution = Literal["keep_new", "keep_old", "merge", "archive"]
RESOLUTIONS: tuple[Resolution, ...] = ("keep_new", "keep_old", "merge", "archive")


@dataclass(frozen=True, slots=True)
class Resolved:
    resolution: str
    kept: tuple[Engram, ...]
    retired: tuple[Engram, ...]
    proposal: str | None

    def to_json(self) -> dict[str, Any]:
        return {"resolution": self.resolution,
                "kept": [{"id": i.id, "path": i.path, "status": i.status} for i in self.kept],
                "retired": [{"id": i.id, "path": i.path, "status": i.status} for i in self.retired],
                "proposal": self.proposal}


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
            known = analyse(old.content or old.title).stems
            fresh = [s for s in sentences(new.content) if not analyse(s).stems <= known]
            changes: dict[str, Any] = {
                "provenance": [*(dict(p) for p in old.provenance or ()),
                               provenance_entry("absorb", new, state.actor, now(), why)],
            }
            if fresh:
                changes["content"] = old.content.rstrip("\n") + "\n\n" + "\n".join(fresh) + "\n"
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
        return Resolved(resolution, kept, retired, closed)
