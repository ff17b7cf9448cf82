"""The vault: a folder of engram files, and every operation on it.

:class:`Vault` is the Python API the CLI, the MCP server and the viewer call. It owns
three derived or machine-local things under ``.engram/`` — the index, the audit log and
the write lock — and the committed ``engram.yaml`` settings.

Invariants:

- Every read-modify-write runs under the vault lock and re-reads the file from disk
  inside it, so concurrent writers (other processes, other agents) never lose an update;
  the loser of a race on ``update`` gets :class:`~engram.errors.VersionConflict`.
- Files are replaced atomically (:mod:`engram.fsio`); a crash leaves the old bytes.
- Input is validated before anything is written: a refused call changes nothing.
- An item's path follows its domain, title and visibility; its id never changes. Every
  synapse write regenerates the derived wikilink section of both endpoints; synapses that
  touch a private item live under ``private/`` and never appear in a shared file.
- Deleting moves the item (and its synapses) into ``.engram/trash/`` rather than
  destroying it.
"""

from __future__ import annotations

import builtins
import getpass
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from engram import derived, items
from engram.audit import AuditLog
from engram.dedup import DedupSettings, fingerprint, similarity
from engram.errors import (
    EngramError,
    FormatError,
    InvalidInput,
    NotFound,
    UnknownKind,
    VaultNotFound,
    VersionConflict,
)
from engram.format import read_engram, read_synapse, write_engram, write_synapse
from engram.fsio import VaultLock, prune_empty_dirs, remove
from engram.index import Index, RefreshStats
from engram.model import (
    SYMMETRIC_KINDS,
    SYNAPSE_KINDS,
    Engram,
    Evidence,
    Synapse,
    new_id,
    now,
    synapse_id,
)
from engram.paths import id_suffix, item_relpath, resolve_inside, slugify
from engram.settings import SETTINGS_FILE, Settings

STATE_DIR = ".engram"
Outcome = Literal["NEW", "DUPLICATE", "UPDATE"]


@dataclass(frozen=True, slots=True)
class CreateResult:
    """What ``create`` did: wrote a NEW item, reinforced a DUPLICATE, or proposes an UPDATE.

    ``item`` is the new item, the reinforced original, or the candidate to update.
    """

    outcome: Outcome
    item: Engram
    similarity: float | None = None

    @property
    def id(self) -> str:
        return self.item.id


def _default_actor() -> str:
    for var in ("ENGRAM_ACTOR", "GIT_AUTHOR_NAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``engram.yaml`` or ``.engram/``."""
    current = start.resolve()
    for folder in (current, *current.parents):
        if (folder / SETTINGS_FILE).is_file() or (folder / STATE_DIR).is_dir():
            return folder
    return None


class Vault:
    """A vault on disk. Open one with :meth:`open` or create one with :meth:`init`."""

    def __init__(self, root: Path, *, actor: str | None = None) -> None:
        self.root = root.resolve()
        self.state_dir = self.root / STATE_DIR
        self.settings = Settings.load(self.root)
        self.dedup_settings = self.settings.section("dedup", DedupSettings)
        self.actor = actor or _default_actor()
        self.index = Index(self.root, self.state_dir / "index.sqlite")
        self.audit = AuditLog(self.state_dir / "audit.jsonl")
        self.lock = VaultLock(self.state_dir / "write.lock")
        self._fresh = False

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str | Path | None = None, *, actor: str | None = None) -> Vault:
        """Open the vault at or above ``path`` (default: the current folder).

        A folder given explicitly that has no vault marker above it is opened as a vault
        as it is (a Co-Engram repository, say); the current folder is not.

        Raises VaultNotFound.
        """
        explicit = path is not None
        start = Path(path) if path is not None else Path.cwd()
        if not start.exists():
            raise VaultNotFound(
                f"no folder at {start}.", hint="Check the path, or create a vault with `engram init PATH`."
            )
        if start.is_file():
            start = start.parent
        root = find_root(start)
        if root is None:
            if not explicit:
                raise VaultNotFound(
                    f"no engram vault at or above {start}.",
                    hint="Run `engram init` here, or pass --vault PATH (or set ENGRAM_VAULT).",
                )
            root = start
        return cls(root, actor=actor)

    @classmethod
    def init(cls, path: str | Path, *, actor: str | None = None) -> Vault:
        """Create (or complete) a vault at ``path``; safe to run again. See :mod:`engram.setup`."""
        from engram.setup import init_vault

        root = init_vault(Path(path))
        return cls(root, actor=actor)

    def close(self) -> None:
        self.index.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ freshness

    def refresh(self) -> RefreshStats:
        """Bring the derived index in line with the files (cheap when nothing changed)."""
        stats = self.index.refresh()
        self._fresh = True
        return stats

    def _ensure_fresh(self) -> None:
        self.refresh()

    def _ensure_indexed(self) -> None:
        """For writers: one full walk per process, then the shared index is kept current."""
        if not self._fresh:
            self.refresh()

    def reindex(self) -> RefreshStats:
        """Rebuild the index from the files alone."""
        stats = self.index.rebuild()
        self._fresh = True
        return stats

    # ------------------------------------------------------------------ resolving

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

    # ------------------------------------------------------------------ reading

    def get(self, ref: str) -> Engram:
        """The item named by id, id prefix (6+ chars), path or exact title.

        Raises NotFound, InvalidInput (ambiguous), FormatError (the file is broken).
        """
        self._ensure_fresh()
        rel = self._resolve(ref)
        try:
            return self._read(rel)[0]
        except FileNotFoundError:
            self.refresh()
            return self._read(self._resolve(ref))[0]

    def list(
        self,
        *,
        domain: str | Sequence[str] | None = None,
        kinds: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        statuses: Iterable[str] | None = None,
        visibility: Iterable[str] | None = None,
        min_importance: float | None = None,
        include_hidden: bool = False,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[Engram]:
        """Items matching every given filter, most recently updated first.

        ``domain`` is a path prefix (``engineering`` matches ``engineering/python``).
        Frozen, forgotten and quarantined items are left out unless ``statuses`` names
        them or ``include_hidden`` is set. Files that fail to parse are skipped (see
        :meth:`broken_files`), never fatal.
        """
        self._ensure_fresh()
        where, params = items.filter_sql(
            domain=domain,
            kinds=kinds,
            tags=tags,
            statuses=statuses,
            visibility=visibility,
            min_importance=min_importance,
            include_hidden=include_hidden,
        )
        tail = "ORDER BY updated_at DESC, path"
        if limit is not None:
            tail += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return self.index.items(where, params, tail)

    def broken_files(self) -> builtins.list[tuple[str, str]]:
        """(path, problem) for every item or synapse file that does not parse."""
        self._ensure_fresh()
        return [(b.path, b.error) for b in self.index.bad_files()]

    def history(self, ref: str) -> builtins.list[Any]:
        """Audit entries about one item, oldest first."""
        item = self.get(ref)
        return builtins.list(self.audit.entries(item.id))

    # ------------------------------------------------------------------ creating

    def create(
        self,
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
        dedupe: bool = True,
    ) -> CreateResult:
        """Create an item, unless the vault already holds it.

        Returns ``NEW`` with the new item, ``DUPLICATE`` with the reinforced original
        (identical title and content), or ``UPDATE`` with the near-identical candidate
        (nothing written). Raises InvalidInput / UnknownKind before writing anything.
        """
        stamp = now()
        item = items.build_new(
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
            actor=self.actor,
            at=stamp,
        )
        with self.lock.hold():
            self._ensure_indexed()
            if dedupe and self.dedup_settings.enabled:
                found = self._find_duplicate(item)
                if found is not None:
                    return found
            rel = self._place(item)
            item = replace(item, path=rel)
            self._write_item(item, [])
            self.audit.record(self.actor, "create", item.id, path=rel, new_version=1)
            return CreateResult("NEW", item)

    def _find_duplicate(self, item: Engram) -> CreateResult | None:
        fp = fingerprint(item.title, item.content)
        for row in self.index.item_rows("fingerprint = ? ORDER BY created_at, path", (fp,)):
            try:
                original, _ = self._read(row.path)
            except (FileNotFoundError, FormatError):
                continue
            if original.status in ("forgotten", "quarantined"):
                continue
            return CreateResult("DUPLICATE", self._reinforce(original), 1.0)
        best: tuple[float, Engram] | None = None
        for candidate in self._near_candidates(item):
            score = similarity(item.title, item.content, candidate.title, candidate.content)
            if score >= self.dedup_settings.near_threshold and (best is None or score > best[0]):
                best = (score, candidate)
        if best is not None:
            return CreateResult("UPDATE", best[1], round(best[0], 4))
        return None

    def _near_candidates(self, item: Engram) -> builtins.list[Engram]:
        query = items.candidate_query(item.title, item.content)
        if not query:
            return []
        return self.index.items(
            "rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?"
            " ORDER BY rank LIMIT ?) AND status NOT IN ('forgotten', 'quarantined')",
            (query, self.dedup_settings.candidates),
        )

    def _reinforce(self, original: Engram) -> Engram:
        assert original.path is not None
        updated = replace(
            original,
            reinforcement_score=round(original.reinforcement_score + 1.0, 6),
            version=original.version + 1,
            updated_at=now(),
            updated_by=self.actor,
        )
        self._write_item(updated, None)
        self.audit.record(
            self.actor,
            "reinforce",
            original.id,
            path=original.path,
            old_version=original.version,
            new_version=updated.version,
            fields=("reinforcementScore",),
        )
        return updated

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

    # ------------------------------------------------------------------ updating

    def update(
        self,
        ref: str,
        changes: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Engram:
        """Apply ``changes`` (field names in snake_case or camelCase) to an item.

        ``expected_version`` is the version the caller read; if the item has moved on,
        VersionConflict says which versions and fields changed since. Changing the title,
        domain or visibility moves the file; the id stays. An update that changes
        nothing writes nothing. Raises NotFound, InvalidInput, VersionConflict.
        """
        normalized = items.normalize_changes(changes)
        with self.lock.hold():
            self._ensure_indexed()
            rel = self._resolve(ref)
            current, _ = self._read(rel)
            self._check_version(current, expected_version)
            updated = items.apply_changes(current, normalized)
            changed = items.changed_fields(current, updated)
            if not changed:
                return current
            updated = replace(updated, version=current.version + 1, updated_at=now(), updated_by=self.actor)
            new_rel = self._place(updated, current=rel)
            updated = replace(updated, path=new_rel)
            moved = new_rel != rel
            if moved:
                self._move_item(current, updated)
            else:
                self._write_item(updated, None)
            self.audit.record(
                self.actor,
                "update",
                current.id,
                path=new_rel,
                old_version=current.version,
                new_version=updated.version,
                fields=changed,
            )
            return updated

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

    # ------------------------------------------------------------------ deleting

    def delete(self, ref: str, *, expected_version: int | None = None) -> Engram:
        """Move an item and its synapses to ``.engram/trash/``; return what was deleted."""
        with self.lock.hold():
            self._ensure_indexed()
            rel = self._resolve(ref)
            current, _ = self._read(rel)
            self._check_version(current, expected_version)
            neighbours = self._neighbours(current.id)
            bin_dir = self.state_dir / "trash" / current.id / now().replace(":", "-")
            for syn in self._incident(current.id):
                srel = self._synapse_relpath(syn)
                self._to_trash(srel, bin_dir)
                self.audit.record(self.actor, "unlink", syn.id, target="synapse", path=srel)
            self._to_trash(rel, bin_dir)
            prune_empty_dirs(self.abspath(rel).parent, self.root)
            for neighbour in neighbours:
                self._refresh_derived(neighbour)
            self.audit.record(
                self.actor, "delete", current.id, path=rel, old_version=current.version
            )
            return current

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

    # ------------------------------------------------------------------ synapses

    def link(
        self,
        source_ref: str,
        kind: str,
        target_ref: str,
        *,
        weight: float | None = None,
        evidence: str | None = None,
        confidence: float | None = None,
    ) -> Synapse:
        """Create the edge ``source --kind--> target``, or merge into the existing one.

        Re-creating an edge adds the new evidence (a set, keyed by description and
        author) instead of duplicating the edge; a given ``weight`` replaces the old one.
        Raises UnknownKind, NotFound (either endpoint), InvalidInput (a self-link).
        """
        if kind not in SYNAPSE_KINDS:
            raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
        weight = items.unit("weight", weight) if weight is not None else None
        confidence = items.unit("confidence", confidence) if confidence is not None else None
        if evidence is not None:
            evidence = items.text("evidence", evidence, items.MAX_SUMMARY_CHARS, required=True)
        with self.lock.hold():
            self._ensure_indexed()
            source, _ = self._read(self._resolve(source_ref))
            target, _ = self._read(self._resolve(target_ref))
            if source.id == target.id:
                raise InvalidInput(
                    f"an item cannot link to itself ({source.id}).", hint="Link two different items."
                )
            a, b = (source.id, target.id)
            if kind in SYMMETRIC_KINDS:
                a, b = sorted((a, b))
            sid = synapse_id(a, b, kind)
            stamp = now()
            existing = self._existing_synapse(sid)
            entries = builtins.list(existing.evidence) if existing else []
            if evidence is not None and not any(
                e.description == evidence and e.added_by == self.actor for e in entries
            ):
                entries.append(Evidence(evidence, self.actor, confidence, stamp))
            if existing is not None:
                syn = replace(
                    existing,
                    weight=weight if weight is not None else existing.weight,
                    evidence=tuple(entries),
                    updated_at=stamp,
                    updated_by=self.actor,
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
                    created_by=self.actor,
                    created_at=stamp,
                    updated_at=stamp,
                )
                action = "link"
            rel = self._store_synapse(syn, private=self._is_private(source, target))
            self.audit.record(self.actor, action, sid, target="synapse", path=rel)
            self._refresh_derived(source.id)
            self._refresh_derived(target.id)
            return self._existing_synapse(sid) or syn

    def unlink(self, source_ref: str, kind: str, target_ref: str) -> Synapse:
        """Remove the edge ``source --kind--> target``; return it. Raises NotFound."""
        if kind not in SYNAPSE_KINDS:
            raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
        with self.lock.hold():
            self._ensure_indexed()
            source = self.index.item_rows("path = ?", (self._resolve(source_ref),))[0].id
            target = self.index.item_rows("path = ?", (self._resolve(target_ref),))[0].id
            a, b = sorted((source, target)) if kind in SYMMETRIC_KINDS else (source, target)
            sid = synapse_id(a, b, kind)
            existing = self._existing_synapse(sid)
            if existing is None:
                raise NotFound(
                    f"there is no {kind} edge from {source} to {target}.",
                    ref=sid,
                    hint=f"`engram synapses {source}` lists its edges.",
                )
            for rel in self.index.synapse_paths(sid):
                remove(self.abspath(rel))
                self.index.drop(rel)
                self.audit.record(self.actor, "unlink", sid, target="synapse", path=rel)
            self._refresh_derived(source)
            self._refresh_derived(target)
            return existing

    def synapse(self, synapse_id_: str) -> Synapse:
        self._ensure_fresh()
        found = self._existing_synapse(synapse_id_)
        if found is None:
            raise NotFound(
                f"no synapse {synapse_id_!r}.", ref=synapse_id_, hint="`engram synapses ITEM` lists edges."
            )
        return found

    def synapses(
        self, endpoint: str | None = None, *, kind: str | None = None, direction: str = "both"
    ) -> builtins.list[Synapse]:
        """Edges touching ``endpoint`` (any ref), optionally of one kind / direction."""
        self._ensure_fresh()
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
            item_id = self.index.item_rows("path = ?", (self._resolve(endpoint),))[0].id
            sides = {"out": ["source"], "in": ["target"], "both": ["source", "target"]}[direction]
            clauses.append("(" + " OR ".join(f"{side} = ?" for side in sides) + ")")
            params.extend([item_id] * len(sides))
        return self.index.synapses(" AND ".join(clauses) or "1", params)

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

    # ------------------------------------------------------------------ writing

    def _write_item(self, item: Engram, derived_lines: builtins.list[str] | None) -> None:
        """Write an item file (derived section recomputed when not given) and index it."""
        assert item.path is not None
        if derived_lines is None:
            derived_lines = derived.lines_for(self.index, item)
        write_engram(self.abspath(item.path), item, derived_lines)
        self.index.put_item(item.path, item, "\n".join(derived_lines))

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

    def rewrite_derived(self, item: Engram) -> bool:
        """Write ``item`` (which must carry its path) canonically with a fresh derived
        section and index it; True if the bytes on disk changed. No version bump."""
        assert item.path is not None
        with self.lock.hold():
            lines = derived.lines_for(self.index, item)
            changed = write_engram(self.abspath(item.path), item, lines)
            self.index.put_item(item.path, item, "\n".join(lines))
            return changed

    # ------------------------------------------------------------------ maintenance
    # Used by `engram doctor --fix`; each re-reads the file under the lock.

    def rewrite_item(self, rel: str, **corrections: Any) -> bool:
        """Rewrite one item canonically (fresh derived section, optional field fixes).

        No version bump: nothing a person wrote changes. True if the bytes changed.
        """
        with self.lock.hold():
            item, _ = self._read(rel)
            item = replace(item, **corrections)
            lines = derived.lines_for(self.index, item)
            changed = write_engram(self.abspath(rel), item, lines)
            self.index.put_item(rel, item, "\n".join(lines))
            return changed

    def relocate(self, rel: str) -> str:
        """Move an item whose path drifted from its domain/slug/visibility; new path."""
        with self.lock.hold():
            item, _ = self._read(rel)
            if item.slug is None:
                stem = Path(rel).stem
                item = replace(item, slug=stem if slugify(stem) == stem else slugify(item.title))
            target = self._place(item, current=rel)
            if target != rel:
                self._move_item(item, replace(item, path=target))
                self.audit.record(self.actor, "move", item.id, path=target, fields=("path",))
            return target

    def reassign_id(self, rel: str) -> str:
        """Give the item at ``rel`` a new id (a copy that shares another item's id)."""
        with self.lock.hold():
            item, _ = self._read(rel)
            fresh = replace(item, id=new_id(), version=item.version + 1, updated_at=now(), updated_by=self.actor)
            self._write_item(fresh, None)
            self.audit.record(
                self.actor, "reassign-id", fresh.id, path=rel, old_version=item.version,
                new_version=fresh.version, fields=("id",),
            )
            return fresh.id

    def discard_file(self, rel: str, reason: str) -> None:
        """Move one vault file to ``.engram/trash/`` (e.g. a dangling synapse)."""
        with self.lock.hold():
            self._to_trash(rel, self.state_dir / "trash" / "doctor" / now().replace(":", "-"))
            self.audit.record(self.actor, "discard", Path(rel).stem, target="file", path=rel, fields=(reason,))
