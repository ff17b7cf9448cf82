"""Three-way merge of two commits' vault files, in memory, for ``engram sync``.

git's merge machinery starts the driver once per file and cannot know that an item that
moved is the same item. This planner works on the files both sides changed since the
merge base, reads the blobs through one persistent ``cat-file`` process, merges each
file with :func:`mergedriver.merge.merge_file` (the very function the driver runs), and
returns the changes to apply on top of ours; sync then writes a tree and a merge commit
without ever putting the repository in a merging state.

Every rule below looks only at the three versions, never at which side is "ours", so
two clones that merge the same pair of commits build the same tree (the symmetry the
tests check by merging both ways).

Units of merge. Items are matched across the three versions by **id**, not by path, so
an item renamed on one side and edited on the other is merged at the new path.

Paths. engram moves a file only when it changes the item's title, domain or visibility,
and then puts it at the *natural* path of those fields (``domain/…/slug.md``, or the
id-suffixed form when that is taken). A side whose file sits at the natural path of its
own fields made an *engram move*; one whose file sits elsewhere was placed by a person
(renamed or moved in Obsidian or an editor). The merged path is:

- the common path when both sides agree, or the mover's path when only one side moved
  and it was a person's rename (kept as they chose it);
- the natural path of the *merged* fields when any side made an engram move (domain
  from one side and title from the other give the new folder and the new slug);
- when both sides renamed the file by hand to different places, the path that sorts
  first (byte-wise), and the item is flagged with the other path in ``mergeConflicts``.

Delete against edit. An item deleted on one side and *edited* on the other survives
with the edit and is flagged: deleting knowledge someone just improved needs a person.
Only a change to the item's fields or content counts as an edit — not a path move (sync
moves a file when two items claim one path), not a regenerated ``## Synapses
(derived)`` section (rewritten whenever a neighbour changes). When the delete wins, the
item is gone on every clone.

Edges to deleted items. An edge whose endpoint is deleted by the merge follows it: it is
removed from the tree and ours' copy (or the edited copy that would otherwise dangle)
is handed back in :attr:`TreePlan.trashed` for ``.engram/trash/``. When the item's
deletion was itself in conflict (the edited item survives), the edges its deletion
removed survive with it — as they stood when it removed them, never an older copy. The
merge base may predate evidence added and edges made on the deleting side (by the
person who deleted, or by a clone whose own merge let the delete win over its link
edits), so that side's history is asked (``history``): every commit there that removed
the item's file together with edges of it gives those edges' last versions (merged
field by field when several commits did, evidence as a union: a commit on a line that
forked before the base removed an older version, which lacks newer evidence without
having removed it), and each comes back merged with the other side's version by the
usual rules. The same goes for an item the base lacks and one
side keeps: that side may have undone a delete in an earlier merge while the other
side's own merge let the same delete win over links it had added or changed (issue 26,
fuzz seed 117). Neither side then shows an undone delete against this base, yet the
lacking side's commits that removed the item's file with edges of it give those edges
back all the same; otherwise they would live on in one clone's trash only.

Two different items that claim one path (two machines created the same title) both
survive: the smaller id keeps the path, the other gets its id-suffixed path, exactly as
``Vault.create`` names a second item with a taken slug.

Files under ``.engram/`` and ``private/`` (one machine's state and private items, which
an older engram committed in a clone whose ``.gitignore`` did not name the folder, or a
commit past the hook) are left out of the merge: neither side's version is taken, so the
merged tree never brings them into a work tree.

Every other file (synapses, notes, settings) is matched by path. A file that cannot be
merged (a text conflict, a side that does not parse) is a *failure*: the plan is not
applied and sync stops, leaving the repository as it was.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engram.index.rows import classify
from engram.store.paths import expected_paths, id_suffix, machine_local
from engram.team.gitstore import REGULAR, RawChange
from mergedriver import codec
from mergedriver.merge import Unmergeable, flag_engram, merge_file

DELETED_NOTE = (
    "deleted on one side and edited on the other; the edited item and its links were kept. "
    "Delete it again if it should go"
)
_ID = re.compile(r"^id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)
_ENDPOINT = re.compile(rb"^(?:from|to):[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Blob:
    path: str
    sha: str
    mode: str


@dataclass
class _Entity:
    key: str
    item: bool
    versions: dict[str, Blob | None] = field(default_factory=lambda: {"b": None, "o": None, "t": None})
    #: Sides whose version was taken from their history, not their tree (a deleted item's edge).
    recovered: set[str] = field(default_factory=set)


#: A path claim: the entity, its bytes (or blob id, or None to keep ours), its file mode.
_Claim = tuple[_Entity, bytes | str | None, str]
#: One side's history since the merge base: for each commit (against each parent of a
#: merge), the files it added or deleted.
History = Callable[[str], list[list[RawChange]]]


@dataclass
class TreePlan:
    """What merging theirs into ours changes, relative to ours."""

    writes: dict[str, tuple[bytes | str, str]] = field(default_factory=dict)  # path → (data|sha, mode)
    deletes: set[str] = field(default_factory=set)
    records: list[dict[str, Any]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    kept_edits: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    #: (path, bytes) of files the merge removed that belong in ``.engram/trash/``.
    trashed: list[tuple[str, bytes]] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # ids of items whose file changes
    gone: set[str] = field(default_factory=set)  # ids of items the merge deletes
    merged: int = 0
    taken: int = 0

    def write(self, path: str, data: bytes | str, mode: str) -> None:
        self.writes[path] = (data, mode)
        self.deletes.discard(path)

    def delete(self, path: str) -> None:
        if path not in self.writes:
            self.deletes.add(path)


class TreeMerger:
    """Plans the merge of ``theirs`` into ``ours`` given both sides' changes since the base.

    ``read`` returns blobs' bytes; ``exists`` says whether ours has a path (asked only
    for paths neither side changed, which are the same on both sides); ``prefix`` is the
    vault folder inside the repository ('' when the vault is the repository);
    ``incident`` lists ours' synapse files (path, blob) that touch the given item ids,
    so edges neither side changed can follow a deleted item; ``history`` gives a side's
    (``"o"`` or ``"t"``) commits since the base, so the edges of an item whose delete the
    merge undoes come back as they were last changed (see the module docstring).
    """

    def __init__(
        self,
        read: Callable[[Iterable[str]], dict[str, bytes]],
        exists: Callable[[str], bool],
        prefix: str = "",
        incident: Callable[[set[str]], list[tuple[str, str]]] | None = None,
        history: History | None = None,
        held: Callable[[set[str]], dict[str, list[str]]] | None = None,
    ) -> None:
        self._read_blobs = read
        self._exists = exists
        self._incident = incident
        self._held = held
        self._history = history
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._cache: dict[str, bytes] = {}
        self._made: set[str] = set()  # blob ids of versions merged here, not in the object store
        self._changed: set[str] = set()

    def read(self, blob: Blob) -> bytes:
        if blob.sha not in self._cache:
            self._cache.update(self._read_blobs([blob.sha]))
        return self._cache[blob.sha]

    def vault_path(self, path: str) -> str | None:
        """The vault-relative path of a repository path, or None outside the vault."""
        if not path.startswith(self._prefix):
            return None
        return path[len(self._prefix) :]

    def _machine_state(self, path: str) -> bool:
        rel = self.vault_path(path)
        return rel is not None and machine_local(rel)

    def _occupied(self, path: str) -> bool:
        """Whether a path nobody changed holds a file (the same answer on every clone)."""
        return path not in self._changed and self._exists(path)

    # ------------------------------------------------------------------ planning

    def plan(self, ours: Mapping[str, RawChange], theirs: Mapping[str, RawChange]) -> TreePlan:
        plan = TreePlan()
        # One machine's state and private items, which an older engram (or a commit past
        # the hook) committed in some clones: never merged, taken or checked out over
        # this machine's own, nor added to them (issue 28).
        ours = {path: change for path, change in ours.items() if not self._machine_state(path)}
        theirs = {path: change for path, change in theirs.items() if not self._machine_state(path)}
        self._changed = {*ours, *theirs}
        # Every blob either side touched, read in one batch (a round trip each is slow).
        self._cache.update(self._read_blobs(
            sha
            for change in (*ours.values(), *theirs.values())
            for sha, mode in ((change.old_sha, change.old_mode), (change.new_sha, change.new_mode))
            if sha and mode in REGULAR
        ))
        claims: dict[str, list[_Claim]] = {}
        entities = self._entities(ours, theirs)
        revived: dict[str, str] = {}  # item id → the side that deleted it
        # Items first: what happens to an edge depends on whether its endpoints survive.
        for entity in (e for e in entities if e.item):
            outcome = self._resolve(entity, plan, claims)
            item_id = entity.key.removeprefix("id:")
            if outcome == "gone":
                plan.gone.add(item_id)
            elif outcome == "revived":
                revived[item_id] = "o" if entity.versions["o"] is None else "t"
            elif (lacking := _lacking_side(entity)) is not None:
                # New to the base, kept from one side: the other side's history may
                # have let an earlier delete of it win over its edges (see the docstring).
                revived[item_id] = lacking
        self._still_held(plan)
        last = self._removed_with(revived)
        edges = [e for e in entities if not e.item]
        known = {e.key for e in edges}
        # Edges made and removed on the deleting side since the base are in neither diff.
        edges += [_Entity(f"path:{path}", False) for path in sorted(last)
                  if f"path:{path}" not in known and not self._occupied(path)]
        for entity in edges:
            recovered = {side: blob for side, blob in last.get(entity.key.removeprefix("path:"), {}).items()
                         if entity.versions[side] is None}
            ends = self._edge_ends(entity) | self._ends(recovered.values())
            if ends & plan.gone:
                self._follow_deleted(entity, plan)
            elif ends & revived.keys() and recovered:
                entity.versions.update(recovered)
                entity.recovered = set(recovered)
                self._resolve(entity, plan, claims)
            elif ends & revived.keys() and self._restore_edge(entity, claims):
                continue
            else:
                self._resolve(entity, plan, claims)
        self._untouched_edges(plan)
        self._settle_claims(claims, plan)
        return plan

    def _still_held(self, plan: TreePlan) -> None:
        """An id the merge removed a file of is not gone while a file neither side
        changed still holds it: the base held the item twice (a plain pull kept both
        files, ``engram.team.twins``) and both sides removed the same twin when they
        joined them. Its edges stay (fuzz seed 1057)."""
        if plan.gone and self._held is not None:
            plan.gone -= {item_id for item_id, paths in self._held(plan.gone).items()
                          if any(path not in self._changed for path in paths)}

    def _entities(self, ours: Mapping[str, RawChange], theirs: Mapping[str, RawChange]) -> list[_Entity]:
        by_key: dict[str, _Entity] = {}
        for path in sorted({*ours, *theirs}):
            change = ours.get(path) or theirs[path]
            base = _blob(path, change.old_sha, change.old_mode)
            sides = {
                "b": base,
                "o": _blob(path, ours[path].new_sha, ours[path].new_mode) if path in ours else base,
                "t": _blob(path, theirs[path].new_sha, theirs[path].new_mode) if path in theirs else base,
            }
            ids = self._ids(path, sides)
            keys = {side: f"id:{ids[side]}" if ids is not None else f"path:{path}"
                    for side, blob in sides.items() if blob is not None}
            # The same id twice on one side (twins: engram.team.twins): this path's versions
            # of it stay together, in an entity of their own. Split between the id and the
            # path, the twin a peer joined away would take the other's path from it, and
            # two files would claim one path (fuzz seed 5013).
            twice = {key for side, key in keys.items()
                     if key in by_key and by_key[key].versions[side] is not None}
            for side, key in keys.items():
                if key in twice:
                    entity = by_key.setdefault(f"path:{path}", _Entity(f"path:{path}", False))
                else:
                    entity = by_key.setdefault(key, _Entity(key, ids is not None))
                entity.versions[side] = sides[side]
        return list(by_key.values())

    def _ids(self, path: str, sides: Mapping[str, Blob | None]) -> dict[str, str] | None:
        """Each side's item id at ``path``, or None unless every version has one."""
        rel = self.vault_path(path)
        if rel is None or classify(rel) != "item":
            return None
        ids: dict[str, str] = {}
        for side, blob in sides.items():
            if blob is None:
                continue
            if blob.mode not in REGULAR:
                return None
            found = _item_id(self.read(blob))
            if found is None:
                return None
            ids[side] = found
        return ids

    def _is_synapse(self, path: str) -> bool:
        rel = self.vault_path(path)
        return rel is not None and classify(rel) == "synapse"

    # ------------------------------------------------------------------ resolving

    def _resolve(self, entity: _Entity, plan: TreePlan, claims: dict[str, list[_Claim]]) -> str:
        """Decide one entity; returns ``kept``, ``gone`` (deleted by the merge) or
        ``revived`` (deleted on one side, edited on the other: it survives)."""
        b, o, t = entity.versions["b"], entity.versions["o"], entity.versions["t"]
        if o == t or t == b:
            # Nothing new from theirs: ours stands, but it still holds its path against
            # another item that claims it (ours' tree lacks a version from its history).
            if o is None:
                return "gone"
            claims.setdefault(o.path, []).append((entity, o.sha if "o" in entity.recovered else None, o.mode))
            return "kept"
        if o == b:
            plan.taken += 1
            if o is not None and (t is None or o.path != t.path) and "o" not in entity.recovered:
                plan.delete(o.path)
            if t is None:
                return "gone"
            claims.setdefault(t.path, []).append((entity, t.sha, t.mode))
            return "kept"
        if o is None or t is None:
            survivor = o if o is not None else t
            assert survivor is not None  # o == t == None returned above
            if entity.item and b is not None and self._same_substance(b, survivor):
                # The other side only moved the file or regenerated its links: no edit
                # stands against the delete.
                plan.taken += 1
                if o is not None:
                    plan.delete(o.path)
                plan.records.append(_record(survivor.path, "modify/delete", "delete-wins"))
                return "gone"
            self._modified_deleted(entity, survivor, plan, claims)
            return "revived" if entity.item else "kept"
        self._merge_both(entity, b, o, t, plan, claims)
        return "kept"

    def _same_substance(self, a: Blob, b: Blob) -> bool:
        """Two versions of an item with the same fields and content (path and the derived
        link section aside)."""
        if a.sha == b.sha:
            return True
        try:
            meta_a, content_a, _ = codec.parse_engram(self.read(a))
            meta_b, content_b, _ = codec.parse_engram(self.read(b))
        except codec.CodecError:
            return False
        return meta_a == meta_b and content_a == content_b

    def _modified_deleted(self, entity: _Entity, survivor: Blob, plan: TreePlan, claims: dict[str, list[_Claim]]) -> None:
        data: bytes | str = survivor.sha
        if entity.item:
            try:
                data = flag_engram(self.read(survivor), DELETED_NOTE)
                plan.flagged.append(survivor.path)
            except Unmergeable:
                plan.kept_edits.append(survivor.path)
        else:
            plan.kept_edits.append(survivor.path)
        plan.records.append(_record(survivor.path, "modify/delete", "edit-survives", DELETED_NOTE))
        claims.setdefault(survivor.path, []).append((entity, data, survivor.mode))

    def _merge_both(
        self, entity: _Entity, b: Blob | None, o: Blob, t: Blob, plan: TreePlan, claims: dict[str, list[_Claim]]
    ) -> None:
        if o.mode not in REGULAR or t.mode not in REGULAR:
            plan.failures.append((o.path, "changed on both sides and is not a regular file"))
            return
        rel = self.vault_path(o.path) or o.path
        result = merge_file(self.read(b) if b else None, self.read(o), self.read(t), rel)
        plan.merged += 1
        plan.records.append(result.record(o.path))
        if not result.ok:
            plan.failures.append((o.path, result.reason or "both sides changed the same lines"))
            return
        data = result.data
        path, note = self._merged_path(entity, b, o, t, data) if entity.item else (o.path, None)
        if note is not None:
            data = flag_engram(data, note)
        if not result.clean or note is not None:
            plan.flagged.append(path)
        if path != o.path:
            plan.delete(o.path)
        mode = t.mode if b is not None and o.mode == b.mode else o.mode
        claims.setdefault(path, []).append((entity, data, mode))

    # ------------------------------------------------------------------ paths

    def _merged_path(self, entity: _Entity, b: Blob | None, o: Blob, t: Blob, data: bytes) -> tuple[str, str | None]:
        """Where an item both sides changed ends up, and a note when two hand renames
        disagree (see the module docstring)."""
        if o.path == t.path:
            return o.path, None
        movers = [side for side in (o, t) if b is None or side.path != b.path]
        if any(self._engram_placed(side) for side in movers):
            return self._natural_target(data, (o.path, t.path)), None
        if len(movers) == 1:
            return movers[0].path, None
        keep, other = sorted((o.path, t.path))
        shown = self.vault_path(other) or other
        return keep, f"path: both sides moved the file by hand; kept this path over {shown}"

    def _natural(self, data: bytes, path: str) -> tuple[str, str] | None:
        """The natural and id-suffixed repository paths for an item's fields, or None."""
        try:
            meta = codec.parse_engram(data)[0]
        except codec.CodecError:
            return None
        rel = self.vault_path(path) or path
        domain = tuple(str(tag) for tag in meta.get("domainTags") or ())
        slug = meta.get("slug")
        natural, suffixed = expected_paths(
            domain, str(slug) if slug else None, str(meta.get("title") or ""), str(meta["id"]), rel,
            private=meta.get("visibility") == "private",
        )
        return self._prefix + natural, self._prefix + suffixed

    def _engram_placed(self, side: Blob) -> bool:
        natural = self._natural(self.read(side), side.path)
        return natural is not None and side.path in natural

    def _natural_target(self, data: bytes, own: tuple[str, str]) -> str:
        natural = self._natural(data, own[0])
        if natural is None:
            return min(own)
        if natural[0] in own or not self._occupied(natural[0]):
            return natural[0]
        return natural[1]

    # ------------------------------------------------------------------ edges

    def _edge_ends(self, entity: _Entity) -> set[str]:
        """The item ids a synapse entity connects (empty for any other file)."""
        return self._ends(blob for blob in entity.versions.values() if blob is not None)

    def _ends(self, blobs: Iterable[Blob]) -> set[str]:
        ends: set[str] = set()
        for blob in blobs:
            if blob.mode in REGULAR and self._is_synapse(blob.path):
                ends.update(m.decode("utf-8", "replace") for m in _ENDPOINT.findall(self.read(blob)))
        return ends

    def _removed_with(self, revived: Mapping[str, str]) -> dict[str, dict[str, Blob]]:
        """The edges of the revived items (id → the side that deleted it) as that side's
        history last had them: every commit there that removed an item's file (and did
        not add it back elsewhere: a move) removed the item's edges in the same commit,
        as ``delete`` and a merge that lets a delete win do — and every later commit
        there that removed edges of it removed them because it was gone: the hooks and
        settle move an edge to a deleted item to the trash after the pull that deleted
        it, in a commit of its own (fuzz seed 514). An edge removed *before* the item's
        file is an unlink someone made and stays unlinked. Path → side → version."""
        if not revived or self._history is None:
            return {}
        found: dict[tuple[str, str], list[Blob]] = {}
        for side in sorted(set(revived.values())):
            wanted = {item_id for item_id, deleter in revived.items() if deleter == side}
            history = self._history(side)  # newest commit first
            commits = [
                (at, changes, [Blob(c.path, c.old_sha, c.old_mode) for c in changes
                               if c.old_sha and c.new_sha is None and c.old_mode in REGULAR
                               and self._is_synapse(c.path)])
                for at, changes in enumerate(history)
            ]
            # Where each wanted item's file was last removed: the item files of the
            # commits that removed one are read (most merges keep an item new to the base).
            self._load(c.old_sha or c.new_sha for changes in history for c in changes
                       if self._is_item_change(c) and (c.new_sha is None or c.old_sha is None))
            gone_at: dict[str, int] = {}  # the oldest removal (two merges may each let it win)
            for at, changes, _ in commits:
                for item_id in wanted & (self._item_ids(changes, deleted=True) - self._item_ids(changes, deleted=False)):
                    gone_at[str(item_id)] = at
            for at, _, edges in commits:
                hit = {item_id for item_id, when in gone_at.items() if at <= when}
                if not hit or not edges:
                    continue
                self._load(blob.sha for blob in edges)
                for blob in edges:
                    if self._ends([blob]) & hit:
                        found.setdefault((blob.path, side), []).append(blob)
        last: dict[str, dict[str, Blob]] = {}
        for (path, side), versions in sorted(found.items()):
            last.setdefault(path, {})[side] = self._merged_versions(path, versions)
        return last

    def _is_item_change(self, change: RawChange) -> bool:
        rel = self.vault_path(change.path)
        mode = change.old_mode if change.new_sha is None else change.new_mode
        return rel is not None and classify(rel) == "item" and mode in REGULAR

    def _item_ids(self, changes: list[RawChange], *, deleted: bool) -> set[str | None]:
        """The ids of the item files one commit deleted (or added)."""
        ids: set[str | None] = set()
        for change in changes:
            sha, other = (change.old_sha, change.new_sha) if deleted else (change.new_sha, change.old_sha)
            if sha and other is None and self._is_item_change(change):
                ids.add(_item_id(self._cache[sha]))
        return ids

    def _load(self, shas: Iterable[str | None]) -> None:
        wanted = {sha for sha in shas if sha and sha not in self._cache}
        if wanted:
            self._cache.update(self._read_blobs(wanted))

    def _merged_versions(self, path: str, versions: list[Blob]) -> Blob:
        """One edge's versions from several commits, merged as two versions of it with no
        common ancestor are (evidence as a union); in blob order, so every clone agrees.

        Not against the merge base: a commit that removed the edge may sit on a line that
        forked before the base (the deleter's own commit, made before its merge brought
        in evidence added meanwhile), so its version lacks what the base has without
        having removed it (issue 26, fuzz seed 80). Merged against the base, that older
        version would take the newer evidence away from the edge the undone delete
        brings back."""
        unique = sorted({blob.sha: blob for blob in versions}.values(), key=lambda blob: blob.sha)
        merged = unique[0]
        for blob in unique[1:]:
            result = merge_file(None, self.read(merged), self.read(blob), self.vault_path(path) or path)
            if not result.ok:
                continue
            sha = _blob_id(result.data)
            if sha not in self._cache:
                self._cache[sha] = result.data
                self._made.add(sha)
            merged = Blob(path, sha, merged.mode)
        return merged

    def _follow_deleted(self, entity: _Entity, plan: TreePlan) -> None:
        """An edge to an item the merge deletes goes to the trash with it."""
        b, o, t = entity.versions["b"], entity.versions["o"], entity.versions["t"]
        # Ours' copy, or theirs' when it holds an edit nobody here has a copy of.
        kept = o if o is not None else (t if t != b else None)
        if o is not None:
            plan.delete(o.path)
        if kept is not None:
            plan.trashed.append((kept.path, self.read(kept)))
            plan.records.append(_record(kept.path, "edge-to-deleted", "follows-item"))

    def _restore_edge(self, entity: _Entity, claims: dict[str, list[_Claim]]) -> bool:
        """An edge removed only by the deletion the merge undid comes back; True if so."""
        b, o, t = entity.versions["b"], entity.versions["o"], entity.versions["t"]
        if (o is None) == (t is None):
            return False
        survivor = o if o is not None else t
        assert survivor is not None
        if b is not None and survivor != b:
            return False  # edited on the surviving side: the usual modify/delete rule
        claims.setdefault(survivor.path, []).append((entity, None if survivor is o else survivor.sha, survivor.mode))
        return True

    def _untouched_edges(self, plan: TreePlan) -> None:
        """Edges neither side changed that touch an item the merge deletes (a file
        removed by hand, without its links)."""
        if not plan.gone or self._incident is None:
            return
        for path, sha in self._incident(plan.gone):
            if path in self._changed:
                continue
            plan.delete(path)
            plan.trashed.append((path, self._cache.get(sha) or self._read_blobs([sha])[sha]))
            plan.records.append(_record(path, "edge-to-deleted", "follows-item"))

    # ------------------------------------------------------------------ claims

    def _settle_claims(self, claims: dict[str, list[_Claim]], plan: TreePlan) -> None:
        """Write every claimed path; two items claiming one path both survive."""
        taken = set(claims)
        for path in sorted(claims):
            entries = sorted(claims[path], key=lambda entry: entry[0].key)
            if len(entries) > 1 and not all(entity.item for entity, _, _ in entries):
                plan.failures.append((path, "two different files claim this path"))
                continue
            (keeper, data, mode), *others = entries
            if isinstance(data, str) and data in self._made:
                data = self._cache[data]  # merged here from history: not in the object store
            if data is not None:
                plan.write(path, data, mode)
                if keeper.item:
                    plan.touched.add(keeper.key.removeprefix("id:"))
            for entity, moved_data, moved_mode in others:
                if moved_data is None:  # ours, unchanged, must make room
                    held = entity.versions["o"]
                    assert held is not None
                    moved_data = held.sha
                target = self._free_path(path, entity.key.removeprefix("id:"), taken)
                taken.add(target)
                plan.write(target, moved_data, moved_mode)
                plan.moved.append((path, target))
                plan.touched.add(entity.key.removeprefix("id:"))

    def _free_path(self, path: str, item_id: str, taken: set[str]) -> str:
        stem = path[:-3] if path.endswith(".md") else path
        for suffix in (id_suffix(item_id), item_id.lower()):
            candidate = f"{stem}-{suffix}.md"
            if candidate not in taken and not self._occupied(candidate):
                return candidate
        return f"{stem}-{item_id.lower()}-{len(taken)}.md"


def _lacking_side(entity: _Entity) -> str | None:
    """The side without an item that the base lacks and the other side has, or None."""
    b, o, t = entity.versions["b"], entity.versions["o"], entity.versions["t"]
    if b is not None or (o is None) == (t is None):
        return None
    return "o" if o is None else "t"


def _blob(path: str, sha: str | None, mode: str) -> Blob | None:
    return Blob(path, sha, mode) if sha else None


def _blob_id(data: bytes) -> str:
    """git's object id for a blob of ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _record(path: str, kind: str, strategy: str, note: str | None = None) -> dict[str, Any]:
    return {
        "path": path, "kind": kind, "ok": True, "clean": note is None,
        "strategies": {"file": strategy}, "conflicts": [note] if note else [], "reason": None,
    }


def _item_id(data: bytes) -> str | None:
    """The id in an engram's frontmatter without a full parse, or None."""
    try:
        front, _ = codec.split_frontmatter(data.decode("utf-8-sig"))
    except (codec.CodecError, UnicodeDecodeError):
        return None
    match = _ID.search(front)
    return match.group(1) if match else None
