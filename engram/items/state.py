"""The vault's machinery shared by its operations: state, resolving, placing, writing.

:class:`VaultBase` holds what every operation needs — the root, the index, the lock, the
audit log — and the private helpers that read, place and write items and synapses. The
public operations are layered on top: :mod:`engram.items.links` (synapses), :mod:`engram.items.repair`
(doctor and post-merge repairs) and :class:`engram.vault.Vault` (items). Invariants are
stated in :mod:`engram.vault`.
"""

from __future__ import annotations

import builtins
import getpass
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engram.errors import (
    EngramError,
    FormatError,
    InvalidInput,
    NotFound,
    VersionConflict,
)
from engram.index.catalog import Index, RefreshStats
from engram.items import derived
from engram.store.audit import AuditLog
from engram.store.dedup import DedupSettings
from engram.store.format import read_engram, read_synapse, write_engram, write_synapse
from engram.store.fsio import VaultLock, prune_empty_dirs, remove
from engram.store.model import SYNAPSE_KINDS, Engram, Synapse
from engram.store.paths import id_suffix, item_relpath, resolve_inside
from engram.store.settings import Settings

STATE_DIR = ".engram"


def default_actor() -> str:
    """Who is writing: ``ENGRAM_ACTOR``, git's author name, or the login name."""
    for var in ("ENGRAM_ACTOR", "GIT_AUTHOR_NAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class VaultBase:
    """State and private helpers of a vault; see :class:`engram.vault.Vault`."""

    def __init__(self, root: Path, *, actor: str | None = None) -> None:
        self.root = root.resolve()
        self.state_dir = self.root / STATE_DIR
        self.settings = Settings.load(self.root)
        self.dedup_settings = self.settings.section("dedup", DedupSettings)
        self.actor = actor or default_actor()
        self.index = Index(self.root, self.state_dir / "index.sqlite")
        self.audit = AuditLog(self.state_dir / "audit.jsonl")
        self.lock = VaultLock(self.state_dir / "write.lock")
        self._fresh = False

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    def _ensure_indexed(self) -> None:
        """For writers: one full walk per process, then the shared index is kept current."""
        if not self._fresh:
            self.refresh()

    def refresh(self) -> RefreshStats:
        """Bring the derived index in line with the files (cheap when nothing changed)."""
        stats = self.index.refresh()
        self._fresh = True
        return stats

    def _ensure_fresh(self) -> None:
        """Bring the index up to date before a read; the subclass sets the policy."""
        raise NotImplementedError

    def abspath(self, relpath: str) -> Path:
        return resolve_inside(self.root, relpath)

    def _relpath_of(self, ref: str) -> str | None:
        """Turn a path-like reference into a vault-relative path, if it is one."""
        if not (ref.endswith(".md") or "/" in ref or os.sep in ref):
            return None
        candidate = Path(ref)
        if candidate.is_absolute():
            try:
                rel = candidate.resolve().relative_to(self.root).as_posix()
            except ValueError:
                raise InvalidInput(
                    f"{ref} is outside the vault {self.root}.", hint="Pass a path inside the vault."
                ) from None
        else:
            rel = candidate.as_posix().removeprefix("./")
        if not rel.endswith(".md"):
            rel += ".md"
        self.abspath(rel)  # refuses paths that leave the vault
        return rel

    def _resolve(self, ref: str) -> str:
        """Find the path of the item named by id, id prefix, path or exact title."""
        ref = ref.strip()
        if not ref:
            raise InvalidInput("the item reference is empty.", hint="Pass an id, a path or a title.")
        for attempt in range(2):
            found = self._lookup(ref)
            if found:
                return found
            if attempt == 0:
                self.refresh()
        raise NotFound(
            f"no item matches {ref!r}.",
            ref=ref,
            hint="Pass an id, a vault-relative path or the exact title; `engram list` shows items.",
        )

    def _lookup(self, ref: str) -> str | None:
        rel = self._relpath_of(ref)
        if rel is not None:
            rows = self.index.item_rows("path = ?", (rel,))
            return rows[0].path if rows else None
        for where, params in (
            ("id = ?", (ref,)),
            ("title = ?", (ref,)),
            ("title_key = ?", (ref.casefold(),)),
        ):
            rows = self.index.item_rows(where, params)
            if len(rows) == 1:
                return rows[0].path
            if len(rows) > 1:
                self._ambiguous(ref, rows)
        if len(ref) >= 6 and re.fullmatch(r"[0-9A-Za-z]+", ref):
            rows = self.index.item_rows("id LIKE ? ESCAPE '\\'", (ref.upper() + "%",))
            if len(rows) == 1:
                return rows[0].path
            if len(rows) > 1:
                self._ambiguous(ref, rows)
        return None

    @staticmethod
    def _ambiguous(ref: str, rows: Sequence[Any]) -> None:
        listing = "; ".join(f"{r.id} ({r.path})" for r in rows[:10])
        same_id = len({r.id for r in rows}) == 1
        raise InvalidInput(
            f"{len(rows)} items match {ref!r}: {listing}.",
            hint="Run `engram doctor --fix` to give copies new ids."
            if same_id
            else "Pass one of the ids instead.",
        )

    def _read(self, rel: str) -> tuple[Engram, str]:
        return read_engram(self.abspath(rel), rel)

    def _place(self, item: Engram, current: str | None = None) -> str:
        """The path for ``item``: its natural path, or with an id suffix when taken."""
        slug = item.slug or "untitled"
        private = item.visibility == "private"
        natural = item_relpath(item.domain_tags, slug, private=private)
        if natural == current:
            return natural
        path = self.abspath(natural)
        if not path.exists() or self._file_id(natural) == item.id:
            return natural
        suffixed = item_relpath(item.domain_tags, slug, private=private, suffix=id_suffix(item.id))
        if suffixed == current:
            return suffixed
        self.abspath(suffixed)
        return suffixed

    def _file_id(self, rel: str) -> str | None:
        try:
            return self._read(rel)[0].id
        except (FileNotFoundError, EngramError):
            return None

    def _check_version(self, current: Engram, expected: int | None) -> None:
        if expected is None or expected == current.version:
            return
        since = [
            e for e in self.audit.entries(current.id)
            if e.new_version is not None and e.new_version > expected
        ]
        if since:
            changes = "; ".join(
                f"v{e.new_version} by {e.actor or 'unknown'} at {e.at}"
                + (f" ({', '.join(e.fields)})" if e.fields else "")
                for e in since[-5:]
            )
        else:
            changes = f"last updated by {current.updated_by or 'unknown'} at {current.updated_at}"
        raise VersionConflict(current.id, expected, current.version, changes, current.path or "")

    def _move_item(self, current: Engram, updated: Engram) -> None:
        """Write ``updated`` at its new path, remove the old file, fix what points at it."""
        assert current.path is not None and updated.path is not None
        self._write_item(updated, None)
        old = self.abspath(current.path)
        remove(old)
        self.index.drop(current.path)
        prune_empty_dirs(old.parent, self.root)
        if (current.visibility == "private") != (updated.visibility == "private"):
            for syn in self._incident(current.id):
                self._store_synapse(syn)
        for neighbour in self._neighbours(updated.id):
            self._refresh_derived(neighbour)
        self._refresh_derived(updated.id)

    def _to_trash(self, rel: str, bin_dir: Path) -> None:
        source = self.abspath(rel)
        target = bin_dir / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(source, target)
        except FileNotFoundError:
            pass
        except OSError as exc:
            from engram.errors import StorageError

            raise StorageError(f"cannot move {rel} to the trash: {exc}.", hint="Check permissions.") from exc
        self.index.drop(rel)

    def _write_item(self, item: Engram, derived_lines: builtins.list[str] | None) -> None:
        """Write an item file (derived section recomputed when not given) and index it."""
        assert item.path is not None
        if derived_lines is None:
            derived_lines = derived.lines_for(self.index, item)
        write_engram(self.abspath(item.path), item, derived_lines)
        self.index.put_item(item.path, item, "\n".join(derived_lines))

    def _existing_synapse(self, sid: str) -> Synapse | None:
        for rel in self.index.synapse_paths(sid):
            try:
                return read_synapse(self.abspath(rel), rel)
            except FileNotFoundError:
                self.index.drop(rel)
        for rel in (f"synapses/{kind}/{sid}.yaml" for kind in SYNAPSE_KINDS):
            for candidate in (rel, "private/" + rel):
                try:
                    return read_synapse(self.abspath(candidate), candidate)
                except FileNotFoundError:
                    continue
        return None

    def _is_private(self, *endpoints: Engram) -> bool:
        return any(e.visibility == "private" for e in endpoints)

    def _synapse_relpath(self, syn: Synapse, private: bool | None = None) -> str:
        if private is None:
            rows = self.index.query(
                "SELECT visibility FROM items WHERE id IN (?, ?)", (syn.source, syn.target)
            )
            private = any(r["visibility"] == "private" for r in rows)
        return ("private/" if private else "") + syn.path

    def _store_synapse(self, syn: Synapse, private: bool | None = None) -> str:
        """Write a synapse at its place (shared or private), removing a stale copy."""
        rel = self._synapse_relpath(syn, private)
        write_synapse(self.abspath(rel), syn)
        self.index.put_synapse(rel, syn)
        for old in self.index.synapse_paths(syn.id):
            if old != rel:
                remove(self.abspath(old))
                self.index.drop(old)
        return rel

    def _incident(self, item_id: str) -> builtins.list[Synapse]:
        return self.index.synapses("source = ? OR target = ?", (item_id, item_id))

    def _neighbours(self, item_id: str) -> builtins.list[str]:
        return sorted({s.other(item_id) for s in self._incident(item_id)} - {item_id})

    def _refresh_derived(self, item_id: str) -> None:
        """Regenerate one item's derived section from the synapses (no version bump)."""
        rows = self.index.item_rows("id = ?", (item_id,))
        for row in rows:
            try:
                item, old = self._read(row.path)
            except (FileNotFoundError, FormatError):
                continue
            lines = derived.lines_for(self.index, item)
            if "\n".join(lines) != old:
                self._write_item(item, lines)
