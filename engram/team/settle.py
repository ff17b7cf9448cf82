"""After a merge or a hand edit: bring the files' derived parts in line, so the vault is
doctor-clean but for what a person must decide.

:func:`settle` runs on the files a change touched — the files a merge brought in
(``engram sync``, or a plain ``git pull`` through the hooks), or the files a person
edited before sync commits them:

- ``contentHash``/``contentSize`` are recomputed from the content (for this clone's own
  edits before a commit, the edit is also recorded as a new version, as every engram
  writer records an outside edit — staging has already vetted them as whole), **unless**
  content that arrived from elsewhere is the previous version cut off inside a line (see
  :func:`stopped_mid_line`, the rule staging applies to this clone's own edits): a
  truncated write must never be blessed with a matching hash. Such a file is listed in
  :attr:`Settled.suspect` and left for ``engram doctor``, which shows the diff and asks.
  Whole lines deleted — the last ones included — are a person's edit wherever it was
  made: a peer who deleted a line and pushed it with plain git is not second-guessed on
  every other clone;
- the ``## Synapses (derived)`` section is regenerated for the touched items, the items
  at either end of a touched edge and the neighbours of a touched item (whose title or
  path the section shows);
- an edge whose endpoint no longer exists — the item was deleted on another clone, or
  the edge arrived pointing at nothing — goes to ``.engram/trash/`` (the rule
  ``doctor --fix`` applies to ``dangling-synapse``), and its empty folder with it. An
  item no longer exists when no file in the vault carries its id: an index that was
  never built, or lags the files, is brought level with them before it may say so
  (:class:`VaultItems`);
- after a merge or a pull (:func:`between`), this clone's last copy of every item the
  change removed goes to the trash too, so ``engram trash list`` and ``engram restore``
  work on every clone, not only on the one that deleted it. Both land in the bin of the
  deleted item, ``.engram/trash/<id>/<when>/``, where ``delete`` puts its own copies;
- an edge the change removed because an end was deleted comes back when every end is
  here again — a ``git pull --rebase`` that replays an edit of a note over its delete
  brings the note back without any merge of engram's weighing its edges
  (:func:`_edges_back`);
- and an item the change brought back (its delete undone by a concurrent edit, or
  restored on another clone) gets back from this clone's bins the versions of its edges
  that git never saw — made or changed here, then deleted with the item before a sync
  shared them — merged into the edge the change brought, if any (evidence as a set).
  The versions git has seen were weighed by the merge (:mod:`engram.team.treemerge`);
  an edge someone unlinked having seen it stays unlinked.

Only derived bytes change: engram's own files are rendered canonically with just
those fields moved, and a person's note is edited in place
(:func:`engram.store.format.write_engram`), keeping every byte they wrote. Every write is atomic and under the vault lock; running it twice changes
nothing the second time, which is what makes an interrupted settle safe to redo. The
outcome depends only on the files, so every clone that settles the same tree writes the
same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from engram.errors import FormatError
from engram.index.rows import BAD_KINDS, classify
from engram.items import derived
from engram.items.state import VaultState, edited_outside, settled
from engram.store.format import is_canonical, parse_engram, write_engram
from engram.store.fsio import atomic_write
from engram.store.notes import persons_note, read_note
from engram.team import twins
from engram.team.gitstore import REGULAR, GitRepo
from mergedriver import codec
from mergedriver.merge import merge_file

#: The previous bytes of a vault file (before the merge or the edit), or None.
Previous = Callable[[str], "bytes | None"]
_ENDPOINT = re.compile(rb"^(?:from|to):[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)
_ID = re.compile(rb"^id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


@dataclass
class Settled:
    """What :func:`settle` changed."""

    restamped: list[str] = field(default_factory=list)  # hashes recomputed
    regenerated: list[str] = field(default_factory=list)  # derived sections rewritten
    trashed: list[str] = field(default_factory=list)  # dangling edges moved to the trash
    suspect: list[str] = field(default_factory=list)  # hash left stale: content looks cut short
    relinked: list[str] = field(default_factory=list)  # edges of items back, from this clone's trash
    twins: list[str] = field(default_factory=list)  # items a git merge left in two files, joined

    @property
    def changed(self) -> int:
        return (len(set(self.restamped) | set(self.regenerated)) + len(self.trashed) + len(self.relinked)
                + len(self.twins))


def stopped_mid_line(previous: str, current: str) -> bool:
    """Whether ``current`` is ``previous`` cut off inside a line — a write that stopped
    half-way. Deleting whole lines in an editor (the last ones too) never looks so."""
    cut = current.rstrip("\n")  # the reader ends content with a newline
    if current == previous or not cut or not previous.startswith(cut) or len(previous) == len(cut):
        return False
    return previous[len(cut)] != "\n"


def content_of(data: bytes | None) -> str | None:
    """The content of a note's bytes (engram's or a person's), or None when unreadable."""
    if data is None:
        return None
    try:
        return read_note(data, "note.md").item.content
    except FormatError:
        return None


def settle(
    state: VaultState,
    changed: Iterable[str],
    *,
    removed: Iterable[str] = (),
    previous: Previous | None = None,
    skip: set[str] | None = None,
    record: bool = False,
) -> Settled:
    """Settle the vault files ``changed`` (vault-relative) and the edges of the item ids
    ``removed`` (see the module docstring). Files in ``skip`` (being written, or held
    back from a commit) are not touched. With ``record`` (this clone's own edits, before
    a commit) an outside content edit also becomes a new version by the vault's actor."""
    out = Settled()
    paths = sorted(set(changed))
    with state.lock.hold():
        state.index.refresh_paths(paths)
        edges = {rel for rel in paths if classify(rel) == "synapse" and (state.root / rel).is_file()}
        ends: set[str] = set(removed)
        for rel in paths:  # an edge removed by the change: its ends' sections lose a line
            if classify(rel) == "synapse" and rel not in edges and previous is not None:
                ends.update(m.decode("utf-8", "replace") for m in _ENDPOINT.findall(previous(rel) or b""))
        edges.update(_incident_paths(state, set(removed)))
        vault = VaultItems(state)
        for rel in sorted(edges):
            for edge in state.index.query("SELECT source, target FROM synapses WHERE path = ?", (rel,)):
                ends.update((edge["source"], edge["target"]))
                missing = sorted(end for end in (edge["source"], edge["target"]) if not vault.exist(end))
                if missing:
                    _trash(state, rel, missing[0])
                    out.trashed.append(rel)
        items = [rel for rel in paths if classify(rel) == "item"]
        touched = {row.id: row.path for rel in items for row in state.index.item_rows("path = ?", (rel,))}
        affected = set(touched) | ends
        for item_id in list(touched):
            affected.update(state.neighbours(item_id))
        mine = set(items)
        for item_id in sorted(affected):
            for row in state.index.item_rows("id = ?", (item_id,)):
                if skip is None or row.path not in skip:
                    _settle_item(state, row.path, row.path in mine, previous, record, out)
    return out


class VaultItems:
    """Which items the vault holds, for deciding that an edge's endpoint is gone.

    Asked of an index that has seen the whole vault: a clone's index may never have been
    built (a clone set up with only the hooks) or may lag the files (a pull that ran no
    hook), so the first id it does not know brings it level with the files before an
    item is called deleted. A file that does not parse still holds its id's item: an
    item is gone only when no file in the vault carries its id."""

    def __init__(self, state: VaultState) -> None:
        self._state = state
        self._unparsed: set[str] | None = None  # ids in files that do not parse, once level

    def exist(self, item_id: str) -> bool:
        if self._indexed(item_id):
            return True
        if self._unparsed is None:
            self._state.refresh()
            self._unparsed = self._ids_of_unparsed()
            if self._indexed(item_id):
                return True
        return item_id in self._unparsed

    def _indexed(self, item_id: str) -> bool:
        return bool(self._state.index.query("SELECT 1 FROM items WHERE id = ? LIMIT 1", (item_id,)))

    def _ids_of_unparsed(self) -> set[str]:
        marks = ",".join("?" * len(BAD_KINDS))
        ids = set()
        for row in self._state.index.query(f"SELECT path FROM files WHERE kind IN ({marks})", BAD_KINDS):
            try:
                with self._state.abspath(row["path"]).open("rb") as handle:
                    found = _ID.search(handle.read(4096))
            except OSError:
                continue
            if found is not None:
                ids.add(found.group(1).decode("utf-8", "replace"))
        return ids


def _incident_paths(state: VaultState, ids: set[str]) -> list[str]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return [
        row["path"]
        for row in state.index.query(
            f"SELECT path FROM synapses WHERE source IN ({marks}) OR target IN ({marks})", [*ids, *ids]
        )
    ]


def _trash(state: VaultState, rel: str, gone: str) -> None:
    state.to_trash(rel, state.trash_bin(gone))
    state.audit.record(state.actor, "discard", rel.rsplit("/", 1)[-1].removesuffix(".yaml"),
                       target="synapse", path=rel, fields=("dangling",))


def _settle_item(
    state: VaultState, rel: str, changed: bool, previous: Previous | None, record: bool, out: Settled
) -> None:
    path = state.abspath(rel)
    try:
        data = path.read_bytes()
        item, old = parse_engram(data, rel)
    except (OSError, FormatError):
        return  # gone or broken: the index and doctor report it
    if persons_note(item):
        return  # a person's note: shared as it is, never rewritten
    lines = derived.lines_for(state.index, item)
    fresh = item
    if changed and edited_outside(item):
        # This clone's own edit reached here vetted as whole and stable: shorter text is
        # the person's choice. Only content that arrived from elsewhere is judged.
        before = content_of(previous(rel)) if previous is not None and not record else None
        if before is not None and stopped_mid_line(before, item.content):
            out.suspect.append(rel)
        else:
            # A local edit is recorded as a new version by this clone's actor; a peer's
            # stale hash taken in a merge only gets its hash: the same bytes on every clone.
            fresh = settled(item, state.actor, bump=record)
    if fresh == item and "\n".join(lines) == old:
        return
    if is_canonical(data):  # engram's own file: only the fields that changed move
        meta, content, _ = codec.parse_engram(data)
        was, now_meta = item.to_meta(), fresh.to_meta()
        meta.update({key: value for key, value in now_meta.items() if was.get(key) != value})
        atomic_write(path, codec.render_engram(meta, content, lines))
    else:  # a person's note: edited in place, every other byte kept
        write_engram(path, fresh, lines)
    state.index.put_item(rel, fresh, "\n".join(lines))
    if fresh != item:
        out.restamped.append(rel)
    if "\n".join(lines) != old:
        out.regenerated.append(rel)


def between(state: VaultState, repo: GitRepo, prefix: str, old: str, new: str) -> Settled:
    """Settle what changed in the vault between commits ``old`` and ``new`` (a merge, a
    fast-forward, a pull), judging torn content against ``old``'s versions."""
    lead = prefix + "/" if prefix else ""
    changes = {
        path[len(lead):]: change for path, change in repo.diff_tree(old, new).items() if path.startswith(lead)
    }
    shas = {rel: c.old_sha for rel, c in changes.items() if c.old_sha and c.old_mode in REGULAR}
    added = {rel: c.new_sha for rel, c in changes.items()
             if c.new_sha and c.old_sha is None and c.new_mode in REGULAR and classify(rel) == "item"}
    blobs = repo.read_blobs([*shas.values(), *added.values()])
    by_id: dict[str, bytes] = {}
    removed: set[str] = set()
    for rel, sha in shas.items():
        found = _ID.search(blobs[sha]) if classify(rel) == "item" else None
        if found is not None:
            item_id = found.group(1).decode("utf-8", "replace")
            by_id[item_id] = blobs[sha]
            if changes[rel].new_sha is None:
                removed.add(item_id)  # gone from this path; settle checks it is gone for good

    def previous(rel: str) -> bytes | None:
        if rel in shas:
            return blobs[shas[rel]]
        try:  # moved by the change: the same id's old version
            found = _ID.search(state.abspath(rel).read_bytes()[:4096])
        except OSError:
            return None
        return by_id.get(found.group(1).decode("utf-8", "replace")) if found else None

    back = {m.group(1).decode("utf-8", "replace") for sha in added.values() for m in [_ID.search(blobs[sha])] if m}
    local_edges = {rel: blobs[sha] for rel, sha in shas.items()
                   if changes[rel].new_sha is None and classify(rel) == "synapse"}
    removals = _removals(repo, lead, old, new)  # the change's commits that removed edges
    with state.lock.hold():
        relinked = _relink(state, repo, back - set(by_id))  # an item moved is not back
        if back or removals:  # what follows asks the index which items exist now
            state.ensure_indexed()
            state.index.refresh_paths(sorted(changes))
        relinked += _edges_back(state, repo, lead, removals, local_edges)
        # An id that arrived at a path may now be held twice (engram.team.twins).
        joined = twins.join(state, repo, prefix, old, new, back) if back else []
    out = settle(state, [*changes, *relinked, *joined], removed=removed, previous=previous)
    out.relinked = relinked
    out.twins = joined
    with state.lock.hold():
        vault = VaultItems(state)
        for rel, sha in sorted(shas.items()):
            if changes[rel].new_sha is None:
                keep_in_trash(state, rel, blobs[sha], vault=vault)
    return out


def _removals(repo: GitRepo, lead: str, old: str, new: str) -> list[tuple[str, dict[str, str], list[str]]]:
    """The commits of ``old..new`` that deleted files, newest first: each with the edge
    files it deleted (vault path to blob) and the blobs of the item files it deleted."""
    commits: list[tuple[str, dict[str, str], list[str]]] = []
    for commit, changes in repo.log_changes("--diff-filter=D", f"{old}..{new}", paths=[lead or "."], check=False):
        edges: dict[str, str] = {}
        items: list[str] = []
        for change in changes:
            rel = change.path[len(lead):]
            if change.old_sha is None:
                continue
            if classify(rel) == "synapse":
                edges[rel] = change.old_sha
            elif classify(rel) == "item":
                items.append(change.old_sha)
        commits.append((commit, edges, items))
    return [commit for commit in commits if commit[1]]


def _edges_back(state: VaultState, repo: GitRepo, lead: str,
                removals: list[tuple[str, dict[str, str], list[str]]], local: dict[str, bytes]) -> list[str]:
    """Edges a commit of the change removed because an end of theirs was deleted, when
    every end is here again: a ``git pull --rebase`` that replays an edit of the item over
    its delete brings the item back, and no merge of engram's weighed its edges (fuzz
    seed 3053) — edges this clone had (``local``: their versions before the change) and
    edges a peer made and another removed, both upstream of it. An edge counts as removed
    with its end when the last commit to remove it removed a file of the end too
    (``delete``) or found the end already gone (settle's dangling edges, in a commit of
    their own); an edge removed otherwise was unlinked and stays so. The edge comes back
    as the deleting commit removed it, merged with this clone's version (evidence as a
    set). Returns the vault paths written."""
    last: dict[str, tuple[str, str, list[str]]] = {}  # edge path -> (commit, blob, item blobs)
    for commit, edges, items in removals:  # newest first: the last removal wins
        for rel, sha in edges.items():
            last.setdefault(rel, (commit, sha, items))
    wanted = {rel: at for rel, at in last.items() if not state.abspath(rel).is_file()}
    if not wanted:
        return []
    blobs = repo.read_blobs({sha for _, sha, items in wanted.values() for sha in (sha, *items)})
    vault = VaultItems(state)
    back: list[str] = []
    for rel, (commit, sha, items) in sorted(wanted.items()):
        data = blobs[sha]
        mine = local.get(rel)
        if mine is not None and mine != data:
            merged = merge_file(None, mine, data, rel)
            data = merged.data if merged.ok else mine
        ends = sorted({m.decode("utf-8", "replace") for m in _ENDPOINT.findall(data)})
        if not ends or not all(vault.exist(end) for end in ends):
            continue
        with_it = {m.group(1).decode("utf-8", "replace") for item in items for m in [_ID.search(blobs[item])] if m}
        if not with_it & set(ends) and len(repo.files_of(f"{commit}^", ends, lead)) == len(ends):
            continue  # unlinked while both ends were there: it stays unlinked
        target = state.abspath(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)
        state.audit.record(state.actor, "relink", rel.rsplit("/", 1)[-1].removesuffix(".yaml"), target="synapse",
                           path=rel)
        back.append(rel)
    return back


def _relink(state: VaultState, repo: GitRepo, back: set[str]) -> list[str]:
    """Bring the edges of items that are ``back`` out of this clone's bins, where git
    never saw that version (see the module docstring); returns their vault paths."""
    found = [
        (file, bin_dir)
        for item_id in sorted(back)
        if (state.state_dir / "trash" / item_id).is_dir()
        for bin_dir in sorted(p for p in (state.state_dir / "trash" / item_id).iterdir() if p.is_dir())
        for file in sorted(bin_dir.rglob("syn-*.yaml"))
    ]
    if not found:
        return []
    listed = "\n".join(str(file) for file, _ in found).encode()
    shas = repo.run("hash-object", "--no-filters", "--stdin-paths", stdin=listed).out.split()
    answers = repo.run("cat-file", "--batch-check", stdin="\n".join(shas).encode()).out.splitlines()
    vault = VaultItems(state)
    relinked: list[str] = []
    for (file, bin_dir), answer in zip(found, answers, strict=True):
        data = file.read_bytes()
        ends = [m.decode("utf-8", "replace") for m in _ENDPOINT.findall(data)]
        if not answer.endswith(" missing") or not ends or not all(vault.exist(end) for end in ends):
            continue  # shared once (the merge weighed it), or an end is gone: it stays in the trash
        rel = file.relative_to(bin_dir).as_posix()
        target = state.abspath(rel)
        if target.is_file():
            result = merge_file(None, target.read_bytes(), data, rel)
            if not result.ok:
                continue
            data = result.data
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, data)
        state.audit.record(state.actor, "relink", rel.rsplit("/", 1)[-1].removesuffix(".yaml"), target="synapse",
                           path=rel)
        file.unlink()
        for folder in (file.parent, *file.parent.parents):  # the bin keeps no empty folders
            if folder == state.state_dir / "trash" or any(folder.iterdir()):
                break
            folder.rmdir()
        relinked.append(rel)
    return sorted(set(relinked))


def keep_in_trash(
    state: VaultState, rel: str, data: bytes, gone: Collection[str] | None = None, *, vault: VaultItems | None = None
) -> None:
    """Keep this clone's copy of a file a change removed (``rel``, vault-relative) in the
    trash when it belonged to an item that is gone now — the item itself, or an edge of
    it — in that item's bin, as ``delete`` keeps its own. Once: settling the same change
    again adds nothing. Other files (an item moved, not deleted) are not kept. ``gone``
    names the deleted items when the index does not know yet (a merge not checked out);
    otherwise ``vault`` (one per settle, made here when not given) says which items are."""
    kind = classify(rel)
    if kind == "item":
        found = _ID.search(data)
        ids = [found.group(1).decode("utf-8", "replace")] if found else []
    elif kind == "synapse":
        ids = sorted(m.decode("utf-8", "replace") for m in _ENDPOINT.findall(data))
    else:
        return
    if gone is None:
        present = vault if vault is not None else VaultItems(state)
        gone = [i for i in ids if not present.exist(i)]
    deleted = [i for i in ids if i in gone]
    if not deleted:
        return
    base = state.state_dir / "trash" / deleted[0]
    if base.is_dir() and any((bin_dir / rel).is_file() and (bin_dir / rel).read_bytes() == data
                             for bin_dir in base.iterdir()):
        return
    target = state.trash_bin(deleted[0]) / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, data)
