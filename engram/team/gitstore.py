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

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engram.errors import GitError

DRIVER_NAME = "engram"
DRIVER_LABEL = "engram field-aware merge for items and synapses"
#: Set to false by ``merge-driver uninstall``: commands then no longer register the driver.
AUTO_REGISTER = "engram.autoRegister"


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
    """``git init`` the folder unless it is already tracked by a work tree; True if created.

    A vault inside another repository shares it (a project that keeps its team memory in
    a subfolder), unless that repository ignores the folder — ``./engram-demo`` inside a
    checkout, say: such a vault could never be committed or synced there, so it gets a
    repository of its own.
    """
    if is_work_tree(root) and not _ignored_by_enclosing_repo(root):
        return False
    if (root / ".git").exists():
        return False
    _git(root, "init", "--quiet", "--initial-branch=main")
    return True


def _ignored_by_enclosing_repo(root: Path) -> bool:
    top = Path(_git(root, "rev-parse", "--show-toplevel").stdout.strip()).resolve()
    if top == root.resolve():
        return False
    return _git(root, "check-ignore", "--quiet", "--no-index", ".", check=False).returncode == 0


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
    _git(root, "config", "--local", "--unset", AUTO_REGISTER, check=False)
    return merge_driver_status(root)


def ensure_merge_driver(root: Path) -> bool:
    """Register the driver in a clone that routes files to it but lacks it (a fresh
    ``git clone`` of a vault: git never copies config); True when it did.

    Cheap when nothing is to do — the clone's config file is read, no process started —
    so every command can call it.
    """
    attributes = root / ".gitattributes"
    git_dir = _git_dir(root)
    if git_dir is None or not attributes.is_file():
        return False
    try:
        if f"merge={DRIVER_NAME}" not in attributes.read_text(encoding="utf-8", errors="replace"):
            return False
        config = (git_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if f'[merge "{DRIVER_NAME}"]' in config or "autoregister = false" in config.lower():
        return False  # registered, or uninstalled on purpose
    try:
        install_merge_driver(root)
    except GitError:
        return False  # a read-only clone, say: `merge-driver status` explains
    return True


def _git_dir(root: Path) -> Path | None:
    """The git directory of the work tree holding ``root`` (a linked worktree's ``.git``
    file points to its own folder, whose ``commondir`` holds the shared config)."""
    for folder in (root, *root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            own = (folder / text.removeprefix("gitdir:").strip()).resolve()
            common = own / "commondir"
            return (own / common.read_text().strip()).resolve() if common.is_file() else own
    return None


def uninstall_merge_driver(root: Path) -> DriverStatus:
    """Remove the driver's config section (git then merges these files as text)."""
    if is_work_tree(root):
        _git(root, "config", "--local", "--remove-section", f"merge.{DRIVER_NAME}", check=False)
        _git(root, "config", "--local", AUTO_REGISTER, "false")  # and stay off: asked for
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


# --------------------------------------------------------------------------- git plumbing

#: File modes of regular files in a tree (the rest are links, submodules, folders).
REGULAR = ("100644", "100755")
#: Temporary folders engram's git plumbing makes inside the git folder (a killed sync's
#: are removed by the next one).
TEMP_PREFIX = "engram-tmp-"
#: The empty tree: the merge base of two histories that share no commit.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_STATE_FILES = {
    "MERGE_HEAD": "a merge",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or `git am`",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
}


@dataclass(frozen=True, slots=True)
class GitOutput:
    status: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return (self.err or self.out).strip()


@dataclass(frozen=True, slots=True)
class RawChange:
    """One line of ``git diff-tree --raw``: a path's mode and blob before and after."""

    path: str
    old_mode: str
    new_mode: str
    old_sha: str | None
    new_sha: str | None

    @classmethod
    def parse(cls, meta: str, path: str) -> RawChange:
        """One ``--raw -z`` record: ``:<old mode> <new mode> <old sha> <new sha> <status>``
        and its path (an all-zero sha: no blob on that side)."""
        old_mode, new_mode, old_sha, new_sha, _status = meta[1:].split(" ", 4)
        return cls(path, old_mode, new_mode, None if set(old_sha) == {"0"} else old_sha,
                   None if set(new_sha) == {"0"} else new_sha)


def split_batch(raw: bytes, wanted: Sequence[str], *, skip_missing: bool = False) -> dict[str, bytes]:
    """sha → bytes from the output of ``git cat-file --batch`` fed ``wanted`` in order.
    A missing object is a GitError, or left out with ``skip_missing``."""
    out: dict[str, bytes] = {}
    pos = 0
    for sha in wanted:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split()
        if len(header) < 3 or header[1] == b"missing":
            if not skip_missing:
                raise GitError(f"object {sha} is missing from the repository.", hint="Run `git fsck`.")
            pos = end + 1
            continue
        size = int(header[2])
        out[sha] = raw[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return out


class GitRepo:
    """A work tree driven through the ``git`` binary, for ``engram sync`` and the hooks.

    Commands run as ``git`` subprocesses in the work tree, with the C locale (git's
    messages are read in places); blobs are read through one persistent ``git cat-file
    --batch`` process per repository, and written as loose objects in-process, so a
    merge of thousands of files starts a handful of processes, not thousands. No git
    library is imported: GitPython's import alone cost a post-merge hook ~0.1 s of CPU,
    half of what it spent. Every failure to run git is a :class:`GitError`, raised here
    and nowhere else.
    """

    def __init__(self, root: Path) -> None:
        self._cat: subprocess.Popen[bytes] | None = None
        self._cat_lock = threading.Lock()
        out = _run_git(root, ("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"), None, None)
        if out.status != 0:
            bare = _run_git(root, ("rev-parse", "--is-bare-repository"), None, None)
            if bare.status == 0 and bare.out.strip() == "true":
                raise GitError(f"{root} is inside a bare repository.", hint="Sync a clone with a work tree.")
            raise GitError(
                f"cannot open the git repository at {root}: {out.text or f'exit {out.status}'}.",
                hint="Check the repository with `git status`; nothing was half-done.",
            )
        top, git_dir, common = out.out.split("\n")[:3]
        self.top = Path(top).resolve()
        self.git_dir = Path(git_dir).resolve()
        self._objects = (Path(common) if Path(common).is_absolute() else Path(root) / common).resolve() / "objects"

    def close(self) -> None:
        with self._cat_lock:
            cat, self._cat = self._cat, None
        if cat is not None:
            with contextlib.suppress(OSError):
                if cat.stdin is not None:
                    cat.stdin.close()
                cat.wait(timeout=5)
            if cat.poll() is None:
                cat.kill()
                cat.wait()
            if cat.stdout is not None:
                cat.stdout.close()

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a repository nobody closed must not leave its cat-file behind
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ commands

    def run(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None, stdin: bytes | None = None
    ) -> GitOutput:
        """Run ``git <args>`` in the work tree; raise GitError on failure when ``check``."""
        result = _run_git(self.top, args, env, stdin)
        if check and result.status != 0:
            raise GitError(
                f"`git {' '.join(args)}` failed: {result.text or f'exit {result.status}'}.",
                hint="Check the repository with `git status`.",
            )
        return result

    def rev(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None."""
        out = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return out.out.strip() or None if out.status == 0 else None

    def current_branch(self) -> str | None:
        out = self.run("symbolic-ref", "--short", "--quiet", "HEAD", check=False)
        return out.out.strip() or None if out.status == 0 else None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.run("merge-base", "--is-ancestor", ancestor, descendant, check=False).status == 0

    def merge_base(self, a: str, b: str) -> str | None:
        out = self.run("merge-base", a, b, check=False)
        return out.out.strip() or None if out.status == 0 else None

    def config(self, key: str) -> str | None:
        out = self.run("config", "--get", key, check=False)
        return out.out.strip() or None if out.status == 0 else None

    def unfinished_operation(self) -> str | None:
        """What the repository is in the middle of (a merge, a rebase, …), if anything."""
        for name, what in _STATE_FILES.items():
            if (self.git_dir / name).exists():
                return what
        return None

    def diff_tree(self, old: str, new: str) -> dict[str, RawChange]:
        """Files that differ between two commits (or trees), without rename detection."""
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", old, new).out
        fields = out.split("\0")
        changes: dict[str, RawChange] = {}
        for i in range(0, len(fields) - 1, 2):
            meta, path = fields[i], fields[i + 1]
            if meta.startswith(":"):
                changes[path] = RawChange.parse(meta, path)
        return changes

    def log_changes(self, *args: str, paths: Sequence[str] = (), check: bool = True) -> list[tuple[str, list[RawChange]]]:
        """Each commit ``git log <args>`` lists, newest first, with the files it changed
        (with ``-m``, once per parent of a merge). ``-z`` keeps every path as git stores
        it: without it git quotes a name such as ``é.md`` and the name would match no
        file. ``paths`` are literal file or folder names (``:(literal)``); a glob goes in
        ``args`` after ``--``."""
        spec = [f":(literal){path}" for path in paths]
        tail = [] if "--" in args else ["--"]
        out = self.run("log", "--format=%x01%H", "--raw", "-z", "--no-renames", "--no-abbrev",
                       *args, *tail, *spec, check=check).out
        commits: list[tuple[str, list[RawChange]]] = []
        for chunk in out.split("\x01")[1:]:  # "<sha>\0\n" then ":<modes> <shas> <status>\0<path>\0" per file
            fields = chunk.split("\0")
            changes: list[RawChange] = []
            for i in range(1, len(fields) - 1, 2):
                meta = fields[i].lstrip("\n")
                if not meta.startswith(":"):
                    break
                changes.append(RawChange.parse(meta, fields[i + 1]))
            commits.append((fields[0].strip(), changes))
        return commits

    def has_path(self, commit: str, path: str) -> bool:
        return self.run("cat-file", "-e", f"{commit}:{path}", check=False).status == 0

    def rev_blob(self, commit: str, path: str) -> str | None:
        """The blob at ``path`` in ``commit``, or None."""
        out = self.run("rev-parse", "--verify", "--quiet", f"{commit}:{path}", check=False)
        return out.out.strip() or None if out.status == 0 else None

    def files_of(self, commit: str, ids: Iterable[str], lead: str = "") -> dict[str, list[str]]:
        """The Markdown files under ``lead`` at ``commit`` whose ``id:`` line names each
        of ``ids`` (repository paths; an id held by none is absent). ``git grep`` reads
        the tree without checking anything out; ``-z`` keeps a path with ``:`` whole."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        pattern = "^id:[ \t]*['\"]?(" + "|".join(re.escape(i) for i in wanted) + ")(['\"]|[ \t]|$)"
        out = self.run("grep", "-z", "-E", "-e", pattern, commit, "--", f"{lead}*.md", check=False).out
        found: dict[str, list[str]] = {}
        for line in out.splitlines():
            name, _, text = line.partition("\0")
            match = re.match(r"id:[ \t]*['\"]?(\S+?)['\"]?[ \t]*$", text)
            if match and match.group(1) in wanted:
                found.setdefault(match.group(1), []).append(name.removeprefix(f"{commit}:"))
        return found

    # ------------------------------------------------------------------ objects

    def read_blob(self, sha: str) -> bytes:
        """One object's bytes, through the repository's persistent ``cat-file`` process."""
        with self._cat_lock:
            try:
                cat = self._cat
                if cat is None or cat.poll() is not None:
                    cat = self._cat = subprocess.Popen(
                        ["git", "cat-file", "--batch"], cwd=self.top, env=_environ(None),
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    )
                assert cat.stdin is not None and cat.stdout is not None
                cat.stdin.write(sha.encode() + b"\n")
                cat.stdin.flush()
                header = cat.stdout.readline().split()
                if len(header) != 3:
                    raise GitError(f"object {sha} is missing from the repository.", hint="Run `git fsck`.")
                data = cat.stdout.read(int(header[2]))
                cat.stdout.read(1)  # the newline after the object
            except (OSError, ValueError) as exc:
                self._cat = None
                raise GitError(f"cannot read object {sha}: {exc}.",
                               hint="Check the repository with `git status`; nothing was half-done.") from exc
        return data

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Many objects in one ``git cat-file --batch`` (no round trip per object)."""
        wanted = sorted(set(shas))
        if not wanted:
            return {}
        out = _run_git(self.top, ("cat-file", "--batch"), None, ("\n".join(wanted) + "\n").encode(), text=False)
        if out.status != 0:
            raise GitError(f"cannot read objects: {out.text or f'exit {out.status}'}.",
                           hint="Check the repository with `git status`; nothing was half-done.")
        return split_batch(out.raw, wanted)

    def write_blob(self, data: bytes) -> str:
        """Store a blob as a loose object, in-process (as git writes one: zlib of
        ``blob <size>\\0`` and the bytes, under its sha1, read-only, renamed into place)."""
        body = b"blob %d\0" % len(data) + data
        sha = hashlib.sha1(body, usedforsecurity=False).hexdigest()
        target = self._objects / sha[:2] / sha[2:]
        if target.exists():
            return sha
        try:
            target.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(zlib.compress(body, 1))
                os.chmod(tmp, 0o444)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise GitError(f"cannot write an object: {exc}.",
                           hint="Check the repository with `git status`; nothing was half-done.") from exc
        return sha

    def write_tree(self, start: str, entries: Sequence[tuple[str, str | None, str]]) -> str:
        """The tree of commit ``start`` with (path, blob or None to delete, mode) applied.

        Built in a temporary index file, so the work tree and the real index are untouched.
        """
        with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX, dir=self.git_dir) as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.run("read-tree", start, env=env)
            lines = [
                f"{mode} {sha}\t{path}" if sha else f"0 {'0' * 40}\t{path}"
                for path, sha, mode in entries
            ]
            if lines:
                self.run("update-index", "-z", "--index-info", env=env, stdin="\0".join(lines).encode() + b"\0")
            return self.run("write-tree", env=env).out.strip()

    def commit_tree(self, tree: str, parents: list[str], message: str, env: dict[str, str] | None = None) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.run(*args, "-m", message, env=env).out.strip()


def _environ(env: dict[str, str] | None) -> dict[str, str]:
    """The environment git runs in: this process's, in the C locale (messages are read),
    with ``env`` on top."""
    merged = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C"}
    if env:
        merged.update(env)
    return merged


@dataclass(frozen=True, slots=True)
class _Raw(GitOutput):
    raw: bytes = b""


def _run_git(cwd: Path, args: Sequence[str], env: dict[str, str] | None, stdin: bytes | None, *, text: bool = True) -> _Raw:
    """``git <args>`` in ``cwd``: its status, its output decoded as git's paths are
    (UTF-8, undecodable bytes kept), each without its one trailing newline; raw bytes too
    when ``text`` is false."""
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=_environ(env), input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True, check=False,
        )
    except OSError as exc:  # git missing, or cwd gone
        raise GitError(f"cannot run git {args[0] if args else ''}: {exc}.",
                       hint="Install git, or check that the folder still exists.") from exc
    err = proc.stderr.decode("utf-8", "surrogateescape").removesuffix("\n")
    if not text:
        return _Raw(proc.returncode, "", err, proc.stdout)
    return _Raw(proc.returncode, proc.stdout.decode("utf-8", "surrogateescape").removesuffix("\n"), err)


def remote_default_branch(repo: GitRepo, name: str, url: str) -> str | None:
    """The branch the remote's HEAD names, even in an empty repository (``git ls-remote``
    shows nothing there; a bare repository on this machine is asked directly)."""
    out = repo.run("ls-remote", "--symref", name, "HEAD", check=False)
    for line in out.out.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line[len("ref: refs/heads/") : -len("\tHEAD")]
    local = Path(url.removeprefix("file://")).expanduser()
    if "://" not in url.removeprefix("file://") and local.is_dir():
        head = subprocess.run(
            ["git", "--git-dir", str(local), "symbolic-ref", "--quiet", "HEAD"],
            capture_output=True, text=True, check=False,
        )
        if head.returncode == 0 and head.stdout.startswith("refs/heads/"):
            return head.stdout.strip().removeprefix("refs/heads/")
    return None


def unrelated_branches(repo: GitRepo, remote: str) -> list[str]:
    """Branches of ``remote`` that share no commit with HEAD (all of them when HEAD has
    no commit yet), fetched first. Empty when the remote is empty or shares history."""
    repo.run("fetch", "--quiet", "--no-tags", remote, f"+refs/heads/*:refs/remotes/{remote}/*", check=False)
    listed = repo.run("for-each-ref", "--format=%(refname)", f"refs/remotes/{remote}/").out.split()
    branches = [ref.removeprefix(f"refs/remotes/{remote}/") for ref in listed if not ref.endswith("/HEAD")]
    head = repo.rev("HEAD")
    if head is None:
        return branches
    related = [b for b in branches if repo.merge_base(head, f"refs/remotes/{remote}/{b}") is not None]
    return [] if related else branches


def git_path(root: Path, name: str) -> Path:
    """Where git keeps ``name`` for this clone (honours ``core.hooksPath`` for hooks)."""
    if not is_work_tree(root):
        raise GitError(f"{root} is not a git repository.", hint="Run `engram init` or `git init` first.")
    out = Path(_git(root, "rev-parse", "--git-path", name).stdout.strip())
    return out if out.is_absolute() else (root / out).resolve()


def top_level(root: Path) -> Path:
    """The top folder of the work tree that holds ``root``."""
    return Path(_git(root, "rev-parse", "--show-toplevel").stdout.strip()).resolve()
