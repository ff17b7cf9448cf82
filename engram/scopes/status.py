"""Onboarding for scopes and capture: what is wired, what each gap costs, the exact fix.

:func:`scopes_status` lists the three scopes (private: this machine; team: this vault's
repository and its remote; org: the configured org vault and this machine's clone of it)
and the capture sources (an agentsync board, a context-keeper folder), and for each missing
piece: the problem, what it costs, and the exact fix — with the value filled in when one
can be found next to the vault (a ``.context/`` folder, a repository with an
``agentsync`` branch). A :class:`Fix` says it both ways, and each adapter shows its own:
the CLI the command to type (``engram scopes setup --org …``), MCP the tool call
(``setup(org_repo=…)``).

:func:`configure` is what that ``setup`` call runs: it writes the ``scopes`` and
``capture`` keys of ``engram.yaml`` (:func:`engram.scopes.settings.set_keys`, which
changes only those lines) after checking each value points at something real.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engram.errors import InvalidInput
from engram.items.state import VaultState
from engram.scopes import org as org_scope
from engram.scopes.settings import capture_settings, set_keys
from engram.team import gitstore

#: Who reads a fix: a person at a shell (``cli``) or an agent with the MCP tools (``mcp``).
Surface = Literal["cli", "mcp"]


@dataclass(frozen=True, slots=True)
class Fix:
    """The step that closes a gap, as each adapter says it."""

    cli: str  # the command a person types
    mcp: str  # the tool call an agent makes

    @classmethod
    def same(cls, text: str) -> Fix:
        """A fix that reads the same on both (a git command, a setting to change)."""
        return cls(text, text)

    def on(self, surface: Surface) -> str:
        return self.cli if surface == "cli" else self.mcp


@dataclass(frozen=True, slots=True)
class Wire:
    """One scope or capture source and how it is wired."""

    name: str  # private | team | org | agentsync | context-keeper
    kind: str  # scope | capture
    wired: bool
    detail: str
    cost: str | None = None  # what the gap costs (None when wired)
    fix: Fix | None = None  # what closes it

    def to_json(self, surface: Surface) -> dict[str, Any]:
        """The wire as ``surface`` shows it: ``fix`` is its command or its tool call."""
        return {"name": self.name, "kind": self.kind, "wired": self.wired, "detail": self.detail,
                "cost": self.cost, "fix": self.fix.on(surface) if self.fix else None}


def _call(**kwargs: str) -> str:
    return "setup(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def _setup(option: str, value: str | None, placeholder: str, **call: str) -> Fix:
    """``engram scopes setup --option VALUE`` for the CLI, ``setup(key=value)`` for MCP."""
    return Fix(f"engram scopes setup --{option} {shlex.quote(value) if value else placeholder}", _call(**call))


def _git(cwd: Path, *args: str) -> str | None:
    """git's output in ``cwd``, or None when git fails or ``cwd`` is not a folder."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
                              stdin=subprocess.DEVNULL)
    except OSError:  # cwd is a file or gone: no repository there
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def scopes_status(state: VaultState) -> tuple[Wire, ...]:
    """Every scope and capture source, wired or not (see the module docstring)."""
    out: list[Wire] = []
    repo = gitstore.is_work_tree(state.root)
    ignored = repo and _git(state.root, "check-ignore", "-q", "private/x.md") is not None
    out.append(Wire("private", "scope", bool(ignored) or not repo,
                    "private/ never leaves this machine" + ("" if ignored or not repo else " — but git does not ignore it"),
                    None if ignored or not repo else "private items would be committed and shared",
                    None if ignored or not repo else Fix(f"engram init {shlex.quote(str(state.root))}",
                                                         _call(vault_path=str(state.root)))))
    remote = _git(state.root, "remote", "get-url", "origin") if repo else None
    add_remote = f"git -C {shlex.quote(str(state.root))} remote add origin URL"
    out.append(Wire("team", "scope", bool(remote), f"this vault, shared through {remote}" if remote else
                    "this vault has no remote", None if remote else
                    "only this machine has the team's knowledge; teammates' agents cannot recall it",
                    None if remote else Fix(f"{add_remote} && engram sync", f"{add_remote} (in a shell), then sync()")))
    src = org_scope.source(state)
    if src is None:
        out.append(Wire("org", "scope", False, "no org vault is configured",
                        "nothing this team learns reaches other teams, and their general lessons never show up in "
                        "search", _setup("org", None, "PATH_OR_URL",
                                         org_repo="<path or URL of the org vault repository>")))
    else:
        clone = org_scope.org_state(state)
        detail = f"{src}; " + (f"cloned at {clone.root}" if clone else "not cloned on this machine yet")
        out.append(Wire("org", "scope", clone is not None, detail,
                        None if clone else "org items are not recalled here until the clone exists",
                        None if clone else Fix("engram scopes sync", "sync_scopes()")))
    cfg = capture_settings(state)
    if cfg.agentsync.strip():
        out.append(Wire("agentsync", "capture", True, f"board {cfg.agentsync} ({cfg.agentsync_branch})"))
    else:
        guess = _find_board(state, cfg.agentsync_branch or "agentsync")
        out.append(Wire("agentsync", "capture", False, "no agentsync board is configured",
                        "work agents finish (their notes and changed files) is never captured: each outcome is "
                        "lost when the agent takes its next claim",
                        _setup("agentsync", guess, "PATH_OR_URL",
                               agentsync_repo=guess or "<clone holding the agentsync branch>")))
    if cfg.context_keeper.strip():
        out.append(Wire("context-keeper", "capture", True, f"decision log {cfg.context_keeper}"))
    else:
        guess = _find_context(state)
        out.append(Wire("context-keeper", "capture", False, "no context-keeper folder is configured",
                        "decisions and constraints recorded there (with their rationale) never reach recall, and "
                        "a superseded decision is not retired here",
                        _setup("context-keeper", guess, "PATH", context_keeper=guess or "<project>/.context")))
    return tuple(out)


def _find_context(state: VaultState) -> str | None:
    for folder in (state.root, *state.root.parents[:2]):
        if (folder / ".context" / "decisions.json").is_file() or (folder / ".context" / "constraints.json").is_file():
            return str(folder / ".context")
    return None


def _find_board(state: VaultState, branch: str) -> str | None:
    for folder in (state.root, *state.root.parents[:2]):
        if (folder / ".git").exists():
            for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}"):
                if _git(folder, "rev-parse", "--verify", "--quiet", ref):
                    return str(folder)
    return None


def configure(
    state: VaultState,
    *,
    org_repo: str | None = None,
    review: bool | None = None,
    agentsync_repo: str | None = None,
    context_keeper: str | None = None,
) -> bool:
    """Wire scopes and capture sources in ``engram.yaml`` (only the keys given; ``""``
    removes one). Each path must exist; a URL is taken as given. True if the file
    changed. Raises InvalidInput."""
    scopes: dict[str, Any] = {}
    capture: dict[str, Any] = {}
    if org_repo is not None:
        scopes["org"] = _checked("org_repo", org_repo, state, git=True) or None
    if review is not None:
        scopes["review"] = review or None
    if agentsync_repo is not None:
        capture["agentsync"] = _checked("agentsync_repo", agentsync_repo, state, git=True) or None
    if context_keeper is not None:
        capture["contextKeeper"] = _checked("context_keeper", context_keeper, state, git=False) or None
    changed = False
    if scopes:
        changed |= set_keys(state, "scopes", scopes)
    if capture:
        changed |= set_keys(state, "capture", capture)
    return changed


def _checked(name: str, value: str, state: VaultState, *, git: bool) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a path or URL.", field=name, hint="e.g. ../org-knowledge.git")
    value = value.strip()
    if not value or org_scope.is_url(value):
        return value
    path = Path(value).expanduser()
    full = path if path.is_absolute() else state.root / path
    if not full.exists():
        raise InvalidInput(f"{name}: {full} does not exist.", field=name,
                           hint="Pass an existing folder (relative to the vault or absolute), or a URL.")
    if git and _git(full, "rev-parse", "--git-dir") is None:
        raise InvalidInput(f"{name}: {full} is not a git repository.", field=name,
                           hint="Pass a clone or a bare repository (git init --bare creates an empty one).")
    return value
