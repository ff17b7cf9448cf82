"""Writing items: create (with deduplication), update (with a version check), delete.

Input is validated by :mod:`engram.store.rules` before the lock is taken, so a refused
call changes nothing. Inside the lock each operation re-reads the file it changes (see
the invariants in :mod:`engram.items.state`) and records what it did in the audit log.

Deduplication (:mod:`engram.store.dedup`): an item whose title and content equal an
existing one's once case, punctuation and whitespace are ignored is a ``DUPLICATE``
and reinforces the original; one at least ``dedup.nearThreshold`` similar is an
``UPDATE`` proposal (nothing written); anything else is ``NEW``.

Trust (:mod:`engram.trust`) is enforced here, the lowest point every item write passes
(the CLI, MCP, import, learn, distill and the viewer all call these functions): the
actor's role is checked, :func:`engram.trust.policy.admit` turns the item into what may
be written (quarantined when the screen flags instruction-shaped text; secrets and
personal data bound for a shared file refused, redacted or made private as the
``trust`` settings say), and every refusal is audited with the rule that fired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from engram.errors import FormatError
from engram.items.state import VaultState, settled
from engram.store import rules
from engram.store.dedup import candidate_match, fingerprint, similarity
from engram.store.fsio import prune_empty_dirs
from engram.store.model import Engram, new_id, now
from engram.trust import policy, roles
from engram.trust.policy import Admission

#: ``UPDATE`` is this module's own answer to a near match (nothing written); the vault's
#: ``create`` (:func:`engram.lifecycle.learning.create`) turns it into a learn decision:
#: ``EXTENDED``, ``SUPERSEDED``, ``DISPUTED``, or ``NEW`` linked to the near match.
Outcome = Literal["NEW", "DUPLICATE", "UPDATE", "EXTENDED", "SUPERSEDED", "DISPUTED"]


@dataclass(frozen=True, slots=True)
class CreateResult:
    """What ``create`` did: wrote a NEW item, reinforced a DUPLICATE, or proposes an UPDATE.

    ``item`` is the new item, the reinforced original, or the candidate to update.
    """

    outcome: Outcome
    item: Engram
    similarity: float | None = None
    #: Why, in words, when the outcome came from a learn decision (see ``Outcome``).
    note: str | None = None
    #: The existing item a learn decision acted on or linked to.
    related: str | None = None

    @property
    def id(self) -> str:
        return self.item.id


def create(
    state: VaultState,
    title: str,
    content: str = "",
    *,
    domain: Sequence[str] = (),
    kind: str = "observation",
    tags: Sequence[str] = (),
    summary: str = "",
    importance: float = 0.5,
    confidence: float = 0.5,
    source_type: str = "firsthand",
    status: str = "active",
    visibility: str = "team",
    extra: Mapping[str, Any] | None = None,
    source: Any = None,
    dedupe: bool = True,
    fields: Mapping[str, Any] | None = None,
) -> CreateResult:
    """Create an item, unless the vault already holds it.

    Returns ``NEW`` with the new item, ``DUPLICATE`` with the reinforced original
    (identical title and content), or ``UPDATE`` with the near-identical candidate
    (nothing written). ``source`` records provenance (e.g. the file an import came
    from); ``fields`` sets other built-in fields (``situation``, ``steps``,
    ``verificationStatus``, …) validated as an update's are. Instruction-shaped text is
    written with status ``quarantined``. Raises InvalidInput / UnknownKind /
    SensitiveData / Forbidden before writing anything.
    """
    stamp = now()
    item = rules.build_new(
        new_id(),
        title=title,
        content=content,
        domain=domain,
        kind=kind,
        tags=tags,
        summary=summary,
        importance=importance,
        confidence=confidence,
        source_type=source_type,
        status=status,
        visibility=visibility,
        extra=extra,
        source=source,
        actor=state.actor,
        at=stamp,
    )
    if fields:
        item = rules.apply_changes(item, rules.normalize_changes(fields))
    with state.refusals_audited("create", item.id):
        roles.require_writer(state.actor, state.role, "create items")
        admission = admit_new(state, item)
    item = admission.item
    with state.lock.hold():
        state.ensure_indexed()
        if dedupe and state.dedup_settings.enabled and not admission.quarantined:
            found = _find_duplicate(state, item)
            if found is not None:
                return found
        rel = state.place(item)
        item = replace(item, path=rel)
        state.write_item(item, [])
        state.audit.record(state.actor, "create", item.id, path=rel, new_version=1)
        record_admission(state, admission, rel)
        return CreateResult("NEW", item)


def admit_new(state: VaultState, item: Engram) -> Admission:
    """What a new item becomes under the vault's trust settings (raises SensitiveData)."""
    return policy.admit(item, None, state.trust)


def record_admission(state: VaultState, admission: Admission, rel: str) -> None:
    """Audit what :func:`engram.trust.policy.admit` did to a write (quarantine, redaction,
    made private), with the rule and the reason."""
    for event in admission.events:
        state.audit.record(
            state.actor, event.action, admission.item.id, path=rel,
            new_version=admission.item.version, rule=event.rule, reason=event.reason,
        )


def _find_duplicate(state: VaultState, item: Engram) -> CreateResult | None:
    fp = fingerprint(item.title, item.content)
    for row in state.index.item_rows("fingerprint = ? ORDER BY created_at, path", (fp,)):
        try:
            original, _ = state.read(row.path)
            if original.status in ("forgotten", "quarantined"):
                continue
            original = state.claim(row.path)
        except (FileNotFoundError, FormatError):
            continue
        return CreateResult("DUPLICATE", _reinforce(state, original), 1.0)
    threshold = state.dedup_settings.near_threshold
    best: tuple[float, Engram] | None = None
    for candidate in _near_candidates(state, item):
        score = similarity(item.title, item.content, candidate.title, candidate.content, threshold)
        if score >= threshold and (best is None or score > best[0]):
            best = (score, candidate)
    if best is not None:
        return CreateResult("UPDATE", best[1], round(best[0], 4))
    return None


def _near_candidates(state: VaultState, item: Engram) -> list[Engram]:
    """Items that may nearly duplicate ``item``: the same title, or sharing its rarest
    words (see :func:`engram.store.dedup.candidate_match`)."""
    live = "status NOT IN ('forgotten', 'quarantined')"
    found = state.index.items(f"title_key = ? AND {live}", (item.title.casefold(),))
    words = rules.candidate_words(item.title, item.content)
    match = candidate_match(words, state.index.term_stats(words)[1])
    if match is not None:
        seen = {c.path for c in found}
        found += [
            c
            for c in state.index.items(
                f"rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?"
                f" ORDER BY rank LIMIT ?) AND {live}",
                (match, state.dedup_settings.candidates),
            )
            if c.path not in seen
        ]
    return found


def _reinforce(state: VaultState, original: Engram) -> Engram:
    assert original.path is not None
    updated = replace(
        settled(original, state.actor, bump=False),
        reinforcement_score=round(original.reinforcement_score + 1.0, 6),
        version=original.version + 1,
        updated_at=now(),
        updated_by=state.actor,
    )
    state.write_item(updated, None)
    state.audit.record(
        state.actor,
        "reinforce",
        original.id,
        path=original.path,
        old_version=original.version,
        new_version=updated.version,
        fields=("reinforcementScore",),
    )
    return updated


def update(
    state: VaultState,
    ref: str,
    changes: Mapping[str, Any],
    *,
    expected_version: int | None = None,
) -> Engram:
    """Apply ``changes`` (field names in snake_case or camelCase) to an item.

    ``expected_version`` is the version the caller read; if the item has moved on,
    VersionConflict says which versions and fields changed since. Changing the title,
    domain or visibility moves the file; the id stays. An update that changes nothing
    writes nothing. Raises NotFound, InvalidInput, VersionConflict.
    """
    normalized = rules.normalize_changes(changes)
    with state.refusals_audited("update", ref) as target, state.lock.hold():
        state.ensure_indexed()
        rel = state.resolve(ref)
        current = state.claim(rel)
        target.id = current.id
        state.check_version(current, expected_version)
        updated = rules.apply_changes(current, normalized)
        changed = rules.changed_fields(current, updated)
        if not changed:
            return current
        roles.check_update(state.actor, state.role, current, changed, updated.status)
        admission = policy.admit(updated, current, state.trust)
        updated = admission.item
        changed = rules.changed_fields(current, updated)
        updated = replace(updated, version=current.version + 1, updated_at=now(), updated_by=state.actor)
        updated = settled(updated, state.actor, bump=False)
        # engram moves a file only when it changes what the path is made of; a note a
        # person renamed or moved keeps the person's path otherwise.
        moving = {"title", "domainTags", "visibility"} & set(changed)
        new_rel = state.place(updated, current=rel) if moving else rel
        updated = replace(updated, path=new_rel)
        if new_rel != rel:
            state.move_item(current, updated)
        else:
            state.write_item(updated, None)
        state.audit.record(
            state.actor,
            "update",
            current.id,
            path=new_rel,
            old_version=current.version,
            new_version=updated.version,
            fields=changed,
        )
        record_admission(state, replace(admission, item=updated), new_rel)
        return updated


def delete(state: VaultState, ref: str, *, expected_version: int | None = None) -> Engram:
    """Move an item and its synapses to ``.engram/trash/``; return what was deleted.

    Only the item's author and curators may delete it (Forbidden otherwise)."""
    with state.refusals_audited("delete", ref) as target, state.lock.hold():
        state.ensure_indexed()
        rel = state.resolve(ref)
        current, _ = state.read(rel)
        target.id = current.id
        state.check_version(current, expected_version)
        roles.check_delete(state.actor, state.role, current)
        neighbours = state.neighbours(current.id)
        bin_dir = state.trash_bin(current.id)
        for syn in state.incident(current.id):
            srel = state.synapse_relpath(syn)
            state.to_trash(srel, bin_dir)
            state.audit.record(state.actor, "unlink", syn.id, target="synapse", path=srel)
        state.to_trash(rel, bin_dir)
        prune_empty_dirs(state.abspath(rel).parent, state.root)
        for neighbour in neighbours:
            state.refresh_derived(neighbour)
        state.audit.record(state.actor, "delete", current.id, path=rel, old_version=current.version)
        return current
