"""Repairs used by ``engram doctor --fix`` and by ``engram sync`` after a merge.

Functions of a :class:`~engram.items.state.VaultState`. Each re-reads the file under the
vault lock and writes through the canonical writer, so a repair never tears a file and
never bumps the version of content a person wrote.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from engram.errors import FormatError
from engram.items import derived, sidecar
from engram.items.state import VaultState, settled
from engram.store.format import is_canonical, read_bytes, write_engram
from engram.store.fsio import atomic_write
from engram.store.model import Engram, new_id, now
from engram.store.notes import Note, persons_note, read_note, split_note
from engram.store.paths import slugify
from engram.store.surgical import edit_frontmatter
from mergedriver import codec
from mergedriver.yamlio import Number


def rewrite_derived(state: VaultState, item: Engram) -> bool:
    """Write ``item`` (which must carry its path) canonically with a fresh derived
    section and index it; True if the bytes on disk changed. No version bump."""
    assert item.path is not None
    with state.lock.hold():
        lines = derived.lines_for(state.index, item)
        changed = write_engram(state.abspath(item.path), item, lines)
        state.index.put_item(item.path, item, "\n".join(lines))
        return changed


# ------------------------------------------------------------------ maintenance
# Used by `engram doctor --fix`; each re-reads the file under the lock.


def rewrite_item(state: VaultState, /, rel: str, *, record: bool = True, **corrections: Any) -> bool:
    """Rewrite one item canonically (fresh derived section, optional field fixes).

    No version bump for the rewrite itself. With ``record`` (a person asked: doctor,
    conflict resolution) content edited outside engram since its last write is recorded
    (hash brought up to date, a new version); without it (the journals folded into
    frontmatter) such an edit keeps its stale hash for sync's staging to vet — it may be
    a body an editor is still saving. True if the bytes changed.
    """
    with state.lock.hold():
        item, _ = state.read(rel)
        item = replace(settled(item, state.actor, bump=True) if record else item, **corrections)
        lines = derived.lines_for(state.index, item)
        changed = write_engram(state.abspath(rel), item, lines)
        state.index.put_item(rel, item, "\n".join(lines))
        return changed


def relocate(state: VaultState, rel: str) -> str:
    """Move an item whose path drifted from its domain/slug/visibility; new path."""
    with state.lock.hold():
        item, _ = state.read(rel)
        if item.slug is None:
            stem = Path(rel).stem
            item = replace(item, slug=stem if slugify(stem) == stem else slugify(item.title))
        target = state.place(item, current=rel)
        if target != rel:
            state.move_item(item, replace(item, path=target))
            state.audit.record(state.actor, "move", item.id, path=target, fields=("path",))
        return target


def reassign_id(state: VaultState, rel: str) -> str:
    """Give the item at ``rel`` a new id (a copy that shares another item's id). A person's
    note (not in engram's canonical form) has its ``id`` line changed and nothing else."""
    with state.lock.hold():
        item, _ = state.read(rel)
        if is_canonical(read_bytes(state.abspath(rel), rel)):
            fresh = replace(item, id=new_id(), version=item.version + 1, updated_at=now(), updated_by=state.actor)
        else:
            fresh = replace(item, id=new_id())
        state.write_item(fresh, None)
        state.audit.record(
            state.actor, "reassign-id", fresh.id, path=rel, old_version=item.version,
            new_version=fresh.version, fields=("id",),
        )
        return fresh.id


def discard_file(state: VaultState, rel: str, reason: str) -> None:
    """Move one vault file to ``.engram/trash/`` (e.g. a dangling synapse)."""
    with state.lock.hold():
        state.to_trash(rel, state.trash_bin("doctor"))
        state.audit.record(state.actor, "discard", Path(rel).stem, target="file", path=rel, fields=(reason,))



# ------------------------------------------------------------------ outside edits
# Used by `engram sync` before it commits. A person's content edits are recorded by
# sync's staging (engram.team.staging), only once the file has been vetted as whole.


def follow_moves(state: VaultState) -> int:
    """Regenerate the derived sections that name an item a person renamed or moved (the
    item keeps its new path); returns how many items were looked at."""
    with state.lock.hold():
        moved = state.index.take_moves()
        touched = sorted({n for item_id in moved for n in state.neighbours(item_id)} | set(moved))
        for item_id in touched:
            state.refresh_derived(item_id)
        return len(touched)


# ------------------------------------------------------------------ a person's note
# What an older engram wrote into a note a person keeps: taken out only when they say yes.


#: Bytes every note holding residue holds: a counter's name or the derived heading.
_RESIDUE_MARKS = (*(key.encode() for key in sidecar.COUNTERS), codec.DERIVED_HEADING.encode())


def may_hold_residue(data: bytes) -> bool:
    """False when ``data`` cannot hold residue (none of its names or the derived heading
    appear in it): a test on bytes, so most notes need no parsing."""
    return any(mark in data for mark in _RESIDUE_MARKS)


def residue(data: bytes, rel: str) -> tuple[tuple[str, ...], bool]:
    """:func:`residue_of` the note ``data`` holds; nothing for a file that does not read."""
    try:
        note = read_note(data, rel)
    except FormatError:
        return (), False
    return residue_of(note)


def residue_of(note: Note) -> tuple[tuple[str, ...], bool]:
    """The counters an engram before issue 28 folded into a person's note that it holds,
    and whether it holds a ``## Synapses (derived)`` section; nothing for engram's own item.

    A property is such a counter when it has one of the counters' names
    (:data:`engram.items.sidecar.COUNTERS`: ``reinforcementScore``, ``retrievalCount``,
    ``lastRetrievedAt``, …, engram's own vocabulary) *and* a value of the shape engram
    writes there (:func:`_engram_wrote`): a whole number, 0 or more, for a count; a number
    for the score; engram's UTC timestamp for a ``last…At``. Zero counts: an older engram
    wrote a counter whenever it changed, down to 0 too (a score decayed, a count a merge
    settled), and its 0 is as much engram's as its 3. The value's shape keeps out a
    property a person wrote under such a name with a value of their own kind
    (``retrievalCount: manual``, ``lastRetrievedAt: last week``, ``failedUses: "2"``,
    ``retrievalCount: -1``, a template's empty ``failedUses:``): engram never wrote one
    of those. Either way nothing leaves the note without its owner's yes."""
    if not persons_note(note.item):
        return (), False
    found = tuple(key for key in sidecar.COUNTERS if key in note.properties and _engram_wrote(key, note.properties[key]))
    return found, bool(note.derived)


def _engram_wrote(key: str, value: Any) -> bool:
    """Whether ``value`` (as :func:`mergedriver.codec.load_raw` reads the frontmatter:
    a plain number is a :class:`~mergedriver.yamlio.Number`, quoted text a ``str``) has
    the shape engram's writer gives counter ``key``."""
    if key.endswith("At"):  # lastRetrievedAt, …: engram's instant, unquoted text
        try:
            return type(value) is str and codec.format_time(value) == value
        except codec.CodecError:
            return False
    if isinstance(value, Number):
        number: Any = value.value()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value  # a mapping engram rendered itself
    else:
        return False  # quoted text, yes/no, a list, empty: a person's value
    if key == "reinforcementScore":
        return math.isfinite(number)
    return isinstance(number, int) and number >= 0


def describe_residue(keys: tuple[str, ...], section: bool) -> str:
    """What :func:`residue_of` found, for a person: "the counters a, b and a '## Synapses
    (derived)' section"."""
    what = [f"the counters {', '.join(keys)}"] if keys else []
    what += ["a '## Synapses (derived)' section"] if section else []
    return " and ".join(what)


def without_residue(data: bytes, rel: str) -> bytes | None:
    """``data`` without that residue, every other byte kept (:mod:`engram.store.surgical`);
    None when there is none or it cannot be taken out in place."""
    keys, section = residue(data, rel)
    if not keys and not section:
        return None
    body = None
    if section:
        _, text = split_note(codec.decode(data))
        body = codec.split_derived(text)[0]
    try:
        return edit_frontmatter(data, {}, keys, body=body)
    except codec.CodecError:
        return None


def clear_residue(state: VaultState, rel: str) -> bool:
    """Take the residue out of a person's note (they said yes: ``engram doctor --accept``
    or the prompt of ``--fix``); its counters move beside the note, into
    ``.engram/notes.json``, so recall weighs the note as before. True if it changed."""
    with state.lock.hold():
        path = state.abspath(rel)
        data = read_bytes(path, rel)
        cleaned = without_residue(data, rel)
        if cleaned is None:
            return False
        keys, _ = residue(data, rel)
        item = read_note(data, rel).item  # the counters as the file's own item reads them
        if keys:
            sidecar.add(state.state_dir, item.id, sidecar.Kept(
                reinforcement=item.reinforcement_score, retrievals=item.retrieval_count,
                last_retrieved=item.last_retrieved_at, effective=item.effective_retrievals,
                failed=item.failed_uses, last_effective=item.last_effective_at, last_failed=item.last_failed_at,
            ))
        atomic_write(path, cleaned)
        state.index.refresh_paths([rel])
        state.audit.record(state.actor, "clear-residue", item.id, path=rel, fields=keys)
        return True
