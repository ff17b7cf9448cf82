"""Git hooks: ``post-merge`` and ``post-rewrite`` report after a plain ``git pull``;
``pre-commit`` refuses a commit that would add a secret to a shared file.

``engram hooks install`` writes a small ``sh`` script for each hook into the clone's
hooks folder (as ``git rev-parse --git-path hooks`` names it, so ``core.hooksPath`` is
honoured). git runs ``post-merge`` after every merge or fast-forward (``git pull``) and
``post-rewrite`` after a rebase (``git pull --rebase``; engram's part ignores
``commit --amend``). Each first *settles* what the pull brought in (``ORIG_HEAD..HEAD``,
:mod:`engram.team.settle`: hashes and link sections of the merged files brought up to
date, edges to items deleted elsewhere moved to the trash, edges of an item that is back
brought out of this clone's trash — left uncommitted, for the next ``engram sync`` or
commit), then prints the cross-file findings of
:func:`engram.team.conflicts.checks` that a person must decide — superseded items still
active, items a merge flagged, files that no longer parse. A merge that moved nothing
(``ORIG_HEAD`` = ``HEAD``, not a ``--squash``; :func:`moved`) brought nothing in: the
hook stops there, having imported nothing but this module. A hook never fails a pull:
it reports and exits with the status of the hook it chains.

A user's existing hook is never overwritten: it is renamed to ``<hook>.pre-engram`` and
run first by engram's hook, with the same arguments and standard input; its exit status
is the hook's. ``engram hooks uninstall`` puts it back. ``engram sync`` sets
``ENGRAM_SYNC=1`` while it moves the work tree and commits, so the hooks skip engram's
part (sync refreshes, reports and checks itself) but still run the chained hooks.

``pre-commit`` (installed by ``engram init``, and by ``engram hooks install`` with the
others) is the one hook that can fail: it runs ``python -m engram.team.precommit`` and
refuses the commit when that finds a secret or personal data the commit would add
(:mod:`engram.team.precommit`). A failing chained pre-commit hook fails the commit too.
After a merge, the post-merge hook also screens what arrived and quarantines
instruction-shaped items (:func:`engram.team.precommit.screen_incoming`).
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from engram.errors import Conflict

if TYPE_CHECKING:  # git runs this module after every pull: it imports what a pull needs, when it needs it
    from engram.items.state import VaultState
    from engram.team.settle import Settled

#: The hooks that report, and the git operation each reports on.
HOOKS = {"post-merge": "merge", "post-rewrite": "rebase"}
#: The hook that guards commits; ``engram init`` installs it.
PRE_COMMIT = "pre-commit"
ALL_HOOKS = (*HOOKS, PRE_COMMIT)
MARKER = "# engram {hook} hook"


def chained_name(hook: str) -> str:
    return f"{hook}.pre-engram"


class HookStatus(NamedTuple):
    """One hook's state in a clone. A named tuple rather than a dataclass: this module is
    what git runs after every pull, and ``dataclasses`` (with ``inspect``) would add a
    third to the start-up of a pull that brought nothing."""

    hook: str
    path: Path
    installed: bool
    current: bool
    chained: bool
    foreign: bool  # a hook of that name that is not engram's


def _gate_script(hook: str, vault_rel: str) -> str:
    chained = chained_name(hook)
    return (
        "#!/bin/sh\n"
        f"{MARKER.format(hook=hook)} (installed by `engram init` / `engram hooks install`; `engram hooks\n"
        f"# uninstall` removes it and restores any hook it chained as {chained}).\n"
        "# Refuses a commit that would add a secret or personal data to a shared file.\n"
        'hook_dir=$(dirname "$0")\n'
        f'if [ -x "$hook_dir/{chained}" ]; then\n'
        f'  "$hook_dir/{chained}" "$@" || exit $?\n'
        "fi\n"
        'if [ -z "$ENGRAM_SYNC" ]; then\n'
        f"  {shlex.quote(sys.executable)} -m engram.team.precommit --vault {shlex.quote(vault_rel)} || exit $?\n"
        "fi\n"
        "exit 0\n"
    )


def _script(hook: str, vault_rel: str) -> str:
    if hook == PRE_COMMIT:
        return _gate_script(hook, vault_rel)
    python = shlex.quote(sys.executable)
    chained = chained_name(hook)
    # post-rewrite also runs after `commit --amend`; only a rebase brings others' work.
    when = '[ -z "$ENGRAM_SYNC" ]' + (' && [ "$1" = rebase ]' if hook == "post-rewrite" else "")
    # post-rewrite gets the rewritten commits on stdin; the chained hook must see them too.
    stdin_copy = 'input=$(cat)\n' if hook == "post-rewrite" else ""
    feed = 'printf \'%s\\n\' "$input" | ' if hook == "post-rewrite" else ""
    return (
        "#!/bin/sh\n"
        f"{MARKER.format(hook=hook)} (installed by `engram hooks install`; `engram hooks uninstall`\n"
        f"# removes it and restores any hook it chained as {chained}).\n"
        'hook_dir=$(dirname "$0")\n'
        f"{stdin_copy}"
        "status=0\n"
        f'if [ -x "$hook_dir/{chained}" ]; then\n'
        f'  {feed}"$hook_dir/{chained}" "$@" || status=$?\n'
        "fi\n"
        f"if {when}; then\n"
        f"  {python} -m engram.team.hooks {hook} --vault {shlex.quote(vault_rel)} || true\n"
        "fi\n"
        "exit $status\n"
    )


def _paths(root: Path, hook: str) -> tuple[Path, str]:
    from engram.team import gitstore

    path = gitstore.git_path(root, f"hooks/{hook}")
    rel = os.path.relpath(root.resolve(), gitstore.top_level(root))
    return path, rel


def status(root: Path, hook: str = "post-merge") -> HookStatus:
    path, rel = _paths(root, hook)
    text = path.read_text(errors="replace") if path.is_file() else ""
    ours = MARKER.format(hook=hook) in text
    return HookStatus(
        hook=hook,
        path=path,
        installed=ours,
        current=ours and text == _script(hook, rel),
        chained=(path.parent / chained_name(hook)).exists(),
        foreign=path.exists() and not ours,
    )


def statuses(root: Path, names: tuple[str, ...] = tuple(HOOKS)) -> tuple[HookStatus, ...]:
    return tuple(status(root, hook) for hook in names)


def install(root: Path, names: tuple[str, ...] = tuple(HOOKS)) -> tuple[HookStatus, ...]:
    """Install (or update) the hooks ``names``, chaining a user's existing ones. Idempotent.

    Checked before anything is written, so a refusal changes nothing."""
    for hook in names:
        path, _ = _paths(root, hook)
        chained = path.parent / chained_name(hook)
        if path.exists() and MARKER.format(hook=hook) not in path.read_text(errors="replace") and chained.exists():
            raise Conflict(
                f"{path} is not engram's and {chained} already exists.",
                hint=f"Merge the two hooks by hand (or remove {chained.name}), then run "
                "`engram hooks install` again.",
            )
    for hook in names:
        path, rel = _paths(root, hook)
        if path.exists() and MARKER.format(hook=hook) not in path.read_text(errors="replace"):
            path.rename(path.parent / chained_name(hook))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_script(hook, rel), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return statuses(root, names)


def uninstall(root: Path, names: tuple[str, ...] = tuple(HOOKS)) -> tuple[HookStatus, ...]:
    """Remove engram's hooks and restore the chained ones; foreign hooks are left alone."""
    for hook in names:
        path, _ = _paths(root, hook)
        chained = path.parent / chained_name(hook)
        if path.exists() and MARKER.format(hook=hook) in path.read_text(errors="replace"):
            path.unlink()
            if chained.exists():
                chained.rename(path)
    return statuses(root, names)


def moved(vault_path: Path) -> bool:
    """Whether the merge or rebase moved ``HEAD`` (``ORIG_HEAD`` ≠ ``HEAD``), asked of
    git alone. A merge that moved nothing brought nothing to settle, screen or report,
    so the hook stops there at the cost of one ``git rev-parse``. ``git merge --squash``
    moves nothing but changes the work tree (git leaves ``SQUASH_MSG``): that counts as
    moved, and so does anything git cannot answer (the full check then says why)."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "ORIG_HEAD", "HEAD", "--git-path", "SQUASH_MSG"],
            cwd=vault_path, capture_output=True, text=True, check=False,
        )
    except OSError:
        return True
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != 3:
        return True
    before, after, squash = lines
    return before != after or (vault_path / squash).exists()


def report(vault_path: Path, hook: str) -> int:
    """What a hook runs: settle what arrived, screen it and print findings (nothing when
    the merge moved nothing, see :func:`moved`). Always returns 0."""
    if not moved(vault_path):
        return 0
    from engram.errors import EngramError
    from engram.items.state import VaultState, locate
    from engram.recall import encoder
    from engram.team.conflicts import checks
    from engram.team.gitstore import GitRepo
    from engram.team.precommit import screen_incoming

    guarded = None
    try:
        state = VaultState(locate(vault_path))
        state.encoder = encoder.embed  # the screen of incoming text reads meaning too
        try:
            settled = _settle(state)
            findings = checks(state)
            if hook == "post-merge":
                with GitRepo(state.root) as repo:
                    before = repo.rev("ORIG_HEAD")
                    if before is not None:
                        guarded = screen_incoming(repo, state, before, "HEAD")
        finally:
            state.close()
    except EngramError as exc:
        print(f"engram: could not check the vault after the {HOOKS[hook]}: {exc}", file=sys.stderr)
        return 0
    if settled is not None and settled.changed:
        parts = []
        if settled.restamped or settled.regenerated:
            parts.append(f"{len(set(settled.restamped) | set(settled.regenerated))} hash(es) or link section(s)")
        if settled.trashed:
            parts.append(f"{len(settled.trashed)} link(s) to deleted items moved to the trash")
        if settled.twins:
            parts.append(f"{len(settled.twins)} item(s) the merge left in two files joined into one")
        if settled.relinked:
            parts.append(f"{len(settled.relinked)} link(s) of items that are back brought out of the trash")
        print(f"engram: brought the vault up to date after this {HOOKS[hook]} ({'; '.join(parts)}); "
              "`engram sync` (or a commit) shares it.")
    if guarded is not None:
        for path in guarded.quarantined:
            print(f"engram: quarantined {path}: it reads like instructions to an AI reader "
                  "(`engram quarantine list`; the next `engram sync` commits it)")
        for line in guarded.arrived:
            print(f"engram: this merge brought in a secret or personal data — rotate or remove it: {line}")
    if findings:
        print(f"engram: {len(findings)} thing(s) to look at after this {HOOKS[hook]}:")
        for finding in findings:
            print(f"  {finding.path}: {finding.message}")
    return 0


def _settle(state: VaultState) -> Settled | None:
    """Settle what the pull brought in (``ORIG_HEAD..HEAD``; see :mod:`engram.team.settle`)."""
    from engram.team.gitstore import GitRepo
    from engram.team.settle import between

    with GitRepo(state.root) as repo:
        old, new = repo.rev("ORIG_HEAD"), repo.rev("HEAD")
        if old is None or new is None or old == new:
            return None
        prefix = state.root.relative_to(repo.top).as_posix()
        return between(state, repo, "" if prefix == "." else prefix, old, new)


def _main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] in HOOKS and argv[1] == "--vault":
        return report(Path(argv[2]), argv[0])
    print(f"usage: python -m engram.team.hooks {'|'.join(HOOKS)} --vault PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
