"""One item, two files: join the copies a git-level merge made of one item (issue 26).

engram's own merge (:mod:`engram.team.treemerge`) matches items by id, so an item moved
on one side and edited on the other stays one file. git's merge matches files by path:
when one clone restored a deleted item at its old path while another clone's merge had
brought it back renamed, a plain ``git pull`` (or ``git pull --rebase``) keeps both
files, and a push publishes one id twice. Search then folds the two into one hit and
``doctor`` calls the later one a copy — and a copy made by a person is a different thing.

:func:`join` runs after every change a pull or a sync brings in (from
:func:`engram.team.settle.between`, so both ``engram sync`` and the post-merge and
post-rewrite hooks run it). Its scope is narrow on purpose:

- only ids the change brought a file of while another file holds the same id — twins
  the merge made. Two files a person made on this machine (a copied note) are not a
  change from elsewhere and stay for ``doctor``, which gives the copy a new id;
- a person's note (:func:`persons_note`) only when no commit made one twin as a copy:
  notes made from an Obsidian template that carries an id share it, and each was
  committed beside the note it copies. Twins of one note that a merge made were never
  in one commit's tree until the merge (an engram item's twins are joined either way:
  engram items are not made from templates, and a rebase replays a restore on top of
  the renamed copy, which would look like a copy).

The twins are merged as the tree merge would have merged them: three-way, field by field,
with :func:`mergedriver.merge.merge_file`, against the newest version that every twin's
history holds and that is older than each twin — what each was edited from (a twin's
history follows the item by its id line through every path it had, the other twins'
paths aside); failing that, the item's version at the merge base
(the parents' base for a merge commit, else the base of the old and new commits — a
rebase's fork point), or, when the item was deleted before that base, its last version
before the delete; with none, two-way. Several twins fold in path order.
The merged item goes to the path engram would give it (its natural or id-suffixed path
when a twin sits there), else to the twin that moved away from the base's path, else to
the first path in sort order; the other files go to the item's trash bin. A twin merge
that conflicts in text is left alone, for a person (``doctor`` shows it).

Every choice depends only on the files and the commits, so every clone that joins the
same twins writes the same bytes; a second run finds nothing to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engram.errors import FormatError
from engram.index.rows import classify
from engram.items.state import VaultState
from engram.store.format import parse_engram
from engram.store.fsio import atomic_write
from engram.store.notes import persons_note
from engram.store.paths import expected_paths
from engram.team.gitstore import REGULAR, GitRepo
from mergedriver import codec
from mergedriver.merge import merge_file

_ID = re.compile(rb"^id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


def join(state: VaultState, repo: GitRepo, prefix: str, old: str, new: str, arrived: Iterable[str]) -> list[str]:
    """Join the twins among the item ids ``arrived`` (ids the change ``old``..``new``
    brought a file of); returns the vault paths of the joined items. Call under the vault
    lock, with the index level with the files."""
    arrived = set(arrived)
    if not arrived:
        return []
    marks = ",".join("?" * len(arrived))
    rows = state.index.query(
        f"SELECT id, path FROM items WHERE id IN ({marks}) AND id IN"
        " (SELECT id FROM items GROUP BY id HAVING count(*) > 1) ORDER BY id, path",
        sorted(arrived),
    )
    by_id: dict[str, list[str]] = {}
    for row in rows:
        by_id.setdefault(row["id"], []).append(row["path"])
    if not by_id:
        return []
    base = _base(repo, old, new)
    lead = prefix + "/" if prefix else ""
    joined = []
    for item_id, paths in sorted(by_id.items()):
        kept = _join_one(state, repo, lead, base, new, item_id, paths)
        if kept is not None:
            joined.append(kept)
    return joined


def arrived(repo: GitRepo, prefix: str, old: str, new: str) -> set[str]:
    """The ids of the items the change ``old``..``new`` added a file of (at a new path)."""
    lead = prefix + "/" if prefix else ""
    added = [change.new_sha for path, change in repo.diff_tree(old, new).items()
             if path.startswith(lead) and change.new_sha and change.old_sha is None
             and change.new_mode in REGULAR and classify(path[len(lead):]) == "item"]
    return {m.group(1).decode("utf-8", "replace")
            for data in repo.read_blobs(added).values() for m in [_ID.search(data[:4096])] if m}


def _base(repo: GitRepo, old: str, new: str) -> str | None:
    """The commit both sides of the change started from."""
    parents = repo.run("rev-parse", f"{new}^@", check=False).out.split()
    if len(parents) >= 2:
        return repo.merge_base(parents[0], parents[1])
    return repo.merge_base(old, new)


def _join_one(state: VaultState, repo: GitRepo, lead: str, base: str | None, new: str, item_id: str,
              paths: list[str]) -> str | None:
    versions: list[tuple[str, bytes]] = []
    mine = False
    for rel in paths:
        try:
            data = state.abspath(rel).read_bytes()
            item, _ = parse_engram(data, rel)
        except (OSError, FormatError):
            return None  # broken or gone: doctor reports it
        versions.append((rel, data))
        mine = mine or persons_note(item)
    if mine and _copied(repo, lead, new, item_id, paths):
        return None  # a note made from another (a template): doctor gives it its own id
    base_rel, base_data = _base_version(repo, lead, base, item_id, paths)
    common = _common_version(repo, lead, new, item_id, versions)
    if common is not None:
        base_data = common
    merged = versions[0][1]
    for rel, data in versions[1:]:
        result = merge_file(base_data, merged, data, rel)
        if not result.ok:
            return None  # the same lines changed apart: a person decides (doctor shows both)
        merged = result.data
    keep = _path(merged, [rel for rel, _ in versions], base_rel)
    atomic_write(state.abspath(keep), merged)
    for rel in paths:
        if rel != keep:
            state.to_trash(rel, state.trash_bin(item_id))
    state.index.refresh_paths([keep])
    state.audit.record(state.actor, "join", item_id, path=keep, fields=tuple(p for p in paths if p != keep))
    return keep


def _common_version(repo: GitRepo, lead: str, new: str, item_id: str,
                    versions: list[tuple[str, bytes]]) -> bytes | None:
    """The newest version engram wrote of the item that every twin's history holds: what
    each of them was edited from. The merge base's version is the wrong base when the
    twins were already there at that commit (a plain push published them, a peer edited
    one): a twin restored from an older version then looks as if it had deleted every line
    written since, and the join loses them (fuzz seed 1057). A version is a file whose
    content matches the ``contentHash`` it carries (a person's unrecorded edit is not
    one), keyed by ``version`` and that hash (a person's note engram never numbered is
    version 1, its hash its content's); each twin's history follows the item through every path it had."""
    found: list[dict[tuple[int, str], bytes]] = []
    stamps: list[tuple[int, str]] = []
    for rel, data in versions:
        try:
            item, _ = parse_engram(data, rel)
        except FormatError:
            return None
        stamps.append((item.version, item.content_hash))
        others = {lead + other for other, _ in versions if other != rel}
        lineage = _lineage(repo, new, lead + rel, item_id, others)
        key = _clean_version(data, rel, item_id)
        if key is not None:  # the twin as it is, ahead of its history (newest first)
            lineage = {key: data, **{k: v for k, v in lineage.items() if k != key}}
        found.append(lineage)

    def before_each(key: tuple[int, str]) -> bool:
        # What a twin was edited from is older than it, or it: git's rename detection may
        # lead one twin's history into the other's (a restore replayed on the renamed copy).
        return all(key[0] < version or key == (version, digest) for version, digest in stamps)

    shared = [key for key in set(found[0]).intersection(*found[1:]) if before_each(key)]
    if not shared:
        return None
    # The highest version; among equals (a person's note that engram never numbered is
    # version 1 throughout) the newest in the first twin's history.
    newest = {key: at for at, key in enumerate(found[0])}
    return found[0][max(shared, key=lambda key: (key[0], -newest[key]))]


def _lineage(repo: GitRepo, new: str, path: str, item_id: str, others: set[str],
             limit: int = 200) -> dict[tuple[int, str], bytes]:
    """The versions of the item in the history of ``path``'s file up to ``new``, newest
    first: every path the item has had (found by the commits that added or removed a
    line ``id: <item_id>`` — a rename by hand that changed the text too is no rename to
    git), in the commits that led to the twin's last change — but not the paths of the
    ``others`` twins: that one twin's file once sat where another sits now says nothing
    of what it was edited from, and a twin's own version taken for the base of the join
    would drop every line the other added (fuzz seed 5013)."""
    last = repo.run("log", "-1", "--format=%H", new, "--", path, check=False).out.strip()
    if not last:
        return {}
    pattern = f"^id:[ \t]*['\"]?{re.escape(item_id)}"
    lived = repo.log_changes(f"--max-count={limit}", f"-G{pattern}", last, "--", "*.md", check=False)
    paths = sorted(({change.path for _, changes in lived for change in changes} - others) | {path})
    shas: dict[str, str] = {}
    for _, changes in repo.log_changes(f"--max-count={limit}", last, paths=paths, check=False):
        for change in changes:
            if change.new_sha is not None:
                shas.setdefault(change.new_sha, change.path)
    blobs = repo.read_blobs(shas)
    lineage: dict[tuple[int, str], bytes] = {}
    for sha, name in shas.items():  # newest first, as git log lists them
        key = _clean_version(blobs[sha], name, item_id)
        if key is not None:
            lineage.setdefault(key, blobs[sha])
    return lineage


def _clean_version(data: bytes, rel: str, item_id: str) -> tuple[int, str] | None:
    """``(version, contentHash)`` of ``data`` when it is that item as engram wrote it."""
    try:
        item, _ = parse_engram(data, rel)
    except FormatError:
        return None
    if item.id != item_id or not item.content_hash or codec.content_hash(item.content) != item.content_hash:
        return None
    return item.version, item.content_hash


def _copied(repo: GitRepo, lead: str, new: str, item_id: str, paths: list[str]) -> bool:
    """Whether a commit in ``new``'s history added one of ``paths`` while its own tree
    held another of them with the same id: a copy, not a twin a merge made."""
    for rel in paths:
        added = repo.run("log", "-1", "--diff-filter=A", "--format=%H", new, "--", lead + rel, check=False).out.strip()
        if not added:
            continue
        others = [lead + other for other in paths if other != rel]
        if _version(repo, added, others, item_id) is not None:
            return True
    return False


def _base_version(repo: GitRepo, lead: str, base: str | None, item_id: str,
                  paths: list[str]) -> tuple[str | None, bytes | None]:
    """The item's file at the base commit (its vault path and bytes), or (None, None)."""
    if base is None:
        return None, None
    candidates = [lead + rel for rel in paths]
    candidates += repo.files_of(base, [item_id], lead).get(item_id, [])
    found_at = _version(repo, base, candidates, item_id)
    if found_at is None:
        # Deleted before the base (the restore's side deleted it, the other side's merge
        # undid that): its last version before the delete is what both sides edited.
        last = repo.run("rev-list", "-1", base, "--", *[lead + rel for rel in paths], check=False).out.strip()
        if last:
            found_at = _version(repo, f"{last}^", [lead + rel for rel in paths], item_id)
    if found_at is None:
        return None, None
    return found_at[0][len(lead):], found_at[1]


def _version(repo: GitRepo, commit: str, candidates: list[str], item_id: str) -> tuple[str, bytes] | None:
    for path in candidates:
        sha = repo.rev_blob(commit, path)
        if sha is None:
            continue
        data = repo.read_blob(sha)
        match = _ID.search(data[:4096])
        if match is not None and match.group(1).decode("utf-8", "replace") == item_id:
            return path, data
    return None


def _path(merged: bytes, paths: list[str], base_rel: str | None) -> str:
    """Where the joined item goes (see the module docstring)."""
    try:
        meta = codec.parse_engram(merged)[0]
    except codec.CodecError:
        meta = None
    if meta is not None:
        slug = meta.get("slug")
        natural = expected_paths(
            tuple(str(tag) for tag in meta.get("domainTags") or ()), str(slug) if slug else None,
            str(meta.get("title") or ""), str(meta.get("id")), paths[0],
            private=meta.get("visibility") == "private",
        )
        for path in natural:
            if path in paths:
                return path
    movers = [rel for rel in paths if rel != base_rel]
    if base_rel in paths and len(movers) == 1:
        return movers[0]
    return min(paths)
