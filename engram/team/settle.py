"""After a merge or a hand edit: bring the files' derived parts in line, so the vault is
doctor-clean but for what a person must decide.

:func:`settle` runs on the files a change touched — the files a merge brought in
(``engram sync``, or a plain ``git pull`` through the hooks), or the files a person
edited before sync commits them:

- ``contentHash``/``contentSize`` are recomputed from the content, **unless** the
  content looks cut short against the previous version (see :func:`cut_short`): a
  truncated write must never be blessed with a matching hash. Such a file is listed in
  :attr:`Settled.suspect` and left for ``engram doctor``, which shows the diff and asks;
- the ``## Synapses (derived)`` section is regenerated for the touched items, the items
  at either end of a touched edge and the neighbours of a touched item (whose title or
  path the section shows);
- an edge whose endpoint no longer exists — the item was deleted on another clone, or
  the edge arrived pointing at nothing — goes to ``.engram/trash/`` (the rule
  ``doctor --fix`` applies to ``dangling-synapse``), and its empty folder with it.

Only derived bytes change (:func:`engram.store.format.restamp` keeps every byte a
person wrote). Every write is atomic and under the vault lock; running it twice changes
nothing the second time, which is what makes an interrupted settle safe to redo. The
outcome depends only on the files, so every clone that settles the same tree writes the
same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from engram.index.rows import classify
from engram.items import derived
from engram.items.state import VaultState
from engram.store.format import restamp
from engram.store.fsio import atomic_write
from engram.store.model import Engram
from engram.team.gitstore import REGULAR, GitRepo
from mergedriver import codec

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

    @property
    def changed(self) -> int:
        return len(set(self.restamped) | set(self.regenerated)) + len(self.trashed)


def cut_short(previous: str, current: str) -> bool:
    """Whether ``current`` content looks like ``previous`` cut off part-way: a proper
    prefix of it (what a write interrupted by a crash, or an editor still saving,
    leaves). A person who deleted the last lines on purpose confirms it with
    ``engram doctor --accept``."""
    return current != previous and previous.startswith(current.rstrip("\n"))


def content_of(data: bytes | None) -> str | None:
    """The content of an engram file's bytes, or None when they are not one."""
    if data is None:
        return None
    try:
        return codec.parse_engram(data)[1]
    except codec.CodecError:
        return None


def settle(
    state: VaultState,
    changed: Iterable[str],
    *,
    removed: Iterable[str] = (),
    previous: Previous | None = None,
    skip: set[str] | None = None,
) -> Settled:
    """Settle the vault files ``changed`` (vault-relative) and the edges of the item ids
    ``removed`` (see the module docstring). Files in ``skip`` (being written, or held
    back from a commit) are not touched."""
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
        for rel in sorted(edges):
            for edge in state.index.query("SELECT source, target FROM synapses WHERE path = ?", (rel,)):
                ends.update((edge["source"], edge["target"]))
                if not _known(state, edge["source"]) or not _known(state, edge["target"]):
                    _trash(state, rel)
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
                    _settle_item(state, row.path, row.path in mine, previous, out)
    return out


def _known(state: VaultState, item_id: str) -> bool:
    return bool(state.index.query("SELECT 1 FROM items WHERE id = ? LIMIT 1", (item_id,)))


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


def _trash(state: VaultState, rel: str) -> None:
    state.to_trash(rel, state.trash_bin("merge"))
    state.audit.record(state.actor, "discard", rel.rsplit("/", 1)[-1].removesuffix(".yaml"),
                       target="synapse", path=rel, fields=("dangling",))


def _settle_item(state: VaultState, rel: str, changed: bool, previous: Previous | None, out: Settled) -> None:
    path = state.abspath(rel)
    try:
        data = path.read_bytes()
        meta, content, old = codec.parse_engram(data)
    except (OSError, codec.CodecError):
        return  # gone or broken: the index and doctor report it
    item = Engram.from_meta(meta, content, path=rel)
    lines = derived.lines_for(state.index, item)
    stale = meta.get("contentHash") != codec.content_hash(content) or meta.get("contentSize") != len(
        content.encode("utf-8")
    )
    fix_hash = False
    if stale and changed:
        before = content_of(previous(rel)) if previous is not None else None
        if before is not None and cut_short(before, content):
            out.suspect.append(rel)
        else:
            fix_hash = True
    if not fix_hash and "\n".join(lines) == old:
        return
    new = restamp(data, lines, hashes=fix_hash)
    if new == data:
        return
    atomic_write(path, new)
    meta, content, _ = codec.parse_engram(new)
    state.index.put_item(rel, Engram.from_meta(meta, content, path=rel), "\n".join(lines))
    if fix_hash:
        out.restamped.append(rel)
    if "\n".join(lines) != old:
        out.regenerated.append(rel)


def between(state: VaultState, repo: GitRepo, prefix: str, old: str, new: str) -> Settled:
    """Settle what changed in the vault between commits ``old`` and ``new`` (a merge, a
    fast-forward, a pull), judging cut-short content against ``old``'s versions."""
    lead = prefix + "/" if prefix else ""
    changes = {
        path[len(lead):]: change for path, change in repo.diff_tree(old, new).items() if path.startswith(lead)
    }
    shas = {rel: c.old_sha for rel, c in changes.items() if c.old_sha and c.old_mode in REGULAR}
    blobs = repo.read_blobs(shas.values())
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

    return settle(state, changes, removed=removed, previous=previous)
