"""Laying out a vault: ``engram init`` (and MCP ``setup``) go through :func:`init_vault`.

``init_vault`` is idempotent and never changes a byte of what a user has: template
files that exist are left alone. The one exception is ``.gitattributes``, which gets the
lines that route items to the merge driver appended (that routing is what ``init`` is
asked to set up). A user's own ``.gitignore`` is not touched: ``.engram/`` ignores itself
with a ``.gitignore`` of its own, and ``private/`` gets one when the first private item
is written (:func:`engram.store.fsio.ensure_ignored`). In a folder that already holds
Markdown notes (an Obsidian vault being adopted) the template's ``README.md`` is not laid
either: it would be a new note in the person's vault; nor are its ``.obsidian/``
settings, which would change how Obsidian behaves there — they are for a new vault. It runs ``git init`` when the
folder is not inside a work tree, creates ``.engram/``, registers the merge driver and
installs the pre-commit hook that refuses commits carrying secrets
(:mod:`engram.team.hooks`; a user's own hook is chained).

:func:`add_remote` (``engram remote add``, ``engram init --remote``) gives a vault its
first remote: the right branch whatever the remote's HEAD says, the first push, and the
commands a teammate runs to join.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engram.errors import GitError, InvalidInput, StorageError
from engram.items.state import VaultState
from engram.store.fsio import atomic_write, ensure_ignored, read_regular
from engram.store.settings import MAX_SETTINGS_BYTES
from engram.team.template import template_files

#: Template files whose missing lines are appended to a user's existing copy.
_LINE_MERGED = frozenset({".gitattributes"})
#: Template files not laid into a folder that already holds notes.
_NOT_FOR_NOTES = frozenset({"README.md"})
#: Obsidian settings: laid only into a new, empty vault. In a folder of notes they would
#: change how Obsidian behaves for the person who opens it later (links not updated on
#: rename, new links relative), so adoption never adds them.
_OBSIDIAN = ".obsidian/"


def init_vault(path: Path) -> Path:
    """Create or complete a vault at ``path``; return its resolved root."""
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"{path} is a file, not a folder.", hint="Pick a folder for the vault.")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {path}: {exc.strerror}.", hint="Check the path and permissions.") from exc
    root = path.resolve()
    adopting = has_notes(root)
    for rel, data in sorted(template_files().items()):
        target = root / rel
        if adopting and (rel in _NOT_FOR_NOTES or rel.startswith(_OBSIDIAN)):
            continue
        if adopting and rel == "engram.yaml":
            data = _for_notes(data)
        if not target.exists():
            atomic_write(target, data)
        elif rel in _LINE_MERGED:
            _append_missing_lines(target, rel, data)
    (root / ".engram").mkdir(exist_ok=True)
    ensure_ignored(root / ".engram")
    from engram.team import gitstore, hooks

    gitstore.ensure_repo(root)
    gitstore.install_merge_driver(root)
    hooks.install(root, (hooks.PRE_COMMIT,))
    return root


def _for_notes(settings: bytes) -> bytes:
    """The template's settings for a folder of notes: its README is a note like any."""
    text = settings.decode("utf-8")
    text = text.replace("  ignore:\n    - README.md\n", "  ignore: []\n")
    return text.replace("This vault's own README is documentation, not knowledge.", "Every note here is indexed.").encode("utf-8")


def has_notes(root: Path) -> bool:
    """Whether a folder already holds Markdown notes (outside hidden folders)."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.name.lower().endswith(".md"):
                return True
    return False


def _append_missing_lines(target: Path, rel: str, template: bytes) -> None:
    # read_regular: a .gitattributes that is a symlink to /dev/zero or a FIFO must not hang
    # init or make it read someone else's file; such a file is an UnsafeFile error.
    try:
        existing = read_regular(target, rel, MAX_SETTINGS_BYTES)[1].decode("utf-8")
    except (FileNotFoundError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read {target}: {exc}.", hint="Fix or remove the file and retry.") from exc
    have = {line.strip() for line in existing.splitlines()}
    missing = [
        line
        for line in template.decode("utf-8").splitlines()
        if line.strip() and not line.startswith("#") and line.strip() not in have
    ]
    if missing:
        joined = existing + ("" if existing.endswith("\n") or not existing else "\n")
        joined += "# added by engram init\n" + "\n".join(missing) + "\n"
        atomic_write(target, joined.encode("utf-8"))


# --------------------------------------------------------------------------- a first remote


@dataclass(frozen=True, slots=True)
class RemoteSetup:
    """What ``engram remote add`` did, and what a teammate runs to join."""

    name: str
    url: str
    branch: str
    pushed: bool
    teammate: tuple[str, ...]


def add_remote(state: VaultState, url: str, *, name: str = "origin") -> RemoteSetup:
    """Give the vault its first remote and publish it there.

    The branch is the one the remote's HEAD names (a bare repository made with
    ``git init --bare`` says ``master`` where engram says ``main``): the vault is pushed
    to it and tracks it, so a plain ``git clone`` checks the vault out. A remote that
    already holds history this vault does not share is refused — the team's vault is
    there already: clone it instead. Raises GitError, InvalidInput.
    """
    from engram.team import gitstore
    from engram.team.sync import sync

    url = url.strip()
    if not url:
        raise InvalidInput("the remote URL is empty.", hint="e.g. engram remote add git@github.com:team/memory.git")
    with gitstore.GitRepo(state.root) as repo:
        current = repo.current_branch()
        if current is None:
            raise GitError("HEAD is detached; a remote needs a branch.", hint="Check out one, e.g. `git switch main`.")
        existing = repo.config(f"remote.{name}.url")
        if existing is not None and existing != url:
            raise InvalidInput(
                f"the vault already has a remote {name!r} ({existing}).",
                hint=f"Pass another --name, or change it with `git remote set-url {name} URL`.",
            )
        if existing is None:
            repo.run("remote", "add", name, url)
        branch = gitstore.remote_default_branch(repo, name, url) or current
        shared = gitstore.unrelated_branches(repo, name)
        if shared:
            raise GitError(
                f"{url} already holds history this vault does not share (branch {shared[0]}): "
                "it is probably the team's vault.",
                hint=f"Clone it instead: git clone {url}  (then run engram commands in the clone).",
            )
        repo.run("config", f"branch.{current}.remote", name)
        repo.run("config", f"branch.{current}.merge", f"refs/heads/{branch}")
    report = sync(state, remote=name, branch=branch)
    folder = _clone_folder(url)
    teammate = (
        f"git clone {url} {folder}",
        f"cd {folder}",
        "engram sync",
    )
    return RemoteSetup(name, url, branch, report.pushed, teammate)


def _clone_folder(url: str) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return tail.removesuffix(".git") or "team-memory"
