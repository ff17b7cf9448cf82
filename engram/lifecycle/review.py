"""Accepting and dismissing proposals: the only way maintenance's findings change knowledge.

:func:`accept` carries out what the proposal's ``payload`` says, through the same
functions a person would call (archive, forget, supersede, link, verify, resolve), then
records the decision in the proposal file; :func:`dismiss` records the decision and
changes nothing else (a ``dispute`` dismissed keeps the old item: ``keep_old``). A
proposal whose items are gone is refused with a hint, never half-applied; so is one that
would write into a person's note (:func:`engram.store.notes.persons_note`: a merge, a
verification state, an archive), which engram never changes unasked — maintenance no
longer files such proposals, and this refuses those filed before it stopped.
"""

from __future__ import annotations

from typing import Any

from engram.errors import InvalidInput, NotFound
from engram.items import links, writing
from engram.items.state import VaultState
from engram.lifecycle import forgetting, freshness, proposals
from engram.lifecycle.proposals import Proposal
from engram.lifecycle.resolve import RESOLUTIONS, contradiction_resolve
from engram.lifecycle.signals import analyse, sentences
from engram.lifecycle.succession import provenance_entry
from engram.store.model import now
from engram.store.notes import persons_note


def accept(state: VaultState, ref: str, *, note: str | None = None, resolution: str | None = None) -> Proposal:
    """Carry out an open proposal and record it accepted. ``resolution`` picks how a
    ``dispute`` is settled (default keep_new). Raises NotFound, InvalidInput."""
    with state.lock.hold():
        prop = proposals.get_proposal(state, ref)
        _open(prop)
        if resolution is not None and (prop.kind != "dispute" or resolution not in RESOLUTIONS):
            raise InvalidInput("resolution applies to dispute proposals: keep_new, keep_old, merge or archive.",
                               field="resolution", hint="Leave it out for other kinds.")
        try:
            # Every item first, so a proposal with one item gone changes nothing (a merge
            # used to absorb the items before the missing one, a pattern to be created).
            for named in _named(prop):
                state.resolve(named)
            _spare_persons_notes(state, prop)
            _apply(state, prop, resolution)
        except NotFound as exc:
            raise InvalidInput(f"proposal {prop.id} names an item that is gone: {exc.message}",
                               hint=f"Dismiss it (`engram dismiss {prop.id}`).") from exc
        current = proposals.get_proposal(state, prop.id)
        if current.status != "open":  # resolving a dispute closes its proposal itself
            return current
        return proposals.record_decision(state, current, "accepted", note)


def dismiss(state: VaultState, ref: str, *, note: str | None = None) -> Proposal:
    """Record an open proposal dismissed; nothing else changes (a dispute keeps the old item)."""
    with state.lock.hold():
        prop = proposals.get_proposal(state, ref)
        _open(prop)
        if prop.kind == "dispute":
            try:
                contradiction_resolve(state, str(prop.payload["old"]), str(prop.payload["new"]), "keep_old",
                                      note=note)
            except NotFound:  # one of the two is gone: nothing to keep, only the decision to record
                return proposals.record_decision(state, prop, "dismissed", note)
            return proposals.get_proposal(state, prop.id)
        return proposals.record_decision(state, prop, "dismissed", note)


#: The payload keys that name items, by proposal kind (the targets name the others).
_PAYLOAD_ITEMS = {"merge": ("keep", "absorb"), "pattern": ("members",), "link": ("source", "target"),
                  "retype": ("source", "target"), "dispute": ("old", "new")}


#: The proposal kinds whose acceptance writes into the items they name.
WRITES_INTO = frozenset({"merge", "verify", "stale", "archive"})


def _spare_persons_notes(state: VaultState, prop: Proposal) -> None:
    if prop.kind not in WRITES_INTO:
        return
    for ref in _named(prop):
        item = state.read(state.resolve(ref))[0]
        if persons_note(item):
            raise InvalidInput(
                f"proposal {prop.id} would write into {item.path}, a person's note: engram never changes one"
                " unasked.", hint=f"Dismiss it (`engram dismiss {prop.id}`); edit the note yourself if it should change.",
            )


def _named(prop: Proposal) -> list[str]:
    """Every item a proposal would touch: its targets and the ids its payload names."""
    refs = [*prop.targets]
    for key in _PAYLOAD_ITEMS.get(prop.kind, ()):
        value = prop.payload.get(key)
        refs += [str(ref) for ref in value] if isinstance(value, list) else [str(value)] if value else []
    return list(dict.fromkeys(refs))


def _open(prop: Proposal) -> None:
    if prop.status != "open":
        raise InvalidInput(f"proposal {prop.id} is {prop.status} already (by {prop.decided_by}).",
                           hint="`engram proposals` lists the open ones.")


def _apply(state: VaultState, prop: Proposal, resolution: str | None) -> None:
    payload: dict[str, Any] = dict(prop.payload)
    target = prop.targets[0] if prop.targets else ""
    if prop.kind == "archive":
        forgetting.archive(state, target)
    elif prop.kind == "forget":
        forgetting.forget(state, target)
    elif prop.kind in ("verify", "stale"):
        freshness.mark_verification(state, target, str(payload.get("to", "stale")), f"proposal {prop.id}: {prop.reason}")
    elif prop.kind == "link":
        links.link(state, str(payload["source"]), str(payload.get("kind", "similar_to")), str(payload["target"]),
                   evidence=f"proposal {prop.id}: {prop.reason}")
    elif prop.kind == "retype":
        old = links.unlink(state, str(payload["source"]), str(payload["from"]), str(payload["target"]))
        links.link(state, old.source, str(payload["to"]), old.target, weight=old.weight,
                   evidence=f"proposal {prop.id}: {prop.reason}")
    elif prop.kind == "dispute":
        contradiction_resolve(state, str(payload["old"]), str(payload["new"]), resolution or "keep_new",
                              note=f"proposal {prop.id}")
    elif prop.kind == "merge":
        _merge(state, str(payload["keep"]), [str(i) for i in payload.get("absorb", [])], prop)
    elif prop.kind == "pattern":
        created = writing.create(
            state, str(payload.get("title", prop.title))[:300], str(payload.get("content", "")),
            domain=[p for p in str(payload.get("domain", "")).split("/") if p], kind="pattern", dedupe=False,
            visibility=_pattern_visibility(state, [str(m) for m in payload.get("members", [])]),
        ).item
        for member in payload.get("members", []):
            links.link(state, created.id, "consolidates", str(member), evidence=f"proposal {prop.id}")
    elif prop.kind == "capture":
        writing.create(
            state, str(payload.get("title", prop.title))[:300], str(payload.get("content", "")),
            domain=[p for p in str(payload.get("domain", "")).split("/") if p],
            kind=str(payload.get("kind", "observation")), tags=[str(t) for t in payload.get("tags", [])],
            source=payload.get("source"),
        )
    else:  # pragma: no cover - PROPOSAL_KINDS is closed
        raise InvalidInput(f"cannot apply a {prop.kind} proposal.", hint="Dismiss it.")


def _pattern_visibility(state: VaultState, members: list[str]) -> str:
    """A pattern lists its members' titles: it is as private as its most private member."""
    return proposals.narrowest([state.read(state.resolve(m))[0].visibility for m in members])


def _merge(state: VaultState, keep_ref: str, absorb: list[str], prop: Proposal) -> None:
    keep = state.read(state.resolve(keep_ref))[0]
    for ref in absorb:  # before any write: the kept item must not be seen wider than what it absorbs
        other = state.read(state.resolve(ref))[0]
        if proposals.narrowest([other.visibility, keep.visibility]) != keep.visibility:
            raise InvalidInput(
                f"proposal {prop.id} would copy {other.visibility} item {other.id} into {keep.visibility} item"
                f" {keep.id}.", hint=f"Dismiss it (`engram dismiss {prop.id}`), or give the items one visibility first.",
            )
    for ref in absorb:
        other = state.read(state.resolve(ref))[0]
        known = analyse(f"{keep.title}. {keep.content}").stems
        fresh = [s for s in sentences(other.content) if not analyse(s).stems <= known]
        changes: dict[str, Any] = {
            "reinforcement_score": round(keep.reinforcement_score + 1 + other.reinforcement_score, 6),
            "provenance": [*(dict(p) for p in keep.provenance or ()),
                           provenance_entry("absorb", other, state.actor, now(), f"proposal {prop.id}")],
        }
        if fresh:
            changes["content"] = keep.content.rstrip("\n") + "\n\n" + "\n".join(fresh) + "\n"
        keep = writing.update(state, keep.id, changes, expected_version=keep.version)
        writing.update(state, other.id, {"status": "superseded", "superseded_by": keep.id, "deactivated_at": now()},
                       expected_version=other.version)
        links.link(state, keep.id, "consolidates", other.id, weight=1.0, evidence=f"proposal {prop.id}")
