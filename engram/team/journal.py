"""The intent journal of ``engram sync``, and finishing a sync that was killed.

Before each step that touches the repository, sync records what it is about to do in
``.engram/sync-journal.json`` (written atomically): the step, and for the work-tree
update the commit the tree is moving from and the one it is moving to. The journal is
removed when sync ends — normally, or with an error it reported (git answered, so
nothing was left half-done). A journal that is still there when the next sync starts
therefore means a sync was killed (``kill -9``, a crash, a power cut, Ctrl-C while git
was writing). The next sync holds ``.engram/sync.lock`` (a ``flock`` the kernel drops
when its holder dies), so no live sync owns that journal, and it recovers first:

- git lock files the killed sync's git left (``index.lock``, ``HEAD.lock``, ref locks)
  are removed — only those created while that sync ran, so a lock held by a person's
  own git started before it is left alone;
- ``commit``: the index entries of the vault are reset to HEAD (the commit may or may
  not have been made; the files are untouched, so the next commit takes them again);
- ``checkout``: the work tree may be half-way between the two commits, and git's index
  and HEAD may or may not have moved. If HEAD is still the old commit, every path the
  update changes is put in its new state with git's own ``checkout``, HEAD is moved to
  the target, and any file that matches neither version (something written during the
  crash) is copied to ``.engram/recovered/`` first. The half-updated tree is never seen
  as local edits, so it is never committed;
- ``settle``: the post-merge settle is simply run again (it is idempotent).

Everything else sync does before the work-tree update happens in the object store
(blobs, trees, commits nobody points at yet) and needs no recovery.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.items.state import VaultState
from engram.store.fsio import atomic_write, prune_empty_dirs, remove
from engram.store.model import now
from engram.team.gitstore import REGULAR, TEMP_PREFIX, GitRepo

JOURNAL = "sync-journal.json"
RECOVERED = "recovered"
#: Lock files git leaves when it is killed, relative to the git folder.
_GIT_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock", "packed-refs.lock", "shallow.lock")


@dataclass
class Recovery:
    """What finishing a killed sync did."""

    step: str
    notes: list[str] = field(default_factory=list)
    settle: tuple[str, str] | None = None  # (old, new) commits whose change still needs settling
    saved: list[str] = field(default_factory=list)  # files copied to .engram/recovered/


class Journal:
    """One vault's sync journal (see the module docstring)."""

    def __init__(self, state: VaultState) -> None:
        self.path = state.state_dir / JOURNAL
        self._started = time.time()

    def load(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {"step": "unknown", "started": 0.0}  # torn by hand: recover generically
        return data if isinstance(data, dict) else {"step": "unknown", "started": 0.0}

    def step(self, name: str, **facts: str) -> None:
        """Record that sync is about to do ``name``."""
        entry = {
            "step": name, "pid": os.getpid(), "host": socket.gethostname(),
            "started": self._started, "at": time.time(), **facts,
        }
        atomic_write(self.path, (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))

    def clear(self) -> None:
        remove(self.path)


def recover(repo: GitRepo, state: VaultState, entry: dict[str, Any], prefix: str) -> Recovery:
    """Finish what the killed sync recorded in ``entry`` (see the module docstring)."""
    step = str(entry.get("step", "unknown"))
    out = Recovery(step)
    since = float(entry.get("started") or 0.0)
    for lock in _stale_locks(repo.git_dir, since):
        remove(lock)
        out.notes.append(f"removed {lock.relative_to(repo.git_dir).as_posix()} left by the killed sync")
    for leftover in repo.git_dir.glob(TEMP_PREFIX + "*"):
        shutil.rmtree(leftover, ignore_errors=True)
    old, new = entry.get("old"), entry.get("new")
    if step == "commit":
        repo.run("--literal-pathspecs", "reset", "--quiet", "--", prefix or ".", check=False)
        out.notes.append("reset git's index of the vault to HEAD (the files were not touched)")
    elif step == "checkout" and isinstance(old, str) and isinstance(new, str):
        _finish_checkout(repo, state, old, new, out)
    elif step == "settle" and isinstance(old, str) and isinstance(new, str):
        out.settle = (old, new)
        out.notes.append(f"settling the merge into {new[:12]} again")
    elif not out.notes:
        out.notes.append("nothing was half-done (the killed step writes only to the object store or the remote)")
    return out


def _stale_locks(git_dir: Path, since: float) -> list[Path]:
    """Git lock files created while the killed sync ran (a second of slack for clocks)."""
    found = [git_dir / name for name in _GIT_LOCKS]
    for top in ("refs", "logs"):
        # os.walk skips a folder git removes while we look (Path.rglob raises on it).
        for folder, _dirs, files in os.walk(git_dir / top):
            found += [Path(folder) / name for name in files if name.endswith(".lock")]
    stale = []
    for path in found:
        try:
            if path.stat().st_mtime >= since - 1.0:
                stale.append(path)
        except FileNotFoundError:
            continue
    return stale


def _finish_checkout(repo: GitRepo, state: VaultState, old: str, new: str, out: Recovery) -> None:
    head = repo.rev("HEAD")
    if head == new:
        out.settle = (old, new)  # git finished the update; the settle after it may not have run
        return
    if head != old:
        out.notes.append(f"HEAD is at {head}, neither side of the interrupted update; left as it is")
        return
    changes = repo.diff_tree(old, new)
    blobs = repo.read_blobs(
        sha for change in changes.values()
        for sha, mode in ((change.old_sha, change.old_mode), (change.new_sha, change.new_mode))
        if sha and mode in REGULAR
    )
    bin_dir = state.state_dir / RECOVERED / now().replace(":", "-")
    for path, change in sorted(changes.items()):
        target = repo.top / path
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            continue
        expected = {blobs.get(sha) for sha in (change.old_sha, change.new_sha) if sha}
        current = target.read_bytes() if stat.S_ISREG(info.st_mode) else None
        if current is not None and current not in expected:
            # Neither version: a half-written file git left, or a write during the crash.
            copy = bin_dir / path
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(current)
            out.saved.append(path)
    present = sorted(p for p, c in changes.items() if c.new_sha)
    gone = sorted(p for p, c in changes.items() if not c.new_sha)
    if present:
        repo.run(
            "--literal-pathspecs", "checkout", new, "--pathspec-from-file=-", "--pathspec-file-nul",
            stdin="\0".join(present).encode() + b"\0",
        )
    if gone:
        repo.run(
            "--literal-pathspecs", "rm", "--quiet", "--cached", "--ignore-unmatch",
            "--pathspec-from-file=-", "--pathspec-file-nul", stdin="\0".join(gone).encode() + b"\0",
        )
        for path in gone:
            with contextlib.suppress(FileNotFoundError):
                (repo.top / path).unlink()
            prune_empty_dirs((repo.top / path).parent, repo.top)
    repo.run("update-ref", "-m", "engram sync: finish an interrupted work-tree update", "HEAD", new, old)
    out.notes.append(f"finished the interrupted update of the work tree to {new[:12]}")
    if out.saved:
        out.notes.append(
            f"kept {len(out.saved)} file(s) that matched neither version in {bin_dir.relative_to(state.root)}"
        )
    out.settle = (old, new)
