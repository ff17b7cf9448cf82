"""What git last committed of an item, to tell an edit from damage (for ``engram doctor``).

``engram doctor`` recomputes a stale ``contentHash`` only when that cannot bless lost
text. The yardstick is the newest committed version of the file whose own hash vouched
for its content (a version a peer pushed with a stale hash — truncated, say — does not
count), else the newest committed version. :meth:`History.loss` compares the current
content with it: content that is the yardstick cut off inside a line (see
:func:`engram.team.settle.stopped_mid_line`) is a loss, shown as a diff for a person to
accept or undo. Whole lines added, changed or deleted are a person's edit, as staging
and settle judge them: doctor does not ask about what sync records without asking.

:meth:`History.first_seen` tells an original from its copy when two files carry one id
(``duplicate-id``): the file whose id entered git's history first keeps it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from engram.errors import GitError
from engram.team.gitstore import GitRepo, is_work_tree
from engram.team.settle import stopped_mid_line
from mergedriver import codec

#: How many commits back to look for a version whose hash vouched for it.
DEPTH = 20
#: Diff lines shown for a loss.
DIFF_LINES = 40


@dataclass(frozen=True, slots=True)
class Loss:
    """Content the current file lacks against a committed version."""

    commit: str
    repo_path: str
    lost_lines: int
    diff: str


class History:
    """Committed versions of a vault's files (opened lazily; harmless outside git)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._repo: GitRepo | None = None
        self._ready = False
        self._bytes: dict[tuple[str, str], bytes] = {}  # (commit, path) → the blob read

    def __enter__(self) -> History:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._repo is not None:
            self._repo.close()

    def _open(self) -> GitRepo | None:
        if not self._ready:
            self._ready = True
            if is_work_tree(self.root):
                try:
                    self._repo = GitRepo(self.root)
                except GitError:
                    self._repo = None
        return self._repo

    def reference_bytes(self, rel: str) -> bytes | None:
        """The bytes of the yardstick version of ``rel`` (see :meth:`reference`)."""
        found = self.reference(rel)
        return None if found is None else self._bytes.get((found[0], found[1]))

    def reference(self, rel: str) -> tuple[str, str, str] | None:
        """(commit, repository path, content) of the yardstick version of ``rel``."""
        repo = self._open()
        if repo is None:
            return None
        lead = self.root.resolve().relative_to(repo.top).as_posix()
        path = rel if lead == "." else f"{lead}/{rel}"
        out = repo.run("log", f"-n{DEPTH}", "--format=%H", "--", path, check=False)
        commits = [line for line in out.out.split() if line] if out.status == 0 else []
        newest: tuple[str, str, str] | None = None
        for commit in commits:
            listed = repo.run("rev-parse", "--verify", "--quiet", f"{commit}:{path}", check=False).out.strip()
            if not listed:
                continue
            try:
                data = repo.read_blob(listed)
                meta, content, _ = codec.parse_engram(data)
            except (codec.CodecError, GitError):
                continue
            self._bytes[(commit, path)] = data
            if newest is None:
                newest = (commit, path, content)
            if meta.get("contentHash") == codec.content_hash(content):
                return commit, path, content
        return newest

    def first_seen(self, rel: str, text: str) -> tuple[int, str] | None:
        """(commit time, commit) of the oldest commit that put ``text`` (an id) into the
        file at ``rel``; None when git never held it there (a file not committed yet, or a
        copy whose id came in the working tree) or there is no git. Renames are not
        followed: git's ``--follow`` mixed with ``-S`` reports another file's commits for
        a path it never held, and a rename is usually newer than the copy anyway."""
        repo = self._open()
        if repo is None:
            return None
        lead = self.root.resolve().relative_to(repo.top).as_posix()
        path = rel if lead == "." else f"{lead}/{rel}"
        out = repo.run("log", "--format=%ct %H", f"-S{text}", "--", path, check=False)
        lines = [line.split() for line in out.out.splitlines() if line.strip()] if out.status == 0 else []
        if not lines or len(lines[-1]) != 2 or not lines[-1][0].isdigit():
            return None
        if not repo.run("rev-parse", "--verify", "--quiet", f"HEAD:{path}", check=False).out.strip():
            return None  # the id is in history only at a path this file no longer is
        return int(lines[-1][0]), lines[-1][1]

    def loss(self, rel: str, content: str) -> Loss | None:
        """What ``content`` lost against the yardstick version of ``rel``, if anything."""
        found = self.reference(rel)
        if found is None:
            return None
        commit, path, before = found
        if not stopped_mid_line(before, content):
            return None
        old, new = before.splitlines(), content.splitlines()
        remaining = {line.rstrip() for line in new}  # a hard line break added is no loss
        lost = [line for line in old if line.strip() and line.rstrip() not in remaining]
        diff = list(difflib.unified_diff(old, new, f"{path} @ {commit[:12]}", f"{path} (now)", lineterm="", n=1))
        if len(diff) > DIFF_LINES:
            diff = [*diff[:DIFF_LINES], f"… ({len(diff) - DIFF_LINES} more diff lines)"]
        return Loss(commit, path, max(len(lost), 1), "\n".join(diff))
