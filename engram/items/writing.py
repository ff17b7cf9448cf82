"""Writing items: create (with deduplication), update (with a version check), delete.

Input is validated by :mod:`engram.store.rules` before the lock is taken, so a refused
call changes nothing. Inside the lock each operation re-reads the file it changes (see
the invariants in :mod:`engram.items.state`) and records what it did in the audit log.

Deduplication (:mod:`engram.store.dedup`): an item whose title and content equal an
existing one's once case, punctuation and whitespace are ignored is a ``DUPLICATE``
and reinforces the original (unless the caller says not to: an import run twice must
change nothing) — in its file, or beside it when the original is a person's note
(:func:`engram.store.notes.persons_note`; :mod:`engram.items.sidecar`: such a note never
changes unasked); one at
least ``dedup.nearThreshold`` similar, boilerplate lines left out, is an ``UPDATE``
proposal (nothing written); anything else is ``NEW``. Two notes of a series ("Sprint 12
retro" / "Sprint 13 retro", :mod:`engram.store.titles`) are never near duplicates,
however alike their template bodies.

``create`` is the one way an item comes into being — typed by a person, sent by an
agent, or read by an importer (which may ask for a path of its own and carry the item's
identity over from another vault) — so every check on the write path applies to all.

Trust (:mod:`engram.trust`) is enforced here too: the actor's role is checked,
:func:`engram.trust.policy.admit` turns the item into what may be written (quarantined
when the screen flags instruction-shaped text; secrets and personal data bound for a
shared file refused, redacted or made private as the ``trust`` settings say), and every
refusal is audited with the rule that fired.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from engram.errors import AlreadyExists, FormatError, InvalidInput
from engram.items import sidecar
from engram.items.state import VaultState, settled
from engram.store import rules
from engram.store.dedup import boilerplate as boilerplate_of
from engram.store.dedup import candidate_match, fingerprint, prepare, similarity
from engram.store.model import Engram, new_id, now
from engram.store.notes import persons_note
from engram.store.paths import RESERVED_TOP, id_suffix
from engram.store.titles import series
from engram.trust import policy, roles
from engram.trust.policy import Admission, Event, held_message

#: ``UPDATE`` is this module's own answer to a near match (nothing written); the vault's
#: ``create`` (:func:`engram.lifecycle.creating.create`) turns it into a learn decision:
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
    #: Why the new item was quarantined (the screen's rules and sentence), when it was.
    quarantine: Event | None = None

    @property
    def id(self) -> str:
        return self.item.id


#: Given a new item and its deduplication candidates (``path → (title, body)``: the same
#: title, or sharing its rarest words) none of which nearly duplicates it, the path of one
#: the new item is about after all — the same claim, or the same subject with a changed
#: value — or None. The lifecycle layer answers with its rules
#: (:func:`engram.lifecycle.creating.same_subject_claim`).
Related = Callable[[Engram, Mapping[str, tuple[str, str]]], str | None]


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
    reinforce: bool = True,
    path: str | None = None,
    preserve: Mapping[str, Any] | None = None,
    boilerplate: Collection[int] = (),
    personal_data: str | None = None,
    related: Related | None = None,
) -> CreateResult:
    """Create an item, unless the vault already holds it.

    Returns ``NEW`` with the new item, ``DUPLICATE`` with the original (identical title
    and content; reinforced unless ``reinforce`` is false), or ``UPDATE`` with the
    near-identical candidate (nothing written). ``source`` records provenance (e.g. the
    file an import came from); ``fields`` sets other built-in fields (``situation``,
    ``steps``, ``verificationStatus``, …) validated as an update's are. Importers may also
    pass ``path`` (vault-relative: keep the source's layout; a taken path gets an id
    suffix), ``preserve`` (frontmatter keys of :data:`engram.store.rules.PRESERVABLE`: the
    id and history of an exported item), ``boilerplate`` (line keys a batch shares, see
    :class:`engram.store.dedup.LineCounts`) and ``personal_data`` (``private``, ``redact``
    or ``keep``: what becomes of personal data in this item, in place of the vault's
    ``trust.personalData``; a person's choice for one import). Instruction-shaped text is
    written with status ``quarantined`` and never deduplicated: the result carries the
    screen's verdict in ``quarantine`` and says so in ``note``. Raises InvalidInput /
    UnknownKind / SensitiveData / Forbidden / AlreadyExists (a preserved id is taken)
    before writing anything. ``related`` lets a higher layer look at the deduplication
    candidates that are not near-identical (see :data:`Related`): the one it names is
    returned as ``UPDATE`` too, nothing written.
    """
    item = build(
        state, title, content, domain=domain, kind=kind, tags=tags, summary=summary,
        importance=importance, confidence=confidence, source_type=source_type, status=status,
        visibility=visibility, extra=extra, source=source, preserve=preserve,
    )
    if fields:
        item = rules.apply_changes(item, rules.normalize_changes(fields))
    wanted = check_path(path) if path is not None else None
    with state.refusals_audited("create", item.id):
        roles.require_writer(state.actor, state.role, "create items")
        admission = admit_new(state, item, personal_data)
    item = admission.item
    with state.lock.hold():
        state.ensure_indexed()
        if preserve and preserve.get("id") and state.index.item_rows("id = ?", (item.id,)):
            raise AlreadyExists(
                f"an item with id {item.id} is already in this vault.",
                hint=f"Read it with `engram get {item.id}`, or leave the id out to add it as a new item.",
            )
        if dedupe and state.dedup_settings.enabled and not admission.quarantined:
            found = classify(state, item, boilerplate, related)
            if found is not None:
                if found.outcome == "DUPLICATE" and reinforce and found.item.path is not None:
                    if persons_note(found.item):
                        found = replace(found, note=reinforce_beside(state, found.item))
                    else:
                        found = replace(found, item=_reinforce(state, found.item))
                return found
        rel = _place_at(state, item, wanted) if wanted else state.place(item)
        item = replace(item, path=rel)
        state.write_item(item, [])
        state.audit.record(state.actor, "create", item.id, path=rel, new_version=item.version)
        record_admission(state, admission, rel)
        held = admission.quarantine
        return CreateResult("NEW", item, note=held_message(held, rel) if held else None, quarantine=held)


def admit_new(state: VaultState, item: Engram, personal_data: str | None = None) -> Admission:
    """What a new item becomes under the vault's trust settings (raises SensitiveData);
    ``personal_data`` overrides ``trust.personalData`` for this item (see ``create``)."""
    trust = state.trust
    if personal_data is not None:
        if personal_data not in policy.PERSONAL_CHOICES:
            raise InvalidInput(
                f"personal data can be imported private, redacted or kept, not {personal_data!r}.",
                field="personal_data", hint=f"Use one of: {', '.join(policy.PERSONAL_CHOICES)}.",
            )
        trust = replace(trust, personal_data=personal_data)
    return policy.admit(item, None, trust, encoder=state.encoder)


def record_admission(state: VaultState, admission: Admission, rel: str) -> None:
    """Audit what :func:`engram.trust.policy.admit` did to a write (quarantine, redaction,
    made private), with the rule and the reason."""
    for event in admission.events:
        state.audit.record(
            state.actor, event.action, admission.item.id, path=rel,
            new_version=admission.item.version, rule=event.rule, reason=event.reason,
        )


def build(
    state: VaultState,
    title: str,
    content: str = "",
    *,
    preserve: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Engram:
    """The item ``create`` would write (validated, not yet placed); raises InvalidInput."""
    stamp = now()
    defaults: dict[str, Any] = {
        "domain": (), "kind": "observation", "tags": (), "summary": "", "importance": 0.5,
        "confidence": 0.5, "source_type": "firsthand", "status": "active", "visibility": "team",
        "extra": None, "source": None,
    }
    defaults.update(fields)
    item = rules.build_new(new_id(), title=title, content=content, actor=state.actor, at=stamp, **defaults)
    return rules.preserved(item, preserve) if preserve else item


def classify(
    state: VaultState, item: Engram, boilerplate: Collection[int] = (), related: Related | None = None
) -> CreateResult | None:
    """What the vault already holds of ``item``: a DUPLICATE or UPDATE result (the
    original or the closest candidate, nothing written), or None when it is new.
    Read-only; the caller holds the lock when it is about to write."""
    fp = fingerprint(item.title, item.content)
    for row in state.index.item_rows("fingerprint = ? ORDER BY created_at, path", (fp,)):
        try:
            original, _ = state.read(row.path)
        except (FileNotFoundError, FormatError):
            continue
        if original.status in ("forgotten", "quarantined"):
            continue
        return CreateResult("DUPLICATE", original, 1.0)
    threshold = state.dedup_settings.near_threshold
    candidates = _near_candidates(state, item)
    if not candidates:
        return None
    mine = prepare(item.content)
    texts = {path: prepare(body) for path, (_title, body) in candidates.items()}
    shared = boilerplate_of(mine, texts.values(), boilerplate)
    best: tuple[float, str] | None = None
    for path, (title, _body) in candidates.items():
        if series(item.title, title):  # "Sprint 13 retro" is no version of "Sprint 12 retro"
            continue
        score = similarity(item.title, mine, title, texts[path], threshold, shared)
        if score >= threshold and (best is None or score > best[0]):
            best = (score, path)
    if best is None:
        named = related(item, candidates) if related is not None else None
        if named is None or named not in candidates:
            return None
        best = (similarity(item.title, mine, candidates[named][0], texts[named], 0.0, shared), named)
    return CreateResult("UPDATE", state.index.items("path = ?", (best[1],))[0], round(best[0], 4))


def _near_candidates(state: VaultState, item: Engram) -> dict[str, tuple[str, str]]:
    """``path → (title, body)`` of the items that may nearly duplicate ``item``: the same
    title, or sharing its rarest words (see :func:`engram.store.dedup.candidate_match`)."""
    live = "status NOT IN ('forgotten', 'quarantined')"
    rows = state.index.query(
        f"SELECT path, title, body FROM items WHERE title_key = ? AND {live} LIMIT 50",
        (item.title.casefold(),),
    )
    words = rules.candidate_words(item.title, item.content)
    settings = state.dedup_settings
    df = state.index.term_stats(words, above=settings.max_postings)[1]
    match = candidate_match(words, df, max_postings=settings.max_postings)
    if match is not None:
        rows += state.index.query(
            "SELECT path, title, body FROM items WHERE rowid IN (SELECT rowid FROM items_fts"
            f" WHERE items_fts MATCH ? ORDER BY rank LIMIT ?) AND {live}",
            (match, settings.candidates),
        )
    return {row["path"]: (row["title"], row["body"]) for row in rows}


def check_path(path: str) -> str:
    """A requested vault-relative item path, normalised; refuses what cannot be one."""
    parts = [p for p in path.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or not parts[-1].endswith(".md") or any(p == ".." or p.startswith(".") for p in parts):
        raise InvalidInput(
            f"path {path!r} is not a vault-relative Markdown file.",
            field="path",
            hint="e.g. People/Alice.md (no '..', no hidden folders).",
        )
    if len(parts) > 1 and parts[0].casefold() in RESERVED_TOP:
        raise InvalidInput(
            f"path {path!r} starts with the reserved folder {parts[0]!r}.",
            field="path",
            hint="Import it under another folder (e.g. --domain imported).",
        )
    return "/".join(parts)


def _place_at(state: VaultState, item: Engram, wanted: str) -> str:
    """``wanted`` when it is free (a private item still goes under ``private/``), else
    the same name with the id suffix that ``place`` would give it."""
    rel = ("private/" + wanted) if item.visibility == "private" else wanted
    if not (state.root / rel).exists():  # check_path refused ".."; the write guards symlinks
        return rel
    stem = rel[: -len(".md")]
    return state.abspath(f"{stem}-{id_suffix(item.id)}.md").relative_to(state.root).as_posix()


def reinforce_beside(state: VaultState, note: Engram) -> str:
    """Reinforce a person's note (:func:`engram.store.notes.persons_note`): the count is
    kept beside it (:mod:`engram.items.sidecar`), never written into it. Returns what to
    tell the caller."""
    sidecar.add(state.state_dir, note.id, sidecar.Kept(reinforcement=1.0))
    state.audit.record(state.actor, "reinforce", note.id, path=note.path, fields=("reinforcementScore",),
                       note="kept in .engram/: a person's note")
    return (
        f"Identical to {note.id} ({note.path}), a note a person wrote (engram writes into it only when they ask):"
        " nothing was written; its reinforcement is kept beside it, in .engram/ on this machine."
    )


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
    settling: bool = False,
) -> Engram:
    """Apply ``changes`` (field names in snake_case or camelCase) to an item.

    ``settling``: the caller has seen the org vault hold this team item, so marking it
    ``org`` is allowed to any writer (:func:`engram.trust.roles.settles`).

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
        roles.check_update(state.actor, state.role, current, changed, updated.status,
                           settles_to=updated.visibility if settling else None, retire=state.roles.retire)
        admission = policy.admit(updated, current, state.trust, encoder=state.encoder)
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
        roles.check_delete(state.actor, state.role, current, retire=state.roles.retire)
        neighbours = state.neighbours(current.id)
        bin_dir = state.trash_bin(current.id)
        for syn in state.incident(current.id):
            srel = state.synapse_relpath(syn)
            state.to_trash(srel, bin_dir)
            state.audit.record(state.actor, "unlink", syn.id, target="synapse", path=srel)
        state.to_trash(rel, bin_dir)
        for neighbour in neighbours:
            state.refresh_derived(neighbour)
        state.audit.record(state.actor, "delete", current.id, path=rel, old_version=current.version)
        return current
