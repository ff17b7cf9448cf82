"""Three kinds of repository for the scope tests: an org vault, team vaults, their clones.

All real git: bare repositories stand in for the hosts, and every machine is a clone
with a vault in it (``Vault.init`` registers the merge driver, as ``engram init`` does).
"""

from __future__ import annotations

from pathlib import Path

from engram.vault import Vault
from tests.git_helpers import git


def bare(tmp: Path, name: str) -> Path:
    path = tmp / f"{name}.git"
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(path))
    return path


def publish_org(tmp: Path, *, review: bool = False) -> Path:
    """An org vault repository, laid out and pushed by its first maintainer."""
    origin = bare(tmp, "org")
    admin = Vault.init(tmp / "org-admin", actor="org-admin")
    git(admin.root, "remote", "add", "origin", str(origin))
    if review:
        admin.configure_scopes(review=True)
    assert admin.sync().pushed
    admin.close()
    return origin


def team(tmp: Path, name: str, org: Path | None, *machines: str) -> list[Vault]:
    """A team vault repository with the org configured, and one clone per machine."""
    origin = bare(tmp, name)
    first = Vault.init(tmp / f"{name}-{machines[0]}", actor=machines[0])
    git(first.root, "remote", "add", "origin", str(origin))
    if org is not None:
        first.configure_scopes(org_repo=str(org))
    assert first.sync().pushed
    vaults = [first]
    for machine in machines[1:]:
        git(tmp, "clone", "--quiet", str(origin), f"{name}-{machine}")
        Vault.init(tmp / f"{name}-{machine}").close()
        vaults.append(Vault.open(tmp / f"{name}-{machine}", actor=machine))
    return vaults


def org_files(org: Path, branch: str = "main") -> dict[str, str]:
    """Path → text of every file on a branch of the org repository."""
    names = git(org, "ls-tree", "-r", "--name-only", branch).stdout.split()
    return {n: git(org, "show", f"{branch}:{n}").stdout for n in names}
