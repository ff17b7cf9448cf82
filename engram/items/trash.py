"""The trash: what ``delete`` moved aside, brought back by :func:`restore`, or let go by
:func:`purge`.

``delete`` moves an item and its synapses into ``.engram/trash/<id>/<deleted at>/``,
each file at its vault-relative path (:meth:`VaultState.to_trash`). The trash is local to
the clone (``.engram/`` is never committed): a restore on this machine is a new change the
next ``engram sync`` shares.

- :func:`restore` — for whoever may delete the item (its author, unless ``retire:
  curator``; a curator; :func:`engram.trust.roles.check_restore`) — moves the newest
  copy of an item back — to its old path, or beside it
  with an id suffix when that path is taken now — re-indexes it, brings back each of its
  synapses whose other end is in the vault (the others stay in the trash and are named),
  regenerates the derived link sections of both ends, and records it in the audit log.
  An id the vault holds again is refused: nothing is overwritten. A *forgotten* item
  (``purge`` trashes only those) comes back ``active`` — or ``superseded`` when it has a
  successor — as :func:`engram.lifecycle.forgetting.restore` would bring it back: one
  restore undoes the purge and the forgetting.
- :func:`entries` lists the trash; a quarantined item's title is withheld from every
  role but a curator's, as recall withholds its text.
- :func:`purge` deletes trashed copies older than an age, for good, and records each.

A merge or a pull that removes an item (deleted on another clone) keeps this clone's
last copy in a bin of that id too, and edges it removed because their item went with
it (:func:`engram.team.settle.keep_in_trash`), so every clone can list and restore what
a teammate deleted; a restore brings back the item's edges from all of its bins.

Both hold the vault lock.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram.errors import Forbidden, FormatError, InvalidInput, NotFound, StorageError
from engram.items import writing
from engram.items.state import VaultState
from engram.store.format import read_engram, read_synapse
from engram.store.model import Engram, Synapse, instant
from engram.trust import roles

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True, slots=True)
class TrashEntry:
    """One deleted item as the trash holds it."""

    id: str
    title: str
    path: str  # where it lived
    deleted_at: str
    synapses: int
    folder: Path
    status: str = "active"  # the trashed copy's (a quarantined one's title is withheld)


@dataclass(frozen=True, slots=True)
class Restored:
    id: str
    path: str
    synapses: tuple[str, ...]  # synapse ids brought back
    left: tuple[str, ...]  # synapse ids left in the trash (the other end is gone)
    status: str = "active"  # the item's status now
    note: str | None = None  # why it is not active, when it is not


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h``, ``2w``, ``90m``, ``45s`` as a duration; raises InvalidInput."""
    match = _AGE.match(text)
    if match is None:
        raise InvalidInput(f"{text!r} is not an age.", field="older_than", hint="e.g. 30d, 12h, 2w.")
    return timedelta(seconds=float(match[1]) * _UNITS[match[2]])


def entries(state: VaultState) -> list[TrashEntry]:
    """Every deleted item the trash holds, newest first. A quarantined item's title is
    withheld from every role but a curator's, as recall withholds its text."""
    found: list[TrashEntry] = []
    base = state.state_dir / "trash"
    if not base.is_dir():
        return []
    withhold: bool | None = None
    for folder in sorted(p for p in base.glob("*/*") if p.is_dir()):
        entry = _entry(folder)
        if entry is None:
            continue
        if entry.status == "quarantined":
            withhold = state.role != "curator" if withhold is None else withhold
            if withhold:
                entry = replace(entry, title=roles.WITHHELD_TITLE)
        found.append(entry)
    return sorted(found, key=lambda e: (e.deleted_at, e.id), reverse=True)


def _entry(folder: Path) -> TrashEntry | None:
    items = [p for p in folder.rglob("*.md") if "synapses" not in p.relative_to(folder).parts]
    if not items:
        return None
    rel = items[0].relative_to(folder).as_posix()
    status = "active"
    try:
        item, _ = read_engram(items[0], rel)
        title, status = item.title, item.status
    except (FormatError, OSError):
        title = "(unreadable)"
    synapses = len({p.name for p in folder.parent.rglob("syn-*.yaml")})  # every bin of the id
    return TrashEntry(folder.parent.name, title, rel, _deleted_at(folder.name), synapses, folder, status)


def _deleted_at(stamp: str) -> str:
    """The bin folder's name back to a timestamp (``:`` were written as ``-``)."""
    day, _, clock = stamp.partition("T")
    return f"{day}T{clock.replace('-', ':')}" if clock else stamp


def _find(state: VaultState, ref: str) -> TrashEntry:
    ref = ref.strip()
    matches = [e for e in entries(state) if e.id == ref or (len(ref) >= 6 and e.id.upper().startswith(ref.upper()))]
    if not matches:
        raise NotFound(f"the trash holds no item {ref!r}.", ref=ref, hint="`engram trash list` shows what it holds.")
    if len({e.id for e in matches}) > 1:
        raise InvalidInput(f"{ref!r} matches several trashed items.", hint="Pass more of the id.")
    return matches[0]  # newest copy first


def holds(state: VaultState, ref: str) -> bool:
    """Whether a restore of ``ref`` means the trash: it names a trashed item (id or 6+
    leading characters) and no frozen or forgotten item of the vault (those are restored
    in place, by :func:`engram.lifecycle.forgetting.restore`)."""
    wanted = ref.strip().upper()
    if not any(e.id.upper() == wanted or (len(wanted) >= 6 and e.id.upper().startswith(wanted))
               for e in entries(state)):
        return False
    state.ensure_fresh()
    pattern = wanted + "%" if len(wanted) >= 6 else wanted
    rows = state.index.query("SELECT status FROM items WHERE id = ? OR id LIKE ?", (wanted, pattern))
    return not any(r["status"] in ("frozen", "forgotten", "archived") for r in rows)


def restore(state: VaultState, ref: str) -> Restored:
    """Bring the newest trashed copy of item ``ref`` (an id or 6+ leading characters)
    back, with its synapses. Raises NotFound, InvalidInput (the id is in the vault),
    Forbidden (the actor may not delete it, so may not bring it back; audited)."""
    with state.refusals_audited("restore", ref) as refusal, state.lock.hold():
        state.ensure_indexed()
        entry = _find(state, ref)
        refusal.id = entry.id
        if state.index.item_rows("id = ?", (entry.id,)):
            raise InvalidInput(
                f"item {entry.id} is in the vault already; the trashed copy was left where it is.",
                hint=f"Delete the current one first, or look at the copy in {entry.folder}.",
            )
        item, _ = read_engram(entry.folder / entry.path, entry.path)
        roles.check_restore(state.actor, state.role, item, retire=state.roles.retire)  # before anything moves
        rel = entry.path if not state.abspath(entry.path).exists() else state.place(item)
        _move(entry.folder / entry.path, state.abspath(rel))
        state.index.refresh_paths([rel])
        state.audit.record(state.actor, "restore", entry.id, path=rel, new_version=item.version)
        back, left, seen = [], [], set()
        for bin_dir, file in _trashed_edges(entry):
            syn = read_synapse(file, file.relative_to(bin_dir).as_posix())
            if syn.id in seen:
                continue  # an older copy of an edge already brought back or left
            seen.add(syn.id)
            if not _both_ends(state, syn):
                left.append(syn.id)
                continue
            target = state.synapse_relpath(syn)
            _move(file, state.abspath(target))
            state.index.refresh_paths([target])
            state.audit.record(state.actor, "relink", syn.id, target="synapse", path=target)
            back.append(syn)
        for item_id in {item.id, *(s.other(item.id) for s in back)}:
            state.refresh_derived(item_id)
        for bin_dir in sorted(entry.folder.parent.iterdir()):
            _prune(bin_dir, state.state_dir / "trash")
        status, note = item.status, None
        if item.status == "forgotten":
            status, note = _revive(state, replace(item, path=rel))
        return Restored(entry.id, rel, tuple(s.id for s in back), tuple(left), status, note)


def _revive(state: VaultState, item: Engram) -> tuple[str, str | None]:
    """Take a restored forgotten item out of the team's trash too (see the module
    docstring); returns its status and, when it stays forgotten, why."""
    status = "superseded" if item.superseded_by else "active"
    try:  # asked first, so a refusal is no half-done restore (and no refusal to audit)
        roles.check_update(state.actor, state.role, item, ("status",), status, retire=state.roles.retire)
    except Forbidden:
        return item.status, (
            f"it is back as it was, forgotten: only {item.created_by or 'its author'} or a curator brings"
            f" it back (`engram restore {item.id}`)."
        )
    try:
        return writing.update(state, item.id, {"status": status}, expected_version=item.version).status, None
    except Forbidden as refused:  # a rule the check above does not know of (audited by update)
        return item.status, f"it is back as it was, forgotten: {refused.message}"


def purge(state: VaultState, older_than: timedelta, *, dry_run: bool = False) -> list[TrashEntry]:
    """Delete, for good, the trashed copies deleted more than ``older_than`` ago; return
    them (``dry_run``: only list them)."""
    cutoff = datetime.now(UTC) - older_than
    with state.lock.hold():
        gone = [e for e in entries(state) if _instant(e.deleted_at) < cutoff]
        if dry_run:
            return gone
        for entry in gone:
            try:
                shutil.rmtree(entry.folder)
            except OSError as exc:
                raise StorageError(f"cannot remove {entry.folder}: {exc.strerror}.", hint="Check permissions.") from exc
            state.audit.record(state.actor, "purge", entry.id, path=entry.path)
            _prune(entry.folder.parent, state.state_dir / "trash")
        base = state.state_dir / "trash"
        listed = {e.folder for e in entries(state)}
        for folder in sorted(base.glob("*/*")) if base.is_dir() else ():
            # Bins that hold only edges (a merge kept them) are let go by the same age.
            if folder.is_dir() and folder not in listed and _instant(_deleted_at(folder.name)) < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
                _prune(folder.parent, base)
        return gone


def _instant(stamp: str) -> datetime:
    try:
        return instant(stamp)
    except ValueError:
        return datetime.max.replace(tzinfo=UTC)  # a folder we did not name: never purged by age


def _trashed_edges(entry: TrashEntry) -> list[tuple[Path, Path]]:
    """(bin, file) of every trashed edge of the entry's item: its own bin's first, then
    the other bins of that id, newest first — a merge or a pull that removed an edge
    because this item was deleted (on this clone or another) keeps it in a bin of its
    own (:func:`engram.team.settle.keep_in_trash`)."""
    others = sorted((p for p in entry.folder.parent.iterdir() if p.is_dir() and p != entry.folder), reverse=True)
    return [(bin_dir, file) for bin_dir in (entry.folder, *others) for file in sorted(bin_dir.rglob("syn-*.yaml"))]


def _both_ends(state: VaultState, syn: Synapse) -> bool:
    rows = state.index.item_rows("id IN (?, ?)", (syn.source, syn.target))
    return {r.id for r in rows} == {syn.source, syn.target}


def _move(source: Path, target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(source, target)
    except OSError as exc:
        raise StorageError(f"cannot restore {target}: {exc.strerror}.", hint="Check permissions.") from exc


def _prune(folder: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents up to ``stop`` while they hold no files."""
    current = folder
    while current != stop and current.is_dir() and not any(p.is_file() for p in current.rglob("*")):
        shutil.rmtree(current, ignore_errors=True)
        current = current.parent
