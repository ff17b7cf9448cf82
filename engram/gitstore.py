"""The vault's git repository: creating it and registering the merge driver.

Small, one-shot commands (init, config, attribute checks) run the ``git`` binary
directly: it is what a user's git does and costs no import time. Every git failure is
translated into :class:`~engram.errors.GitError` here and nowhere else.

The merge driver is registered in the clone's own ``.git/config`` (git never shares
config through a repository) as an absolute command line: the Python interpreter that
runs engram, ``-m mergedriver``, and git's ``%O %A %B %L %P`` placeholders. Paths are
shell-quoted because git runs the driver through ``sh``. ``.gitattributes`` (committed,
from the vault template) routes items and synapses to it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from engram.errors import GitError

DRIVER_NAME = "engram"
DRIVER_LABEL = "engram field-aware merge for items and synapses"


def driver_command() -> str:
    """The command line git runs for a merge (quoted for ``sh``)."""
    return f"{shlex.quote(sys.executable)} -m mergedriver %O %A %B %L %P"


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if shutil.which("git") is None:
        raise GitError("git is not installed or not on PATH.", hint="Install git and retry.")
    proc = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise GitError(
            f"`git {' '.join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}.",
            hint="Check the repository with `git status`.",
        )
    return proc


def is_work_tree(root: Path) -> bool:
    proc = _git(root, "rev-parse", "--is-inside-work-tree", check=False)
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def ensure_repo(root: Path) -> bool:
    """``git init`` the folder unless it is already inside a work tree; True if created."""
    if is_work_tree(root):
        return False
    _git(root, "init", "--quiet", "--initial-branch=main")
    return True


@dataclass(frozen=True, slots=True)
class DriverStatus:
    installed: bool
    command: str | None
    expected: str
    routed: bool

    @property
    def current(self) -> bool:
        return self.installed and self.command == self.expected


def install_merge_driver(root: Path) -> DriverStatus:
    """Register the driver in this clone's git config (idempotent)."""
    if not is_work_tree(root):
        raise GitError(f"{root} is not a git repository.", hint="Run `engram init` or `git init` first.")
    _git(root, "config", "--local", f"merge.{DRIVER_NAME}.name", DRIVER_LABEL)
    _git(root, "config", "--local", f"merge.{DRIVER_NAME}.driver", driver_command())
    return merge_driver_status(root)


def uninstall_merge_driver(root: Path) -> DriverStatus:
    """Remove the driver's config section (git then merges these files as text)."""
    if is_work_tree(root):
        _git(root, "config", "--local", "--remove-section", f"merge.{DRIVER_NAME}", check=False)
    return merge_driver_status(root)


def merge_driver_status(root: Path) -> DriverStatus:
    command = None
    routed = False
    if is_work_tree(root):
        proc = _git(root, "config", "--local", "--get", f"merge.{DRIVER_NAME}.driver", check=False)
        command = proc.stdout.strip() or None
        attr = _git(root, "check-attr", "merge", "--", "x/item.md", check=False)
        routed = attr.stdout.strip().endswith(f": {DRIVER_NAME}")
    return DriverStatus(command is not None, command, driver_command(), routed)
