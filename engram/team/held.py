"""Local edits sync could not commit yet, carried across a pull instead of blocking it.

A file sync holds back (:mod:`engram.team.staging`: it does not parse, it is still being
written, …) or one a person saved while sync was merging is an uncommitted change in the
work tree. When the pull changes the same path, git's ``merge --ff-only`` refuses to
move the work tree, and a clone that refused once would refuse on every sync after:
stuck, never pushing or pulling again. Instead, around the work-tree update:

1. :func:`set_aside` copies each such file's bytes to ``.engram/held/files/`` and
   records, in ``.engram/held/bases.json``, the commit blob the edit started from (its
   *base*: the version at HEAD before the pull); then it puts the file back to that
   version, so git sees a clean path;
2. git moves the work tree (the caller);
3. :func:`put_back` writes the person's bytes back over the pulled version. The work
   tree again holds exactly what the person wrote; the peer's version is at HEAD.

The edit is thus still uncommitted, and now its base is older than HEAD. When the file
is whole, the next commit does not take it as it is — that would undo the peer's change
— but merges it (:func:`merge_pending`): base, the person's bytes and HEAD's version go
through :func:`mergedriver.merge.merge_file`, the function git's merge driver runs, and
the result is written to the file and committed. Nothing is hidden: the edit stays in
its file, the peer's change in the commit, and the merge joins them.

Invariants: the copies in ``.engram/held/files/`` exist only between steps 1 and 3; a
sync killed in between finds them at its next start and :func:`recover` puts them back
(after the journal has finished the work-tree update). A base is kept only while the
file differs from HEAD; the first base recorded for a path stays (a second pull before
the commit merges from the older base, which includes both pulls). Only vault files are
handled; the caller holds the vault lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from engram.items.state import VaultState
from engram.store.fsio import atomic_write, prune_empty_dirs, remove
from engram.team.gitstore import REGULAR, GitRepo
from mergedriver.merge import merge_file

FOLDER = "held"
BASES = "bases.json"
FILES = "files"


@dataclass
class SetAside:
    """Files :func:`set_aside` moved out of git's way: vault-relative path → their bytes
    (None: the person had removed the file)."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Merged:
    """What :func:`merge_pending` did to one held file."""

    rel: str
    data: bytes | None  # the merged bytes (written to the file), or None: it must wait
    clean: bool
    reason: str = ""


class Bases:
    """``.engram/held/bases.json``: vault path → the blob a local edit started from
    (None: the file was new)."""

    def __init__(self, state: VaultState) -> None:
        self.folder = state.state_dir / FOLDER
        self.path = self.folder / BASES

    def load(self) -> dict[str, str | None]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): (str(v) if isinstance(v, str) else None) for k, v in data.items()}

    def save(self, bases: dict[str, str | None]) -> None:
        if not bases:
            remove(self.path)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, (json.dumps(bases, indent=1, sort_keys=True) + "\n").encode())


def set_aside(repo: GitRepo, state: VaultState, prefix: str, old: str | None, new: str, dirty: set[str]) -> SetAside:
    """Step 1 of the module docstring, for the vault files in ``dirty`` (vault-relative:
    uncommitted changes) that the update from ``old`` to ``new`` changes."""
    aside = SetAside()
    if old is None or not dirty:
        return aside
    lead = prefix + "/" if prefix else ""
    changes = {path[len(lead):]: c for path, c in repo.diff_tree(old, new).items() if path.startswith(lead)}
    touched = sorted(rel for rel in dirty if rel in changes)
    if not touched:
        return aside
    base_shas = {rel: changes[rel].old_sha if changes[rel].old_mode in REGULAR else None for rel in touched}
    blobs = repo.read_blobs(sha for sha in base_shas.values() if sha)
    bases = Bases(state)
    recorded = bases.load()
    for rel in touched:
        path = state.abspath(rel)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            continue  # a link or a folder: git's own refusal explains it
        data = path.read_bytes() if info is not None else None
        base = base_shas[rel]
        if data == (blobs[base] if base else None):
            continue  # not really changed (stale stat information in git's index)
        aside.files[rel] = data
        if info is not None:
            aside.modes[rel] = info.st_mode
            copy = bases.folder / FILES / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(copy, data or b"")
        recorded.setdefault(rel, base)
    bases.save(recorded)
    for rel in aside.files:  # back to the committed version: git now sees a clean path
        base = base_shas[rel]
        path = state.abspath(rel)
        if base is None:
            remove(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, blobs[base])
    if aside.files:
        repo.run("reset", "--quiet", old, "--", *(lead + rel for rel in aside.files), check=False)
    return aside


def put_back(state: VaultState, aside: SetAside) -> list[str]:
    """Step 3: the person's bytes over the pulled version; the paths put back. A file the
    person had removed stays as the pull left it (an edit survives a delete, as in every
    merge) and loses its base."""
    bases = Bases(state)
    recorded = bases.load()
    done = []
    for rel, data in sorted(aside.files.items()):
        path = state.abspath(rel)
        if data is None:
            recorded.pop(rel, None)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(aside.modes.get(rel, 0o644)))
        done.append(rel)
    bases.save(recorded)
    _drop_copies(bases, aside.files)
    return done


def recover(state: VaultState) -> list[str]:
    """After a sync killed between :func:`set_aside` and :func:`put_back` (and after the
    journal finished the work-tree update): put the saved copies back."""
    bases = Bases(state)
    root = bases.folder / FILES
    if not root.is_dir():
        return []
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    aside = SetAside({rel: (root / rel).read_bytes() for rel in found})
    return put_back(state, aside)


def merge_pending(
    repo: GitRepo, state: VaultState, committed: dict[str, bytes], ready: dict[str, bytes], changed: set[str]
) -> list[Merged]:
    """Merge the whole files in ``ready`` (vault path → the bytes vetted) whose edit
    started from another version than HEAD's (``committed``: HEAD's bytes by path). Each
    merged file is written in place; the caller commits it. Bases of files no longer in
    ``changed`` (the uncommitted changes) are forgotten."""
    bases = Bases(state)
    recorded = bases.load()
    if not recorded:
        return []
    out: list[Merged] = []
    blobs = repo.read_blobs(sha for rel, sha in recorded.items() if sha and rel in ready)
    for rel in sorted(set(recorded) & set(ready)):
        base_sha = recorded.pop(rel)
        base = blobs[base_sha] if base_sha else None
        theirs = committed.get(rel)
        if theirs is None or theirs == base:
            continue  # HEAD did not move under the edit, or a peer deleted it (an edit survives)
        result = merge_file(base, ready[rel], theirs, rel)
        if not result.ok:
            recorded[rel] = base_sha  # it waits, with its base, for a person
            out.append(Merged(rel, None, False, result.reason or "both sides changed the same lines"))
            continue
        atomic_write(state.abspath(rel), result.data)
        out.append(Merged(rel, result.data, result.clean))
    bases.save({rel: sha for rel, sha in recorded.items() if rel in changed})
    return out


def _drop_copies(bases: Bases, rels: Iterable[str]) -> None:
    root = bases.folder / FILES
    for rel in rels:
        path = root / rel
        remove(path)
        prune_empty_dirs(path.parent, bases.folder)
