"""Synapse operations of the vault: link, unlink, and looking edges up.

Functions of a :class:`~engram.items.state.VaultState`. An edge is one YAML file named
by the hash of its endpoints and kind, so creating an existing edge merges its evidence
instead of duplicating it. Edges that touch a private item are stored under
``private/`` and never named in a shared file's derived section.

A person's note (:func:`engram.store.notes.persons_note`) never gets a derived section:
a link that names it is a synapse file, shown on the other end. A note with no id of its
own gets one only when a caller asks for a link that names it (``engram link``,
``synapse_create``: the id line is written, see
:meth:`~engram.items.state.VaultState.claim`), so the link survives renames. A link
engram makes on its own — a learn decision, an import — passes ``adopt=False``: the
synapse file names the note's derived id and the note is left alone. Adopting the note
later re-points such links to its new id.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, replace
from typing import Any

from engram.errors import InvalidInput, NotFound, UnknownKind
from engram.index.linktable import LinkRow
from engram.items.state import VaultState
from engram.store import rules
from engram.store.fsio import prune_empty_dirs, remove
from engram.store.model import SYMMETRIC_KINDS, SYNAPSE_KINDS, Evidence, Synapse, now, synapse_id
from engram.trust import policy, roles


def link(
    state: VaultState,
    source_ref: str,
    kind: str,
    target_ref: str,
    *,
    weight: float | None = None,
    evidence: str | None = None,
    confidence: float | None = None,
    adopt: bool = True,
) -> Synapse:
    """Create the edge ``source --kind--> target``, or merge into the existing one.

    Re-creating an edge adds the new evidence (a set, keyed by description and
    author) instead of duplicating the edge; a given ``weight`` replaces the old one.
    Re-creating it with nothing new writes nothing. A writer may not supersede an item
    someone else created. ``adopt``: the caller asked for this link, so a note that is
    not adopted is adopted first; False (a link engram makes on its own) names such a note
    by its derived id and leaves it alone. Raises UnknownKind, NotFound (either
    endpoint), InvalidInput (a self-link), Forbidden, SensitiveData and
    InstructionShaped (the evidence).
    """
    return _link(state, source_ref, kind, target_ref, weight, evidence, confidence, adopt)[0]


def ensure(
    state: VaultState,
    source_ref: str,
    kind: str,
    target_ref: str,
    *,
    weight: float | None = None,
    evidence: str | None = None,
) -> bool:
    """:func:`link`, for importers: True when it wrote something (a new edge, new
    evidence or a new weight), False when the edge was already so. A person's note that
    is not adopted is linked beside it (``adopt=False``)."""
    return _link(state, source_ref, kind, target_ref, weight, evidence, None, False)[1]


def _link(
    state: VaultState,
    source_ref: str,
    kind: str,
    target_ref: str,
    weight: float | None,
    evidence: str | None,
    confidence: float | None,
    adopt: bool,
) -> tuple[Synapse, bool]:
    if kind not in SYNAPSE_KINDS:
        raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
    weight = rules.unit("weight", weight) if weight is not None else None
    confidence = rules.unit("confidence", confidence) if confidence is not None else None
    if evidence is not None:
        evidence = rules.text("evidence", evidence, rules.MAX_SUMMARY_CHARS, required=True)
    with state.refusals_audited("link", f"{source_ref} {kind} {target_ref}", target="synapse") as refusal, \
            state.lock.hold():
        roles.require_writer(state.actor, state.role, "link items")
        state.ensure_indexed()
        # A typed link names both ends by id: a note with only a derived id is adopted
        # when the caller asked for this link, else named by its derived id (see above).
        end = state.claim if adopt else (lambda rel: state.read(rel)[0])
        source = end(state.resolve(source_ref))
        target = end(state.resolve(target_ref))
        if source.id == target.id:
            raise InvalidInput(
                f"an item cannot link to itself ({source.id}).", hint="Link two different items."
            )
        a, b = (source.id, target.id)
        if kind in SYMMETRIC_KINDS:
            a, b = sorted((a, b))
        sid = synapse_id(a, b, kind)
        refusal.id = sid
        if kind == "supersedes":
            roles.check_supersede(state.actor, state.role, target, retire=state.roles.retire)
        if evidence is not None:
            shared = "private" not in (source.visibility, target.visibility)
            evidence = policy.admit_text(evidence, "evidence", state.trust, shared=shared, encoder=state.encoder)
        stamp = now()
        existing = state.existing_synapse(sid)
        entries = builtins.list(existing.evidence) if existing else []
        if evidence is not None and not any(
            e.description == evidence and e.added_by == state.actor for e in entries
        ):
            entries.append(Evidence(evidence, state.actor, confidence, stamp))
        if existing is not None:
            if len(entries) == len(existing.evidence) and weight in (None, existing.weight):
                return existing, False  # nothing new: an import run twice writes nothing
            syn = replace(
                existing,
                weight=weight if weight is not None else existing.weight,
                evidence=tuple(entries),
                updated_at=stamp,
                updated_by=state.actor,
            )
            action = "relink"
        else:
            syn = Synapse(
                id=sid,
                source=a,
                target=b,
                kind=kind,
                weight=weight if weight is not None else 0.5,
                evidence=tuple(entries),
                created_by=state.actor,
                created_at=stamp,
                updated_at=stamp,
            )
            action = "link"
        _store(state, syn, action, private="private" in (source.visibility, target.visibility))
        return state.existing_synapse(sid) or syn, True


def adopt_synapse(state: VaultState, syn: Synapse) -> bool:
    """Bring in an edge from another engram vault as it is (id, weight, evidence,
    authors), or add its evidence to the edge already here. True when something was
    written. Raises NotFound when an endpoint is not in this vault, UnknownKind, and, as
    :func:`link` does for new evidence, Forbidden, SensitiveData and InstructionShaped."""
    if syn.kind not in SYNAPSE_KINDS:
        raise UnknownKind(syn.kind, SYNAPSE_KINDS, "synapse kind")
    with state.refusals_audited("link", syn.id, target="synapse"), state.lock.hold():
        roles.require_writer(state.actor, state.role, "link items")
        state.ensure_indexed()
        ends = {row.id: row for row in state.index.item_rows("id IN (?, ?)", (syn.source, syn.target))}
        missing = [end for end in (syn.source, syn.target) if end not in ends]
        if missing:
            raise NotFound(f"no item {missing[0]} for edge {syn.id}.", ref=missing[0], hint="Import the item first.")
        expected = synapse_id(syn.source, syn.target, syn.kind)
        syn = replace(syn, id=expected)  # the id follows the endpoints, whatever the file said
        existing = state.existing_synapse(expected)
        if existing is not None:
            have = {(e.description, e.added_by) for e in existing.evidence}
            new = [e for e in syn.evidence if (e.description, e.added_by) not in have]
            if not new:
                return False
            syn = replace(existing, evidence=existing.evidence + tuple(new), updated_at=now(), updated_by=state.actor)
        visibility = state.index.query("SELECT visibility FROM items WHERE id IN (?, ?)", (syn.source, syn.target))
        private = any(r["visibility"] == "private" for r in visibility)
        carried = existing.evidence if existing else ()
        syn = replace(syn, evidence=carried + tuple(  # the screens every evidence written here passes
            replace(e, description=policy.admit_text(e.description, "evidence", state.trust, shared=not private, encoder=state.encoder))
            for e in syn.evidence[len(carried):]
        ))
        _store(state, syn, "relink" if existing else "link", private=private)
        return True


def _store(state: VaultState, syn: Synapse, action: str, *, private: bool) -> None:
    rel = state.store_synapse(syn, private=private)
    state.audit.record(state.actor, action, syn.id, target="synapse", path=rel)
    state.refresh_derived(syn.source)
    state.refresh_derived(syn.target)


def unlink(state: VaultState, source_ref: str, kind: str, target_ref: str) -> Synapse:
    """Remove the edge ``source --kind--> target``; return it. Raises NotFound."""
    if kind not in SYNAPSE_KINDS:
        raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
    with state.refusals_audited("unlink", f"{source_ref} {kind} {target_ref}", target="synapse") as refusal, \
            state.lock.hold():
        state.ensure_indexed()
        source = state.resolve_id(source_ref)
        target = state.resolve_id(target_ref)
        a, b = sorted((source, target)) if kind in SYMMETRIC_KINDS else (source, target)
        sid = synapse_id(a, b, kind)
        refusal.id = sid
        existing = state.existing_synapse(sid)
        if existing is None:
            raise NotFound(
                f"there is no {kind} edge from {source} to {target}.",
                ref=sid,
                hint=f"`engram synapses {source}` lists its edges.",
            )
        roles.check_unlink(state.actor, state.role, existing.created_by, sid)
        for rel in state.index.synapse_paths(sid):
            remove(state.abspath(rel))
            # git keeps no empty folders: leaving one would make this clone differ from a peer's
            prune_empty_dirs(state.abspath(rel).parent, state.root)
            state.index.drop(rel)
            state.audit.record(state.actor, "unlink", sid, target="synapse", path=rel)
        state.refresh_derived(source)
        state.refresh_derived(target)
        return existing


def synapse(state: VaultState, synapse_id_: str) -> Synapse:
    """The synapse with this id (``syn-`` + 16 hex digits). Raises NotFound."""
    state.ensure_fresh()
    found = state.existing_synapse(synapse_id_)
    if found is None:
        raise NotFound(
            f"no synapse {synapse_id_!r}.", ref=synapse_id_, hint="`engram synapses ITEM` lists edges."
        )
    return found


def synapses(
    state: VaultState, endpoint: str | None = None, *, kind: str | None = None, direction: str = "both"
) -> builtins.list[Synapse]:
    """Edges touching ``endpoint`` (any ref), optionally of one kind / direction."""
    state.ensure_fresh()
    clauses: builtins.list[str] = []
    params: builtins.list[Any] = []
    if kind is not None:
        if kind not in SYNAPSE_KINDS:
            raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
        clauses.append("kind = ?")
        params.append(kind)
    if endpoint is not None:
        if direction not in ("both", "out", "in"):
            raise InvalidInput(
                f"direction must be both, out or in, not {direction!r}.", hint="Use one of them."
            )
        item_id = state.resolve_id(endpoint)
        sides = {"out": ["source"], "in": ["target"], "both": ["source", "target"]}[direction]
        clauses.append("(" + " OR ".join(f"{side} = ?" for side in sides) + ")")
        params.extend([item_id] * len(sides))
    return state.index.synapses(" AND ".join(clauses) or "1", params)


@dataclass(frozen=True, slots=True)
class WikiLinks:
    """The wikilinks a note holds (``outgoing``, every one, resolved or not) and the
    resolved ones that point at it (``incoming``, in the linking notes' path order, all
    of them or the first ``limit``); derived from the text, not synapses.
    ``incoming_notes`` counts the notes that link to it, however many ``incoming`` holds."""

    outgoing: tuple[LinkRow, ...]
    incoming: tuple[LinkRow, ...]
    incoming_notes: int = 0


_INCOMING = "target_id = ? AND status = 'ok' AND src_id != target_id"


def wikilinks(state: VaultState, ref: str, *, limit: int | None = None) -> WikiLinks:
    """The ``links_to`` edges typed in notes around one item (see :class:`WikiLinks`);
    ``limit`` bounds the incoming ones read (a note can have thousands: a page shows a
    few hundred). Raises NotFound or InvalidInput (an ambiguous reference, a negative limit)."""
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise InvalidInput(f"limit must be 0 or more, not {limit!r}.", field="limit", hint="e.g. 200")
    state.ensure_fresh()
    item_id = state.resolve_id(ref)
    incoming = tuple(state.index.links(_INCOMING, (item_id,), limit))
    if limit is None or len(incoming) < limit:
        notes = len({row.source_id for row in incoming})
    else:
        notes = int(state.index.query(f"SELECT count(DISTINCT src_id) AS n FROM links WHERE {_INCOMING}", (item_id,))[0]["n"])
    return WikiLinks(tuple(state.index.links("src_id = ?", (item_id,))), incoming, notes)
