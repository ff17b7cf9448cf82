"""What ``engram sync`` commits: only files that are whole, and only the vault's.

A file in the work tree is not committed just because it changed. Each changed path in
the vault folder is *vetted* first, and held back — left out of the commit, named in
the report with the reason, the sync ending "partial" — when it is:

- an editor's temporary or swap file (``.foo.md.swp``, ``foo.md~``, ``.#foo.md``,
  ``*.tmp``, …), or engram's own half-written temp file;
- not a regular file (a symbolic link, a FIFO, a device), or over its reader's size
  limit;
- an item, a synapse, a proposal or ``engram.yaml`` that does not parse with the
  canonical reader, a file that starts like an engram item (``---`` then ``id:``) but
  whose frontmatter never closes (a write that stopped half-way), or a file that was an
  item in the last commit and no longer is one (0 bytes, or its frontmatter gone);
- still being written: changed within the settle window (``sync.settleSeconds``,
  default 1 s) and changed again when looked at after it. Files engram wrote itself
  (canonical bytes, a matching hash; the template's files as ``engram init`` laid them)
  and removals engram's audit log records are not waited for: engram writes atomically.

- an item whose content is the committed content cut off *in the middle of a line*
  (:func:`engram.team.settle.stopped_mid_line`): what a write that stopped half-way
  leaves, and what no editor's line deletion does. ``engram doctor`` shows the
  difference; ``engram doctor --accept PATH`` keeps the shorter text.

Nothing under ``.engram/`` or ``private/`` is ever a change to commit, whatever
``.gitignore`` says: those folders hold one machine's state and private items. A commit
that tracks files there (an older engram committed ``.engram/`` in a clone of a folder
whose own ``.gitignore`` did not name it; a commit past the hook can carry ``private/``)
has them taken off the branch by the next sync's commit — untracked, the files left in
place.

Otherwise a file that parses and is stable is the person's edit, whatever it removed:
deleting whole lines — the last ones included — is an ordinary edit. A held file never
stops the clone from syncing: when a pull changes it too, it is carried across the pull
in its file (:mod:`engram.team.held`) and merged with the pulled version once whole.

The files that pass are settled (:mod:`engram.team.settle`: a person's body edit is
recorded — a new ``contentHash`` and version — and stale link sections are
regenerated), and the commit is built
in a temporary index from exactly the bytes that were vetted — a file that changes
again afterwards is not slipped in — so the real index never holds a half-staged state
and other staged work (or files outside the vault) never enters sync's commit. The
commit runs git's own ``commit`` (hooks included).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from engram.errors import FormatError, GitError
from engram.index.rows import classify
from engram.items.state import VaultState, edited_outside
from engram.store.format import is_canonical
from engram.store.fsio import TEMP_SUFFIX
from engram.store.notes import FILE, Note, read_note
from engram.store.paths import MACHINE_LOCAL, machine_local
from engram.store.settings import MAX_SETTINGS_BYTES, SETTINGS_FILE
from engram.team import held as held_edits
from engram.team.gitstore import EMPTY_TREE, REGULAR, TEMP_PREFIX, GitRepo
from engram.team.settle import Settled, settle, stopped_mid_line
from engram.team.template import template_files
from mergedriver import codec

#: Files no sync commits: editors' swap, backup, lock and partial-save files.
EDITOR_TEMP = re.compile(
    r"(^\.#|^#.*#$|~$|\.sw[a-p]$|^\.~lock\..*#$|\.(tmp|temp|bak|part|crswap|kate-swp|orig|rej)$"
    r"|^4913$|^\.goutputstream-|" + re.escape(TEMP_SUFFIX) + r"$)",
    re.IGNORECASE,
)
#: Vault files larger than their reader accepts are held back (engram writes far less).
LIMITS = {
    "item": codec.MAX_ITEM_BYTES, "synapse": codec.MAX_SYNAPSE_BYTES,
    "proposal": codec.MAX_SYNAPSE_BYTES, "settings": MAX_SETTINGS_BYTES,
}


@dataclass(frozen=True, slots=True)
class Held:
    """A changed file sync left out of its commit, and why."""

    path: str  # vault-relative
    reason: str


@dataclass(frozen=True, slots=True)
class _Accepted:
    rel: str
    data: bytes | None  # None: the file was removed
    mode: str
    stamp: tuple[int, int, int] | None
    young: bool  # changed within the settle window: look again after it
    trusted: bool = False  # bytes engram's canonical writer produced


@dataclass
class Staged:
    """What one local commit took and left."""

    committed: int = 0
    held: list[Held] = field(default_factory=list)
    settled: Settled | None = None
    joined: list[str] = field(default_factory=list)  # edits merged with what was pulled under them
    flagged: list[str] = field(default_factory=list)  # … whose merge kept a conflict for review


def commit_local(
    repo: GitRepo,
    state: VaultState,
    prefix: str,
    message: Callable[[int], str],
    *,
    settle_seconds: float,
    env: dict[str, str],
    before_commit: Callable[[], None] | None = None,
    written: Collection[str] = (),
    screen: Callable[[Mapping[str, str | None]], bool] | None = None,
) -> Staged:
    """Vet, settle and commit the vault's local changes (see the module docstring).

    Runs under the vault lock (the caller holds it). ``message`` makes the commit message
    from the number of files; ``before_commit`` is called right before git writes
    anything (sync records its journal there); ``written`` are files engram itself just
    wrote (atomically), which need no settle window. ``screen`` sees the changed paths
    (repository-relative, each with its blob in ``HEAD``) before anything is vetted — sync's
    trust check — and says whether it rewrote any file, so they are listed again.
    """
    lock = repo.git_dir / "index.lock"
    if lock.exists():
        raise GitError(
            "another git process is using this clone's index (.git/index.lock exists); nothing was committed.",
            hint="Wait for it to finish; if no git process is running, remove .git/index.lock and run "
            "`engram sync` again.",
        )
    head = repo.rev("HEAD")
    changed = _candidates(repo, prefix, head)
    if screen is not None and screen(changed):
        changed = _candidates(repo, prefix, head)
    held: list[Held] = []
    accepted, committed = _vet_all(repo, state, prefix, head, settle_seconds, held, written, changed)
    # An edit a pull was carried across (engram.team.held) is merged with what was pulled
    # under it before it is committed, never committed over it.
    joined = held_edits.merge_pending(
        repo, state, committed, {a.rel: a.data for a in accepted if a.data is not None},
        {a.rel for a in accepted} | {h.path for h in held},
    )
    if joined:
        results = {m.rel: m for m in joined}
        held += [Held(m.rel, f"changed here and on the remote, and the two could not be merged ({m.reason}); "
                      "edit it to keep what you want of both, then run `engram sync`") for m in joined if m.data is None]
        accepted = [
            replace(a, data=results[a.rel].data, trusted=False, young=False) if a.rel in results else a
            for a in accepted if a.rel not in results or results[a.rel].data is not None
        ]
    # A person's edits are recorded, with fresh links. What that makes engram write
    # (its atomic writes: this file, a neighbour's link section) is vetted once more,
    # without waiting again.
    edited = [a.rel for a in accepted if a.data is not None and not a.trusted and classify(a.rel) == "item"]
    # An item file removed by hand leaves its edges behind: they follow it to the trash.
    gone = [a.rel for a in accepted if a.data is None and classify(a.rel) == "item"]
    removed = {found for rel in gone for found in [_item_id(committed.get(rel))] if found}
    settled = None
    if edited or removed:
        settled = settle(
            state, [*edited, *gone], removed=removed, previous=committed.get, skip={h.path for h in held},
            record=True,
        )
        if settled.changed:
            held = []
            done = {*(a.rel for a in accepted), *settled.restamped, *settled.regenerated, *written}
            accepted, _ = _vet_all(repo, state, prefix, head, settle_seconds, held, done)
    entries = _entries(repo, prefix, accepted)
    merged = [m.rel for m in joined if m.data is not None]
    flagged = [m.rel for m in joined if m.data is not None and not m.clean]
    if not entries:
        return Staged(0, held, settled)
    if before_commit is not None:
        before_commit()
    with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX, dir=repo.git_dir) as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        index_of_head(repo, Path(tmp) / "index", head)
        info = "\0".join(entries).encode() + b"\0"
        repo.run("update-index", "-z", "--index-info", env=index, stdin=info)
        tree = repo.run("write-tree", env=index).out.strip()
        if head is not None and tree == repo.run("rev-parse", f"{head}^{{tree}}").out.strip():
            return Staged(0, held, settled)
        repo.run("commit", "--quiet", "--no-edit", "-m", message(len(entries)), env={**env, **index})
    _update_real_index(repo, info)
    return Staged(len(entries), held, settled, merged, flagged)


# --------------------------------------------------------------------------- vetting


def uncommitted(repo: GitRepo, prefix: str, head: str | None) -> set[str]:
    """The vault's files (vault-relative) that differ from ``head`` in the work tree."""
    lead = prefix + "/" if prefix else ""
    return {path[len(lead):] for path in _candidates(repo, prefix, head)}


def _candidates(repo: GitRepo, prefix: str, head: str | None) -> dict[str, str | None]:
    """Changed paths in the vault (repository-relative) → their HEAD blob, if any.

    One ``git status`` lists them all — tracked files that differ from ``HEAD`` in the
    work tree or the index, and untracked ones — with each path's blob in ``HEAD``. It
    also refreshes the index's stat data, which ``diff-index`` alone would not: a file
    merely touched would then be reported as changed, and waited for."""
    out: dict[str, str | None] = {}
    if head is None:  # no commit yet: everything in the vault is new
        raw = repo.run("--literal-pathspecs", "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                       "--", prefix or ".").out
        records = [f"? {path}" for path in raw.split("\0") if path]
    else:
        raw = repo.run("--literal-pathspecs", "status", "--porcelain=v2", "-z", "--untracked-files=all",
                       "--no-renames", "--", prefix or ".").out
        records = raw.split("\0")
    lead = prefix + "/" if prefix else ""
    for record in records:
        kind, _, rest = record.partition(" ")
        if kind == "1":  # <XY> <sub> <mH> <mI> <mW> <hH> <hI> <path>
            fields = rest.split(" ", 7)
            mode, sha, path = fields[2], fields[5], fields[7]
            out[path] = sha if mode in REGULAR else None
        elif kind == "u":  # unmerged (sync refuses to start then): no HEAD blob to trust
            out[rest.split(" ", 9)[9]] = None
        elif kind == "?" and not machine_local(rest[len(lead):]):  # new files there are never shared
            out.setdefault(rest, None)  # after `git rm --cached` a path is both: keep its HEAD blob
    return out


def committed_state(repo: GitRepo, lead: str, commit: str | None) -> list[str]:
    """The ``.engram/`` and ``private/`` files ``commit`` tracks (repository-relative): an
    older engram committed ``.engram/`` in a clone whose ``.gitignore`` did not name the
    folder, and a commit made past the hook (``--no-verify``) can carry either (issue 28)."""
    if commit is None:
        return []
    folders = [lead + folder for folder in MACHINE_LOCAL]
    out = repo.run("--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only", commit, "--", *folders).out
    return [path for path in out.split("\0") if path.startswith(tuple(folders))]


def _vet_all(
    repo: GitRepo,
    state: VaultState,
    prefix: str,
    head: str | None,
    window: float,
    held: list[Held],
    settled: Collection[str] = (),
    changed: Mapping[str, str | None] | None = None,
) -> tuple[list[_Accepted], dict[str, bytes]]:
    """The changed files that may be committed (``held`` gets the rest), and the
    committed bytes of every changed file. Paths in ``settled`` were waited for already;
    ``changed`` is :func:`_candidates`' listing when the caller has just made it."""
    lead = prefix + "/" if prefix else ""
    # .engram/ and private/ hold this machine's files: nothing there is committed,
    # whatever .gitignore says; .engram/ files a commit tracks leave the branch (the
    # files themselves stay where they are).
    candidates = {
        rel: sha for path, sha in (_candidates(repo, prefix, head) if changed is None else changed).items()
        for rel in [path[len(lead):]] if not machine_local(rel)
    }
    with_blob = [(rel, sha) for rel, sha in candidates.items() if sha]
    blobs = repo.read_blobs(sha for _, sha in with_blob)
    committed = {rel: blobs[sha] for rel, sha in with_blob}
    removed_by_engram = _recent_engram_removals(state)
    accepted = [
        _Accepted(path[len(lead):], None, "0", None, False, True) for path in committed_state(repo, lead, head)
    ]
    for rel in sorted(candidates):
        verdict = _vet(state, rel, committed.get(rel), window, removed_by_engram)
        if isinstance(verdict, Held):
            held.append(verdict)
        else:
            accepted.append(verdict if rel not in settled else replace(verdict, young=False))
    if not any(a.young for a in accepted):
        return accepted, committed
    # Wait out the settle window once, then look again: a file still changing is held.
    time.sleep(window)
    still: list[_Accepted] = []
    for entry in accepted:
        if entry.young and _stamp(state.root / entry.rel) != entry.stamp:
            held.append(Held(entry.rel, f"still being written (it changed within {window:g} s); the next sync takes it"))
        else:
            still.append(entry)
    return still, committed


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def _dir_stamp(path: Path, root: Path) -> tuple[int, int, int] | None:
    """The stamp of the nearest folder above a removed file (a removal changes it)."""
    folder = path.parent
    while folder != root and not folder.is_dir():
        folder = folder.parent
    return _stamp(folder)


def _vet(
    state: VaultState, rel: str, committed: bytes | None, window: float, engram_removed: set[str]
) -> _Accepted | Held:
    name = rel.rsplit("/", 1)[-1]
    path = state.root / rel
    if EDITOR_TEMP.search(name):
        return Held(rel, "an editor's temporary file")
    now_ns = time.time_ns()
    young_after = now_ns - int(window * 1e9)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        stamp = _dir_stamp(path, state.root)
        young = rel not in engram_removed and stamp is not None and stamp[0] > young_after
        return _Accepted(rel, None, "0", None, young, rel in engram_removed)
    if not stat.S_ISREG(info.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        return Held(rel, f"{what}; only regular files inside the vault are shared")
    kind = _kind(rel)
    if kind is not None and info.st_size > LIMITS[kind]:
        return Held(rel, f"{info.st_size:,} bytes, over the {LIMITS[kind]:,}-byte limit for a {kind} file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Held(rel, f"cannot be read: {exc.strerror or exc}")
    problem, trusted = _check(kind, data, committed)
    # A file that is, byte for byte, one of the template's was laid whole by `engram
    # init` (atomically): no need to wait for it to settle.
    trusted = trusted or (problem is None and template_files().get(rel) == data)
    if problem is not None:
        if "`" not in problem:  # say what settles it, unless the reason does already
            problem += f" — fix it (or drop the edit: `git checkout -- {rel}`), then `engram sync`"
        return Held(rel, problem)
    mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
    stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
    return _Accepted(rel, data, mode, stamp, not trusted and info.st_mtime_ns > young_after, trusted)


def _kind(rel: str) -> str | None:
    """``item``, ``synapse``, ``proposal``, ``settings``, or None for any other file."""
    if rel == SETTINGS_FILE:
        return "settings"
    if rel.startswith("proposals/") and rel.endswith(".yaml"):
        return "proposal"
    return classify(rel)


def _check(kind: str | None, data: bytes, committed: bytes | None) -> tuple[str | None, bool]:
    """(why the file must wait, or None; whether engram wrote it, so it need not settle)."""
    if kind == "item":
        try:
            note = read_note(data, "note.md")
        except FormatError as exc:
            return f"does not parse: {exc.problem}", False
        before = _note(committed)
        if note.identity != FILE:
            if before is not None and before.identity == FILE:
                return "no longer an engram item (its frontmatter or id is gone; it was one in the last commit)", False
            return None, False  # a person's plain note: shared as it is
        if edited_outside(note.item) and before is not None and stopped_mid_line(before.item.content, note.item.content):
            return (
                f"looks cut off in the middle of a line: its content is the first {len(note.item.content.encode())} "
                f"of the {len(before.item.content.encode())} bytes of the committed version (`engram doctor` shows the "
                "difference; `engram doctor --accept PATH` keeps it)"
            ), False
        return None, is_canonical(data) and not edited_outside(note.item)  # engram wrote it, hash and all
    if kind in ("synapse", "proposal"):
        parse, render = (
            (codec.parse_synapse, codec.render_synapse) if kind == "synapse"
            else (codec.parse_proposal, codec.render_proposal)
        )
        try:
            parsed = parse(data)
        except codec.CodecError as exc:
            return f"does not parse: {exc}", False
        return None, render(parsed) == data
    if kind == "settings":
        try:
            loaded = codec.load_yaml(data.decode("utf-8")) if data.strip() else {}
        except (codec.CodecError, UnicodeDecodeError) as exc:
            return f"does not parse: {exc}", False
        if not isinstance(loaded, dict):
            return "does not parse: the settings must be a mapping", False
    return None, False


def _note(data: bytes | None) -> Note | None:
    if data is None:
        return None
    try:
        return read_note(data, "note.md")
    except FormatError:
        return None


def _item_id(data: bytes | None) -> str | None:
    note = _note(data)
    return note.item.id if note is not None and note.identity == FILE else None


def _recent_engram_removals(state: VaultState) -> set[str]:
    """Vault paths engram's own writers removed or moved away from lately (the audit
    log's tail), so sync need not wait to see whether they come back."""
    path = state.audit.path
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 262_144))
            tail = handle.read().decode("utf-8", "replace").splitlines()[1:]
    except OSError:
        return set()
    found: set[str] = set()
    for line in tail:
        with contextlib.suppress(ValueError, AttributeError):
            entry = json.loads(line)
            if isinstance(entry.get("path"), str):
                found.add(entry["path"])
    return found


# --------------------------------------------------------------------------- committing


def _entries(repo: GitRepo, prefix: str, accepted: list[_Accepted]) -> list[str]:
    """``update-index --index-info`` lines for the vetted files, from the vetted bytes."""
    lead = prefix + "/" if prefix else ""
    lines = []
    for entry in accepted:
        path = lead + entry.rel
        if entry.data is None:
            lines.append(f"0 {'0' * 40}\t{path}")
        else:
            lines.append(f"{entry.mode} {repo.write_blob(entry.data)}\t{path}")
    return lines


def index_of_head(repo: GitRepo, path: Path, head: str | None) -> None:
    """Write at ``path`` an index holding exactly ``head``'s tree, for sync's commit.

    ``git commit`` refreshes its index first: an entry without stat data is read and
    hashed again from the work tree. A bare ``read-tree`` has none, so every commit read
    every file of the vault (2.2 GB at a million items). Seeded from a copy of the real
    index and merged with ``head`` (``read-tree -m``, one tree), the entries that match
    ``head`` keep the stat data git recorded, and the refresh is an ``lstat`` each. What
    the real index holds besides (a person's staged work) is not carried: the result is
    ``head``'s tree either way. A real index git cannot merge from (missing, unreadable,
    mid-merge with conflicts) falls back to the bare ``read-tree``. The stat data only
    spares work: the commit's tree is the index's blob ids, never the work tree's bytes.
    """
    env = {"GIT_INDEX_FILE": str(path)}
    if head is not None:
        try:
            # copy2 keeps the index file's time, which git's "racily clean" check reads.
            shutil.copy2(repo.git_dir / "index", path)
        except OSError:
            pass
        else:
            if repo.run("read-tree", "-m", head, env=env, check=False).status == 0:
                return
        path.unlink(missing_ok=True)
    repo.run("read-tree", head or EMPTY_TREE, env=env)


def _update_real_index(repo: GitRepo, info: bytes) -> None:
    """Point the real index at what was committed; a person's git holding the index
    lock for a moment is waited for."""
    for delay in (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 0.0):
        out = repo.run("update-index", "-z", "--index-info", stdin=info, check=False)
        if out.status == 0:
            return
        if "index.lock" not in out.text or not delay:
            break
        time.sleep(delay)
    raise GitError(
        f"committed, but could not update git's index: {out.text}.",
        hint="If no git process is running, remove .git/index.lock; then run `git reset -q` and `engram sync`.",
    )
