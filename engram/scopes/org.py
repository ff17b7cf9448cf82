"""The org vault: a second vault repository that many teams share.

The team vault names it in ``engram.yaml`` (``scopes.org``: a path, relative to the vault
or absolute, or any URL git can clone). Each machine keeps its own clone of it under
``.engram/scopes/org/`` — inside the team vault's machine-local folder, so the team's git
and index never see it — with the merge driver registered, as ``engram init`` does for
any clone. The clone is a vault in its own right: :func:`org_state` opens it as one
(cached with the team vault's state and closed with it), and :func:`sync_org` brings it
level with the org repository through :func:`engram.team.sync.sync`: the same in-process
field-aware merge and the same compare-and-swap retry of the push as the team's own sync.

Network happens only in :func:`ensure_clone` and :func:`sync_org`; a search reads the
local clone as it is (see :mod:`engram.scopes.recall`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import GitError, InvalidInput
from engram.items.state import VaultState
from engram.scopes.settings import ScopeSettings, scope_settings
from engram.store.settings import Settings
from engram.team import gitstore, setup

if TYPE_CHECKING:  # sync (and all it imports) loads when a sync runs, not with every search
    from engram.team.sync import SyncReport

CLONE_DIR = ("scopes", "org")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/\\:]+@[^:]+:")


def is_url(value: str) -> bool:
    """Whether ``value`` is a URL (``https://…``, ``ssh://…``, ``git@host:path``), not a path."""
    return bool(_URL.match(value))


def source(state: VaultState) -> str | None:
    """The configured org repository as git is to clone it (a URL, or an absolute path)."""
    raw = scope_settings(state).org.strip()
    if not raw:
        return None
    if is_url(raw):
        return raw
    path = Path(raw).expanduser()
    return str((path if path.is_absolute() else state.root / path).resolve())


def clone_path(state: VaultState) -> Path:
    return state.state_dir.joinpath(*CLONE_DIR)


def not_configured() -> InvalidInput:
    return InvalidInput(
        "no org vault is configured for this vault.",
        field="scopes.org",
        hint="Name it with `engram scopes setup --org PATH_OR_URL`.",
    )


def org_state(state: VaultState) -> VaultState | None:
    """The org clone opened as a vault (None when there is no org or no clone yet)."""
    if source(state) is None:
        return None
    path = clone_path(state)
    if not (path / ".git").exists():
        return None
    return state.companion("scopes.org", lambda: _as_session_of(VaultState(path, actor=state.actor), state))


def _as_session_of(org: VaultState, state: VaultState) -> VaultState:
    """The org clone acts as ``state`` does: an agent's session is an agent's there too,
    and its screen reads meaning with the same encoder."""
    org.agent_session = state.agent_session
    org.encoder = state.encoder
    return org


def ensure_clone(state: VaultState) -> VaultState:
    """The org clone, made first if needed (``git clone``, then the vault template and
    the merge driver, as ``engram init`` lays them). Raises InvalidInput, GitError."""
    src = source(state)
    if src is None:
        raise not_configured()
    path = clone_path(state)
    if not (path / ".git").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["git", "clone", "--quiet", src, str(path)], capture_output=True, text=True, check=False,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            raise GitError(
                f"cannot clone the org vault {src}: {(proc.stderr or proc.stdout).strip()}.",
                hint="Check scopes.org in engram.yaml and that this machine can reach it "
                "(`git ls-remote URL`).",
            )
    else:
        current = subprocess.run(
            ["git", "remote", "get-url", "origin"], cwd=path, capture_output=True, text=True, check=False,
        ).stdout.strip()
        if current != src:  # the team moved its org: follow the setting
            subprocess.run(["git", "remote", "set-url", "origin", src], cwd=path, check=False,
                           capture_output=True)
    setup.init_vault(path)
    org = org_state(state)
    assert org is not None
    return org


#: Promotions into an org vault that asks for review go to branches named like this.
REVIEW_PREFIX = "engram/promote-"


def org_branch(state: VaultState) -> str | None:
    """The org branch to sync: ``scopes.orgBranch``, else (None) what the clone tracks."""
    return scope_settings(state).org_branch.strip() or None


def review_required(org: VaultState) -> bool:
    """Whether the org vault asks for review (its own ``scopes.review``)."""
    return org.settings.section("scopes", ScopeSettings).review


def sync_org(state: VaultState, *, message: str | None = None) -> SyncReport:
    """Bring the org clone level with the org repository (clone it first if needed):
    commit, fetch, merge field by field, push, retry when a peer pushed first.
    Raises InvalidInput (no org configured), GitError."""
    from engram.team.sync import sync

    org = ensure_clone(state)
    branch = org_branch(state)
    with gitstore.GitRepo(org.root) as repo:
        current = repo.current_branch()
        main = branch or default_branch(repo)
    if current is not None and current.startswith(REVIEW_PREFIX):
        # A review promotion was interrupted (killed between writing the org copy and
        # pushing it, or mid-sync). Finish it on its own branch — commit what it wrote,
        # let sync recover from its journal, push the branch — and only then go back:
        # switching first would carry its files onto the main branch, past the review.
        sync(org, branch=current, message="engram: finish an interrupted promotion for review")
        with gitstore.GitRepo(org.root) as repo:
            repo.run("switch", "--quiet", main)
    report = sync(org, branch=branch, message=message)
    org.settings = Settings.load(org.root)  # the org's own settings (review) may have changed
    org.refresh()
    return report


def default_branch(repo: gitstore.GitRepo) -> str:
    """The branch the org repository's HEAD names (``main`` when it cannot tell)."""
    head = repo.run("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", check=False).out.strip()
    if head.startswith("origin/"):
        return head.removeprefix("origin/")
    return repo.current_branch() or "main"
