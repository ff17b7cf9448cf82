"""Three-way merge of two commits' vault files, in memory, for ``engram sync``.

git's merge machinery starts the driver once per file and cannot know that an item that
moved is the same item. This planner works on the files both sides changed since the
merge base, reads the blobs through one persistent ``cat-file`` process, merges each
file with :func:`mergedriver.merge.merge_file` (the very function the driver runs), and
returns the changes to apply on top of ours; sync then writes a tree and a merge commit
without ever putting the repository in a merging state.

Units of merge. Items are matched across the three versions by **id**, not by path, so:

- an item renamed on one side (its title or domain changed) and edited on the other is
  merged at the new path;
- an item moved on both sides ends at the path of the side whose title and domain won
  the merge, else at the path that sorts first;
- an item deleted on one side and edited on the other survives with the edit and is
  flagged (``mergeConflicts``): deleting knowledge someone just improved needs a person;
- two different items that claim one path (two machines created the same title) both
  survive: the smaller id keeps the path, the other gets its id-suffixed path, exactly as
  ``Vault.create`` names a second item with a taken slug.

Every other file (synapses, notes, settings) is matched by path. A file that cannot be
merged (a text conflict, a side that does not parse) is a *failure*: the plan is not
applied and sync stops, leaving the repository as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engram.index.rows import classify
from engram.store.paths import id_suffix, item_relpath
from engram.team.gitstore import RawChange
from mergedriver import codec
from mergedriver.merge import Unmergeable, flag_engram, merge_file

REGULAR = ("100644", "100755")
DELETED_NOTE = (
    "deleted on one side and edited on the other; the edited item was kept. "
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


#: A path claim: the entity, its bytes (or blob id, or None to keep ours), its file mode.
_Claim = tuple[_Entity, bytes | str | None, str]


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
    touched: set[str] = field(default_factory=set)  # ids of items whose file changes
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

    ``read`` returns a blob's bytes; ``exists`` says whether ours has a path that neither
    side changed (used before moving an item to a path nobody chose); ``prefix`` is the
    vault folder inside the repository ('' when the vault is the repository).
    """

    def __init__(
        self,
        read: Callable[[Iterable[str]], dict[str, bytes]],
        exists: Callable[[str], bool],
        prefix: str = "",
    ) -> None:
        self._read_blobs = read
        self._exists = exists
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._cache: dict[str, bytes] = {}
        self._synapse_blobs: set[str] = set()

    def read(self, blob: Blob) -> bytes:
        if blob.sha not in self._cache:
            self._cache.update(self._read_blobs([blob.sha]))
        return self._cache[blob.sha]

    def vault_path(self, path: str) -> str | None:
        """The vault-relative path of a repository path, or None outside the vault."""
        if not path.startswith(self._prefix):
            return None
        return path[len(self._prefix) :]

    # ------------------------------------------------------------------ planning

    def plan(self, ours: Mapping[str, RawChange], theirs: Mapping[str, RawChange]) -> TreePlan:
        plan = TreePlan()
        # Every blob either side touched, read in one batch (a round trip each is slow).
        self._cache.update(self._read_blobs(
            sha
            for change in (*ours.values(), *theirs.values())
            for sha, mode in ((change.old_sha, change.old_mode), (change.new_sha, change.new_mode))
            if sha and mode in REGULAR
        ))
        claims: dict[str, list[_Claim]] = {}
        for entity in self._entities(ours, theirs):
            self._resolve(entity, plan, claims)
        self._settle_claims(claims, plan)
        return plan

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
            for side, blob in sides.items():
                if blob is None:
                    continue
                key = f"id:{ids[side]}" if ids is not None else f"path:{path}"
                entity = by_key.setdefault(key, _Entity(key, ids is not None))
                if entity.versions[side] is not None:  # the same id twice on one side
                    entity = by_key.setdefault(f"path:{path}", _Entity(f"path:{path}", False))
                entity.versions[side] = blob
            self._note_endpoints(path, sides)
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

    def _note_endpoints(self, path: str, sides: Mapping[str, Blob | None]) -> None:
        rel = self.vault_path(path)
        if rel is not None and classify(rel) == "synapse":
            self._synapse_blobs.update(
                blob.sha for blob in sides.values() if blob is not None and blob.mode in REGULAR
            )

    def endpoints(self) -> set[str]:
        """Item ids at either end of every synapse either side changed (their links moved)."""
        found: set[str] = set()
        for sha in self._synapse_blobs:
            data = self._cache.get(sha) or self._read_blobs([sha])[sha]
            found.update(m.decode("utf-8", "replace") for m in _ENDPOINT.findall(data))
        return found

    # ------------------------------------------------------------------ resolving

    def _resolve(self, entity: _Entity, plan: TreePlan, claims: dict[str, list[_Claim]]) -> None:
        b, o, t = entity.versions["b"], entity.versions["o"], entity.versions["t"]
        if o == t or t == b:
            # Nothing new from theirs: ours stands, but it still holds its path against
            # another item that claims it.
            if o is not None:
                claims.setdefault(o.path, []).append((entity, None, o.mode))
            return
        if o == b:
            plan.taken += 1
            if o is not None and (t is None or o.path != t.path):
                plan.delete(o.path)
            if t is not None:
                claims.setdefault(t.path, []).append((entity, t.sha, t.mode))
            return
        if o is None or t is None:
            survivor = o if o is not None else t
            assert survivor is not None  # o == t == None returned above
            self._modified_deleted(entity, survivor, plan, claims)
            return
        self._merge_both(entity, b, o, t, plan, claims)

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
        plan.records.append(
            {"path": survivor.path, "kind": "modify/delete", "ok": True, "clean": False,
             "strategies": {"file": "edit-survives"}, "conflicts": [DELETED_NOTE], "reason": None}
        )
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
        path = self._merged_path(entity, b, o, t, result.data)
        if not result.clean:
            plan.flagged.append(path)
        if path != o.path:
            plan.delete(o.path)
        mode = t.mode if b is not None and o.mode == b.mode else o.mode
        claims.setdefault(path, []).append((entity, result.data, mode))

    def _merged_path(self, entity: _Entity, b: Blob | None, o: Blob, t: Blob, data: bytes) -> str:
        if o.path == t.path or (b is not None and t.path == b.path):
            return o.path
        if b is not None and o.path == b.path:
            return t.path
        # Moved on both sides: the path of the side whose title and domain won the merge.
        if entity.item:
            merged = _placement(data)
            won = [side.path for side in (o, t) if merged is not None and _placement(self.read(side)) == merged]
            if won:
                return min(won)  # by path, never by role: every machine picks the same
        return min(o.path, t.path)

    # ------------------------------------------------------------------ paths

    def _settle_claims(self, claims: dict[str, list[_Claim]], plan: TreePlan) -> None:
        """Write every claimed path; two items claiming one path both survive."""
        taken = set(claims)
        for path in sorted(claims):
            entries = sorted(claims[path], key=lambda entry: entry[0].key)
            if len(entries) > 1 and not all(entity.item for entity, _, _ in entries):
                plan.failures.append((path, "two different files claim this path"))
                continue
            (keeper, data, mode), *others = entries
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
            if candidate not in taken and not self._exists(candidate):
                return candidate
        return f"{stem}-{item_id.lower()}-{len(taken)}.md"



def _blob(path: str, sha: str | None, mode: str) -> Blob | None:
    return Blob(path, sha, mode) if sha else None


def _item_id(data: bytes) -> str | None:
    """The id in an engram's frontmatter without a full parse, or None."""
    try:
        front, _ = codec.split_frontmatter(data.decode("utf-8-sig"))
    except (codec.CodecError, UnicodeDecodeError):
        return None
    match = _ID.search(front)
    return match.group(1) if match else None


def _placement(data: bytes) -> str | None:
    """Where an item's frontmatter says it belongs (domain and slug), for comparing sides."""
    try:
        meta = codec.parse_engram(data)[0]
    except codec.CodecError:
        return None
    try:
        return item_relpath(tuple(meta.get("domainTags") or ()), str(meta.get("slug") or ""))
    except Exception:  # noqa: BLE001 - an odd domain only means "no opinion" here
        return None
