"""Real git for the merge and sync tests: a bare origin and machines that clone it.

Every machine is a real clone with a vault in it (``Vault.init`` on the clone registers
the merge driver, as a user's ``engram init`` would). Commands run with the hermetic
environment the autouse fixture set up (see ``tests/conftest.py``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from engram.team.sync import SyncReport
from engram.vault import Vault


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def bare_origin(tmp: Path) -> Path:
    origin = tmp / "origin.git"
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    return origin


def first_machine(tmp: Path, origin: Path, name: str) -> Vault:
    """A new vault that publishes itself to the (empty) origin."""
    vault = Vault.init(tmp / name, actor=name)
    git(vault.root, "remote", "add", "origin", str(origin))
    report = vault.sync()
    assert report.pushed, report
    return vault


def clone_machine(tmp: Path, origin: Path, name: str) -> Vault:
    git(tmp, "clone", "--quiet", str(origin), name)
    Vault.init(tmp / name).close()
    return Vault.open(tmp / name, actor=name)


def commit_all(vault: Vault, message: str = "edit") -> None:
    git(vault.root, "add", "--all")
    git(vault.root, "commit", "--quiet", "-m", message)


def tracked(root: Path) -> dict[str, bytes]:
    """Every tracked file's bytes (what must be identical on converged machines)."""
    names = git(root, "ls-files", "-z").stdout.split("\0")
    return {name: (root / name).read_bytes() for name in names if name}


def clean(root: Path) -> bool:
    """Nothing uncommitted and no merge or rebase in progress."""
    status = git(root, "status", "--porcelain").stdout
    git_dir = root / ".git"
    busy = any((git_dir / name).exists() for name in ("MERGE_HEAD", "rebase-merge", "rebase-apply"))
    return not status and not busy


def synced(*vaults: Vault) -> list[SyncReport]:
    return [v.sync() for v in vaults]
