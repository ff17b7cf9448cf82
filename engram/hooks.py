"""The ``post-merge`` git hook: after a plain ``git pull``, refresh the index and report.

``engram hooks install`` writes a small ``sh`` script into the clone's hooks folder (as
``git rev-parse --git-path hooks`` names it, so ``core.hooksPath`` is honoured). After
every merge or fast-forward git runs it; it refreshes the derived index and prints the
cross-file findings of :func:`engram.conflicts.checks` — edges to missing items,
superseded items still active, items a merge flagged, files that no longer parse. The
hook never fails a pull: it reports and exits with the status of the hook it chains.

A user's existing ``post-merge`` hook is never overwritten: it is renamed to
``post-merge.pre-engram`` and run first by engram's hook, with the same arguments; its
exit status is the hook's. ``engram hooks uninstall`` puts it back. ``engram sync`` sets
``ENGRAM_SYNC=1`` while it moves the work tree, so the hook skips engram's part (sync
refreshes and reports itself) but still runs the chained hook.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from engram import gitstore
from engram.errors import Conflict

HOOK = "post-merge"
CHAINED = HOOK + ".pre-engram"
MARKER = "# engram post-merge hook"


@dataclass(frozen=True, slots=True)
class HookStatus:
    path: Path
    installed: bool
    current: bool
    chained: bool
    foreign: bool  # a post-merge hook that is not engram's


def _script(vault_rel: str) -> str:
    python = shlex.quote(sys.executable)
    return (
        "#!/bin/sh\n"
        f"{MARKER} (installed by `engram hooks install`; `engram hooks uninstall` removes it\n"
        f"# and restores any hook it chained as {CHAINED}).\n"
        'hook_dir=$(dirname "$0")\n'
        "status=0\n"
        f'if [ -x "$hook_dir/{CHAINED}" ]; then\n'
        f'  "$hook_dir/{CHAINED}" "$@" || status=$?\n'
        "fi\n"
        'if [ -z "$ENGRAM_SYNC" ]; then\n'
        f"  {python} -m engram.hooks {HOOK} --vault {shlex.quote(vault_rel)} || true\n"
        "fi\n"
        "exit $status\n"
    )


def _paths(root: Path) -> tuple[Path, str]:
    hook = gitstore.git_path(root, f"hooks/{HOOK}")
    rel = os.path.relpath(root.resolve(), gitstore.top_level(root))
    return hook, rel


def status(root: Path) -> HookStatus:
    hook, rel = _paths(root)
    text = hook.read_text(errors="replace") if hook.is_file() else ""
    ours = MARKER in text
    return HookStatus(
        path=hook,
        installed=ours,
        current=ours and text == _script(rel),
        chained=(hook.parent / CHAINED).exists(),
        foreign=hook.exists() and not ours,
    )


def install(root: Path) -> HookStatus:
    """Install (or update) the hook, chaining a user's existing one. Idempotent."""
    hook, rel = _paths(root)
    chained = hook.parent / CHAINED
    if hook.exists() and MARKER not in hook.read_text(errors="replace"):
        if chained.exists():
            raise Conflict(
                f"{hook} is not engram's and {chained} already exists.",
                hint=f"Merge the two hooks by hand (or remove {chained.name}), then run "
                "`engram hooks install` again.",
            )
        hook.rename(chained)
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(_script(rel), encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return status(root)


def uninstall(root: Path) -> HookStatus:
    """Remove engram's hook and restore the chained one; a foreign hook is left alone."""
    hook, _ = _paths(root)
    chained = hook.parent / CHAINED
    if hook.exists() and MARKER in hook.read_text(errors="replace"):
        hook.unlink()
        if chained.exists():
            chained.rename(hook)
    return status(root)


def post_merge(vault_path: Path) -> int:
    """What the hook runs: refresh the index and print findings. Always returns 0."""
    from engram.conflicts import checks
    from engram.errors import EngramError
    from engram.vault import Vault

    try:
        with Vault.open(vault_path) as vault:
            findings = checks(vault)
    except EngramError as exc:
        print(f"engram: could not check the vault after the merge: {exc}", file=sys.stderr)
        return 0
    if findings:
        print(f"engram: {len(findings)} thing(s) to look at after this merge:")
        for finding in findings:
            print(f"  {finding.path}: {finding.message}")
    return 0


def _main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == HOOK and argv[1] == "--vault":
        return post_merge(Path(argv[2]))
    print(f"usage: python -m engram.hooks {HOOK} --vault PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
