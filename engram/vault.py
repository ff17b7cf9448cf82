"""The vault: a folder of engram files, and every operation on it.

:class:`Vault` is the Python API the CLI, the MCP server and the viewer call. It owns
three derived or machine-local things under ``.engram/`` — the index, the audit log and
the write lock — and the committed ``engram.yaml`` settings.

Invariants:

- Every read-modify-write runs under the vault lock and re-reads the file from disk
  inside it, so concurrent writers (other processes, other agents) never lose an update;
  the loser of a race on ``update`` gets :class:`~engram.errors.VersionConflict`.
- Files are replaced atomically (:mod:`engram.store.fsio`); a crash leaves the old bytes.
- Input is validated before anything is written: a refused call changes nothing.
- An item's path follows its domain, title and visibility; its id never changes. Every
  synapse write regenerates the derived wikilink section of both endpoints; synapses that
  touch a private item live under ``private/`` and never appear in a shared file.
- Deleting moves the item (and its synapses) into ``.engram/trash/`` rather than
  destroying it.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engram.errors import FormatError, VaultNotFound
from engram.index.catalog import RefreshStats
from engram.items.links import LinksMixin
from engram.items.repair import RepairMixin
from engram.items.state import STATE_DIR
from engram.store import rules
from engram.store.dedup import candidate_match, fingerprint, similarity
from engram.store.fsio import prune_empty_dirs
from engram.store.model import Engram, new_id, now
from engram.store.settings import SETTINGS_FILE

if TYPE_CHECKING:
    from engram.index.overview import DomainNode
    from engram.recall.search import RecallSettings, SearchResult
    from engram.recall.usage import FlushStats

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


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``engram.yaml`` or ``.engram/``."""
    current = start.resolve()
    for folder in (current, *current.parents):
        if (folder / SETTINGS_FILE).is_file() or (folder / STATE_DIR).is_dir():
            return folder
    return None


class Vault(LinksMixin, RepairMixin):
    """A vault on disk. Open one with :meth:`open` or create one with :meth:`init`."""

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
        """Create (or complete) a vault at ``path``; safe to run again. See :mod:`engram.team.setup`."""
        from engram.team.setup import init_vault

        root = init_vault(Path(path))
        return cls(root, actor=actor)

    def close(self) -> None:
        self.index.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ freshness

    def _ensure_fresh(self) -> None:
        """Before a read: the index reflects every file change that completed before this
        call (a watcher in long-lived processes, a stat walk otherwise; see engram.index.catalog)."""
        self.index.ensure_fresh(self._freshness_mode())
        self._fresh = True

    def _freshness_mode(self) -> str:
        return self.recall_settings.freshness

    @functools.cached_property
    def recall_settings(self) -> RecallSettings:
        """The ``recall`` section of ``engram.yaml``, read once like the rest of it."""
        from engram.recall.search import read_settings

        return read_settings(self.settings)

    def reindex(self) -> RefreshStats:
        """Rebuild the index from the files alone."""
        stats = self.index.rebuild()
        self._fresh = True
        return stats

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
        where, params = rules.Filters.of(
            domain=domain,
            kinds=kinds,
            tags=tags,
            statuses=statuses,
            visibility=visibility,
            min_importance=min_importance,
            include_hidden=include_hidden,
        ).sql()
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
        source: Any = None,
        dedupe: bool = True,
    ) -> CreateResult:
        """Create an item, unless the vault already holds it.

        Returns ``NEW`` with the new item, ``DUPLICATE`` with the reinforced original
        (identical title and content), or ``UPDATE`` with the near-identical candidate
        (nothing written). ``source`` records provenance (e.g. the file an import came
        from). Raises InvalidInput / UnknownKind before writing anything.
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
            score = similarity(
                item.title, item.content, candidate.title, candidate.content, self.dedup_settings.near_threshold
            )
            if score >= self.dedup_settings.near_threshold and (best is None or score > best[0]):
                best = (score, candidate)
        if best is not None:
            return CreateResult("UPDATE", best[1], round(best[0], 4))
        return None

    def _near_candidates(self, item: Engram) -> builtins.list[Engram]:
        """Items that may nearly duplicate ``item``: the same title, or sharing its rarest
        words (see :func:`engram.dedup.candidate_match`)."""
        live = "status NOT IN ('forgotten', 'quarantined')"
        found = self.index.items(f"title_key = ? AND {live}", (item.title.casefold(),))
        words = rules.candidate_words(item.title, item.content)
        match = candidate_match(words, self.index.term_stats(words)[1])
        if match is not None:
            seen = {c.path for c in found}
            found += [
                c
                for c in self.index.items(
                    f"rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?"
                    f" ORDER BY rank LIMIT ?) AND {live}",
                    (match, self.dedup_settings.candidates),
                )
                if c.path not in seen
            ]
        return found

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
        normalized = rules.normalize_changes(changes)
        with self.lock.hold():
            self._ensure_indexed()
            rel = self._resolve(ref)
            current, _ = self._read(rel)
            self._check_version(current, expected_version)
            updated = rules.apply_changes(current, normalized)
            changed = rules.changed_fields(current, updated)
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

    # ------------------------------------------------------------------ recall

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        domain: str | Sequence[str] | None = None,
        kinds: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        statuses: Iterable[str] | None = None,
        visibility: Iterable[str] | None = None,
        min_importance: float | None = None,
        include_hidden: bool = False,
        as_of: str | None = None,
        tier: str = "auto",
        budget: int | None = None,
        expand: bool = True,
        raw: bool = False,
        record: bool = True,
        min_relevance: float | None = None,
    ) -> SearchResult:
        """Graph-expanded recall: lexical hits blended with recency, importance,
        reinforcement and heat, expanded along synapses; see :mod:`engram.recall.search`.

        Filters are those of :meth:`list`; ``as_of`` recalls what the vault held at an
        instant; ``tier`` is catalog, digest, content or auto (with a token ``budget``);
        ``expand=False`` turns graph expansion off; ``raw`` takes FTS5 syntax as is;
        ``record=False`` leaves the usage journal alone. Below the relevance floor the
        result's status is ``no_confident_match``. Raises InvalidInput.
        """
        from engram.recall import search as recall

        self._ensure_fresh()
        filters = rules.Filters.of(
            domain=domain, kinds=kinds, tags=tags, statuses=statuses, visibility=visibility,
            min_importance=min_importance, include_hidden=include_hidden,
        )
        return recall.search(
            self, query, filters, limit=limit, as_of=as_of, tier=tier, budget=budget,
            expand=expand, raw=raw, record=record, min_relevance=min_relevance,
        )

    def paths(
        self,
        *,
        domain: str | Sequence[str] | None = None,
        depth: int | None = None,
        include_hidden: bool = False,
    ) -> DomainNode:
        """The domain tree under ``domain`` (default: the whole vault) with each folder's
        own and cumulative item counts, to ``depth`` levels; see engram.paths_overview."""
        from engram.index import overview as paths_overview

        self._ensure_fresh()
        return paths_overview.tree(self.index, domain=domain, depth=depth, include_hidden=include_hidden)

    def flush_usage(self) -> FlushStats:
        """Fold journaled retrievals into frontmatter in one batch (see engram.recall.usage)."""
        from engram.recall import usage

        return usage.flush(self)
