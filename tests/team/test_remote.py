"""A team's first remote: the right branch whatever the bare repository's HEAD says, the
teammate's clone working at once, and no second, unrelated history."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import GitError, InvalidInput
from engram.team import remote as wire
from engram.team.gitstore import GitRepo, merge_driver_status
from engram.vault import Vault
from tests.git_helpers import commit_all


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def bare(tmp: Path, head: str = "master") -> Path:
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", f"--initial-branch={head}", str(origin))
    return origin


def test_remote_add_pushes_to_the_branch_the_bare_head_names(tmp_path: Path) -> None:
    origin = bare(tmp_path, "master")
    with Vault.init(tmp_path / "a") as a:
        a.create("First thing we learned", "x")
        shared = a.add_remote(str(origin))
        assert (shared.branch, shared.pushed) == ("master", True)
        assert shared.teammate == (f"git clone {origin} origin", "cd origin", "engram sync")
        assert git(origin, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/master"]
        assert git(a.root, "config", "branch.main.merge").strip() == "refs/heads/master"
        assert a.sync().lines() == ["pushed to origin/master"]  # tracks it: no "(new branch)"
    git(tmp_path, "clone", "-q", str(origin), "b")
    assert (tmp_path / "b" / "first-thing-we-learned.md").is_file()  # a plain clone checks the vault out


def test_a_fresh_clone_registers_the_merge_driver_on_first_use(tmp_path: Path) -> None:
    origin = bare(tmp_path, "main")
    with Vault.init(tmp_path / "a") as a:
        a.add_remote(str(origin))
    git(tmp_path, "clone", "-q", str(origin), "b")
    clone = tmp_path / "b"
    assert not merge_driver_status(clone).installed
    out = CliRunner().invoke(cli, ["--vault", str(clone), "list"])
    assert out.exit_code == 0 and "registered engram's merge driver in this clone" in out.stderr
    assert merge_driver_status(clone).current
    again = CliRunner().invoke(cli, ["--vault", str(clone), "list"])
    assert "registered" not in again.stderr


def test_sync_refuses_a_second_unrelated_history(tmp_path: Path) -> None:
    """The issue's story: HEAD says master, the first machine pushed main by hand, the
    second clone is empty and `engram init` + `engram sync` would start another vault."""
    origin = bare(tmp_path, "master")
    with Vault.init(tmp_path / "a") as a:
        a.create("Team knowledge", "x")
        git(a.root, "remote", "add", "origin", str(origin))
        assert a.sync().pushed  # to origin/main: the branch the vault is on
    git(tmp_path, "clone", "-q", str(origin), "b")
    with Vault.init(tmp_path / "b") as b:
        b.create("Second machine", "y")
        before = git(b.root, "status", "--porcelain")
        with pytest.raises(GitError, match="already holds a history on 'main'") as refused:
            b.sync()
        assert "git switch main" in (refused.value.hint or "")
        assert git(b.root, "status", "--porcelain") == before  # nothing committed, nothing pushed
    assert git(origin, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]


def test_remote_add_refuses_a_remote_that_holds_another_vault(tmp_path: Path) -> None:
    origin = bare(tmp_path, "main")
    with Vault.init(tmp_path / "a") as a:
        a.create("The team's", "x")
        a.add_remote(str(origin))
    with Vault.init(tmp_path / "c") as c:
        with pytest.raises(GitError, match="already holds history this vault does not share") as refused:
            c.add_remote(str(origin))
        assert f"git clone {origin}" in (refused.value.hint or "")
        with pytest.raises(InvalidInput, match="already has a remote 'origin'"):
            c.add_remote(str(tmp_path / "elsewhere.git"))


def test_cli_init_with_remote_prints_the_teammate_commands(tmp_path: Path) -> None:
    origin = bare(tmp_path, "master")
    out = CliRunner().invoke(cli, ["init", str(tmp_path / "v"), "--remote", str(origin)])
    assert out.exit_code == 0, out.output
    assert f"pushed to origin/master ({origin})" in out.stdout
    assert out.stdout.rstrip().endswith(f"a teammate joins with:\n  git clone {origin} origin\n  cd origin\n  engram sync")


def _no_repository(remote: str, path: Path, verb: str = "fetch from") -> str:
    return (
        f"cannot {verb} {remote}: '{path}' does not appear to be a git repository — {remote}'s path does not exist"
        f" or is not a git repository; fix it with `git remote set-url {remote} URL` (or `git remote remove"
        f" {remote}`, then `engram remote add URL`)"
    )


def test_sync_to_a_remote_path_that_does_not_exist_says_what_is_wrong_and_fails(tmp_path: Path) -> None:
    """Issue 26: git's last line was quoted ("cannot fetch from origin: and the repository
    exists."); its first line says what is wrong. And a URL that leads to no repository is
    not "offline": waiting cannot fix it, so sync fails (exit 8) and keeps the commit,
    where it used to exit 0 on every run as if the clone were syncing."""
    gone, plain = tmp_path / "nonexistent" / "path.git", tmp_path / "plain"
    plain.mkdir()
    with Vault.init(tmp_path / "a") as a:
        a.create("Kept for later", "x")
        git(a.root, "remote", "add", "origin", str(gone))
        with pytest.raises(GitError) as raised:
            a.sync()
        assert str(raised.value).startswith(_no_repository("origin", gone))
        assert git(a.root, "status", "--porcelain") == ""  # the local change is committed, kept
        head = git(a.root, "rev-parse", "HEAD")
        out = CliRunner().invoke(cli, ["--vault", str(a.root), "sync"])
        assert out.exit_code == 8, out.output
        assert _no_repository("origin", gone) in out.output and "Your commits are kept" in out.output
        assert "Traceback" not in out.output and git(a.root, "rev-parse", "HEAD") == head
        git(a.root, "remote", "set-url", "origin", str(plain))  # a folder, but not a repository
        with pytest.raises(GitError, match="is not a git repository"):
            a.sync()


def test_a_push_to_a_missing_remote_path_says_the_same(tmp_path: Path) -> None:
    gone = tmp_path / "nonexistent" / "path.git"
    with Vault.init(tmp_path / "a") as a:
        a.create("Kept for later", "x")
        commit_all(a, "something to push")
        git(a.root, "remote", "add", "origin", str(gone))
        with GitRepo(a.root) as repo:
            answer = wire.push(repo, "origin", "main")
    assert (answer.kind, answer.detail) == ("misconfigured", _no_repository("origin", gone, "push to"))


_CLOSING = "fatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n"


@pytest.mark.parametrize(("said", "detail"), [
    # GitHub over https and over ssh: no repository at that URL
    ("remote: Repository not found.\nfatal: repository 'https://github.com/acme/nope.git/' not found\n",
     "cannot fetch from origin: repository 'https://github.com/acme/nope.git/' not found — origin's path does not"
     " exist or is not a git repository; fix it with `git remote set-url origin URL` (or `git remote remove"
     " origin`, then `engram remote add URL`)"),
    ("ERROR: Repository not found.\n" + _CLOSING,
     "cannot fetch from origin: Repository not found — origin's path does not exist or is not a git repository;"
     " fix it with `git remote set-url origin URL` (or `git remote remove origin`, then `engram remote add URL`)"),
    # no access
    ("git@github.com: Permission denied (publickey).\n" + _CLOSING,
     "cannot fetch from origin: git@github.com: Permission denied (publickey) — access was refused; check the key"
     " or token git uses for origin, and its URL (`git remote -v`)"),
    ("fatal: could not read Username for 'https://github.com': terminal prompts disabled\n",
     "cannot fetch from origin: could not read Username for 'https://github.com': terminal prompts disabled"
     " — access was refused; check the key or token git uses for origin, and its URL (`git remote -v`)"),
    # no network: git's own line, and nothing to fix (the next sync tries again)
    ("ssh: Could not resolve hostname nohost.invalid: Name or service not known\n" + _CLOSING,
     "cannot fetch from origin: ssh: Could not resolve hostname nohost.invalid: Name or service not known"),
    ("fatal: unable to access 'https://nohost.invalid/x.git/': Could not resolve host: nohost.invalid\n",
     "cannot fetch from origin: unable to access 'https://nohost.invalid/x.git/': Could not resolve host: nohost.invalid"),
    ("", "cannot fetch from origin: no answer"),
])
def test_git_answers_are_quoted_by_the_line_that_says_what_is_wrong(said: str, detail: str) -> None:
    assert wire.explain("origin", "fetch from", said) == detail
