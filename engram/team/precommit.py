"""Trust at the git boundary: what sync is about to commit, what a merge brought in, and
the pre-commit hook.

- :func:`check_local_changes` — ``engram sync`` calls it before it stages anything: every
  changed file of the vault folder (edits made in Obsidian or an editor included) meets
  :func:`engram.items.guard.admit_changes`, so a secret is refused, redacted or made
  private as the ``trust`` settings say and never reaches a commit, and an
  instruction-shaped item is committed quarantined.
- :func:`screen_incoming` — after sync fast-forwards or merges, and after a plain
  ``git pull`` (the post-merge hook), the files that changed are screened: instruction-
  shaped items are quarantined here (and the next sync commits that), secrets that
  arrived are reported so they get rotated.
- the pre-commit hook (``python -m engram.team.precommit --vault PATH``, installed by
  ``engram init`` through :mod:`engram.team.hooks`) refuses a ``git commit`` that would
  add or change a file under ``.engram/`` or ``private/`` (one machine's state and
  private items, whatever ``.gitignore`` says), or add a secret or personal data to a
  shared file — for commits made by hand or by an
  editor's git plugin. It reads the staged blobs, not the work tree, and only what the
  commit adds (a finding already in ``HEAD``'s version does not block an unrelated edit).
  It needs no index and no GitPython, so it costs one short process per commit.

Findings are described by file, line and type, never by value.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import EngramError, GitError
from engram.items.guard import Change, GuardReport, admit_changes, item_of, text_of
from engram.store.notes import body_offset
from engram.store.paths import MACHINE_LOCAL, machine_local
from engram.trust import policy
from engram.trust.policy import TrustSettings
from engram.trust.secrets import scan_text

if TYPE_CHECKING:  # the hook runs this module: it imports no index, no vault, no GitPython
    from engram.items.state import VaultState
    from engram.team.gitstore import GitRepo

__all__ = ["check_local_changes", "main", "screen_incoming", "staged_findings", "staged_machine_state"]


def _git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True, check=False)
    if proc.returncode != 0:
        raise GitError(
            f"`git {' '.join(args)}` failed: {proc.stderr.decode(errors='replace').strip()}.",
            hint="Check the repository with `git status`.",
        )
    return proc.stdout


def _blobs(root: Path, shas: Iterable[str]) -> dict[str, bytes]:
    from engram.team.gitstore import split_batch

    wanted = sorted(set(shas))
    if not wanted:
        return {}
    raw = _git(root, "cat-file", "--batch", data=("\n".join(wanted) + "\n").encode())
    return split_batch(raw, wanted, skip_missing=True)


def _tree_shas(root: Path, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """Path (repository-relative) → blob sha in ``rev`` (``:`` = the index) for ``paths``."""
    if not paths:
        return {}
    if rev == ":":
        out = _git(root, "ls-files", "-s", "-z", "--", *paths).decode()
        entries = [e for e in out.split("\0") if e]
        return {e.split("\t", 1)[1]: e.split()[1] for e in entries}
    out = _git(root, "ls-tree", "-z", "-r", rev, "--", *paths).decode()
    return {e.split("\t", 1)[1]: e.split()[2] for e in out.split("\0") if e}


def _has_head(root: Path) -> bool:
    return subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=root, capture_output=True,
                          check=False).returncode == 0


def _top(root: Path) -> tuple[Path, str]:
    top = Path(_git(root, "rev-parse", "--show-toplevel").decode().strip())
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    return top, "" if prefix == "." else prefix + "/"


def check_local_changes(state: VaultState, changed: Mapping[str, str | None]) -> GuardReport:
    """Before sync commits: every changed file of the vault meets the trust rules.

    ``changed`` is what sync's staging listed (:func:`engram.team.staging.commit_local`):
    each changed path (repository-relative) and its blob in ``HEAD``, None for a new
    file; a removed file has nothing to check. One listing serves both, so the work tree
    is walked once per commit, not twice (a ``git status`` costs 0.7 s at 100k files).

    Raises SensitiveData (nothing staged, nothing committed) when a setting says refuse.
    """
    top, lead = _top(state.root)
    paths = [p for p in changed if p.startswith(lead) and not machine_local(p[len(lead):])]
    if not paths:
        return GuardReport()
    blobs = _blobs(top, [sha for p in paths for sha in [changed[p]] if sha])
    changes = []
    for path in paths:
        file = top / path
        if file.is_symlink() or not file.is_file():
            continue
        try:
            data = file.read_bytes()
        except OSError:
            continue
        changes.append(Change(path[len(lead):], blobs.get(changed[path] or ""), data))
    return admit_changes(state, changes, incoming=False)


def screen_incoming(repo: GitRepo, state: VaultState, old: str | None, new: str) -> GuardReport:
    """After a fast-forward, a merge or a pull from ``old`` to ``new``: quarantine the
    instruction-shaped items that arrived, and report the secrets that did."""
    from engram.team.gitstore import EMPTY_TREE

    _, lead = _top(state.root)
    diff = repo.diff_tree(old or EMPTY_TREE, new)
    wanted = {p: c for p, c in diff.items() if p.startswith(lead) and c.new_sha is not None}
    if not wanted:
        return GuardReport()
    blobs = repo.read_blobs([s for c in wanted.values() for s in (c.old_sha, c.new_sha) if s])
    changes = [
        Change(path[len(lead):], blobs.get(c.old_sha) if c.old_sha else None, blobs[c.new_sha])
        for path, c in sorted(wanted.items())
        if c.new_sha in blobs and c.new_mode.startswith("100")
    ]
    return admit_changes(state, changes, incoming=True)


def staged_findings(root: Path) -> list[str]:
    """What the pre-commit hook refuses: secrets and personal data a commit would add to
    shared files, per the vault's ``trust`` settings (any finding blocks a commit: the
    hook cannot redact or move files while git commits them)."""
    from engram.store.settings import Settings

    top, lead = _top(root)
    out = _git(top, "diff", "--cached", "--name-only", "-z", "--diff-filter=ACMR", "--", lead or ".")
    paths = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p and p.startswith(lead)]
    if not paths:
        return []
    settings = Settings.load(root).section("trust", TrustSettings).validated()
    staged = _tree_shas(top, ":", paths)
    head = _tree_shas(top, "HEAD", paths) if _has_head(top) else {}
    blobs = _blobs(top, [*staged.values(), *head.values()])
    found: list[str] = []
    for path in paths:
        if path not in staged or staged[path] not in blobs:
            continue
        rel = path[len(lead):]
        change = Change(rel, blobs.get(head.get(path, "")), blobs[staged[path]])
        found += _findings(change, settings)
    return found


def staged_machine_state(root: Path) -> list[str]:
    """What the pre-commit hook refuses first: files a commit would add or change under
    ``.engram/`` or ``private/`` (repository-relative), which hold one machine's state and
    private items and are never shared, whatever ``.gitignore`` says. Taking them off
    the branch (a deletion) is always allowed."""
    top, lead = _top(root)
    folders = [lead + folder.rstrip("/") for folder in MACHINE_LOCAL]
    out = _git(top, "--literal-pathspecs", "diff", "--cached", "--name-only", "-z", "--diff-filter=ACMRT", "--", *folders)
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p and machine_local(p[len(lead):])]


def _findings(change: Change, settings: TrustSettings) -> list[str]:
    text = text_of(change.new)
    if text is None:
        return []
    item = item_of(change.new, change.rel)
    if item is None or not item.id:
        before = text_of(change.old)
        seen = {(d.rule, d.digest) for d in scan_text(before, change.rel, settings.options())} if before else set()
        return [f"{change.rel}: {d.describe()}" for d in scan_text(text, change.rel, settings.options())
                if (d.rule, d.digest) not in seen]
    if item.visibility not in policy.SHARED and not change.rel.startswith("private/"):
        return []  # a private item outside private/ is a path drift that doctor reports
    offset = body_offset(change.new)  # a finding in the content is named by the file's line
    return [f"{change.rel}: {d.describe(offset)}"
            for d in policy.scan_new_text(item, item_of(change.old, change.rel), settings)]


def main(argv: list[str]) -> int:
    """The pre-commit hook: exit 1 (refusing the commit) when it would add a finding."""
    if len(argv) != 2 or argv[0] != "--vault":
        print("usage: python -m engram.team.precommit --vault PATH", file=sys.stderr)
        return 2
    try:
        local = staged_machine_state(Path(argv[1]))
        found = staged_findings(Path(argv[1]))
    except (EngramError, OSError) as exc:
        print(f"engram: could not check the commit for secrets: {exc}", file=sys.stderr)
        return 0  # a broken check never blocks a person's commit; sync checks again
    if local:
        _, lead = _top(Path(argv[1]))
        folders = sorted({lead + p[len(lead):].split("/", 1)[0] for p in local})
        print(f"engram: this commit would put {len(local)} file(s) of this machine's own into the shared history:",
              file=sys.stderr)
        for line in local[:20]:
            print(f"  {line}", file=sys.stderr)
        print("`.engram/` holds this machine's index, journals, audit log and trash and `private/` its private "
              f"items; neither is ever committed. Unstage them with `git rm -r --cached {' '.join(folders)}` "
              "(the files stay), then commit again. Nothing was committed.", file=sys.stderr)
        return 1
    if not found:
        return 0
    print(f"engram: this commit would put {len(found)} secret(s) or piece(s) of personal data into shared files:",
          file=sys.stderr)
    for line in found[:50]:
        print(f"  {line}", file=sys.stderr)
    print("Remove them (keep credentials in a secret manager), or move the items under private/; then commit "
          "again. Nothing was committed.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
