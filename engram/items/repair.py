"""Repairs used by ``engram doctor --fix`` and by ``engram sync`` after a merge.

Functions of a :class:`~engram.items.state.VaultState`. Each re-reads the file under the
vault lock and writes through the canonical writer, so a repair never tears a file and
never bumps the version of content a person wrote.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from engram.errors import FormatError
from engram.items import derived
from engram.items.state import VaultState
from engram.store.format import parse_engram, restamp, write_engram
from engram.store.fsio import atomic_write
from engram.store.model import Engram, new_id, now
from engram.store.paths import slugify


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


def rewrite_item(state: VaultState, /, rel: str, **corrections: Any) -> bool:
    """Rewrite one item canonically (fresh derived section, optional field fixes).

    No version bump: nothing a person wrote changes. True if the bytes changed.
    """
    with state.lock.hold():
        item, _ = state.read(rel)
        item = replace(item, **corrections)
        lines = derived.lines_for(state.index, item)
        changed = write_engram(state.abspath(rel), item, lines)
        state.index.put_item(rel, item, "\n".join(lines))
        return changed


def restamp_file(state: VaultState, rel: str) -> bool:
    """Recompute an item's ``contentHash``/``contentSize`` and derived section, keeping
    every byte a person wrote (key order, quoting, whitespace). No version bump; True if
    the file changed."""
    with state.lock.hold():
        path = state.abspath(rel)
        data = path.read_bytes()
        item, _ = parse_engram(data, rel)
        lines = derived.lines_for(state.index, item)
        try:
            new = restamp(data, lines)
        except ValueError as exc:  # CodecError: parse_engram above already vouched for it
            raise FormatError(rel, str(exc)) from exc
        if new == data:
            return False
        atomic_write(path, new)
        fresh, _ = parse_engram(new, rel)
        state.index.put_item(rel, fresh, "\n".join(lines))
        return True


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
    """Give the item at ``rel`` a new id (a copy that shares another item's id)."""
    with state.lock.hold():
        item, _ = state.read(rel)
        fresh = replace(item, id=new_id(), version=item.version + 1, updated_at=now(), updated_by=state.actor)
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

