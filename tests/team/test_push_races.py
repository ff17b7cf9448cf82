"""Concurrent pushes are races sync wins by retrying; a remote's rule is not (issue 15.1).

Real git and a bare origin; the many-processes version is in test_sync_under_load.py."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from engram.errors import GitError
from engram.team import remote
from engram.vault import Vault
from tests.git_helpers import bare_origin, clean, first_machine, git


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return bare_origin(tmp_path)


def test_a_remote_ref_lock_held_by_another_push_is_a_race_and_is_retried(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    lock = origin / "refs" / "heads" / "main.lock"
    lock.write_text("another push is updating main\n")
    # The other push lets go of the lock once this one has met it (the remote's second
    # pre-receive), however long this sync takes to get there on a busy machine.
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho x >> '{tmp_path}/pushes'\n"
                    f"[ $(wc -l < '{tmp_path}/pushes') -ge 2 ] && rm -f '{lock}'\nexit 0\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    alice.create("Pushed through the race", "x\n")
    report = alice.sync()
    assert report.pushed and report.attempts >= 2
    assert report.retries and all("failed to update ref" in why for why in report.retries)
    assert "retried" in " ".join(report.lines())
    assert git(origin, "rev-parse", "main").stdout == git(alice.root, "rev-parse", "HEAD").stdout


def test_a_hook_refusal_is_reported_with_the_remotes_words_and_not_retried(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'GH006: Protected branch update failed for refs/heads/main.' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    alice.create("Refused", "x\n")
    before = git(origin, "rev-parse", "main").stdout
    started = time.monotonic()
    with pytest.raises(GitError) as err:
        alice.sync()
    message = str(err.value)
    assert "refused the push to main: pre-receive hook declined" in message
    assert "The remote said: GH006: Protected branch update failed for refs/heads/main." in message
    assert "not a race" in message and "commits are kept" in message
    assert time.monotonic() - started < 30  # no backoff rounds
    assert git(origin, "rev-parse", "main").stdout == before
    assert git(alice.root, "rev-list", "--count", "origin/main..HEAD").stdout.strip() == "1"
    assert clean(alice.root)


def test_a_remote_that_keeps_its_ref_locked_gives_up_within_the_bounds(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    (origin / "refs" / "heads" / "main.lock").write_text("stuck\n")
    alice.create("Never lands", "x\n")
    with pytest.raises(GitError, match="kept answering that another writer was updating main") as err:
        alice.sync(max_attempts=3)
    assert "gave up after 3 attempt(s)" in str(err.value) and "Your commits are kept" in str(err.value)


def test_backoff_is_jittered_and_bounded() -> None:
    for attempt in range(1, 15):
        waits = {remote.backoff(attempt) for _ in range(50)}
        assert len(waits) > 1  # jittered: clones that lost together come back apart
        assert all(0.0 <= w <= min(2.0, 0.1 * 2 ** (attempt - 1)) for w in waits)


def _protect(origin: Path, says: str, *, allowed: str = "refs/heads/review/*") -> None:
    """An ``update`` hook that refuses direct pushes to main, as a protected branch does,
    and lets ``allowed`` refs through."""
    hook = origin / "hooks" / "update"
    hook.write_text(
        "#!/bin/sh\n"
        f'case "$1" in {allowed}) exit 0;; esac\n'
        f"echo '{says}' >&2\nexit 1\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def test_a_protected_branch_gets_the_commits_on_a_review_branch_instead(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    _protect(origin, "main is protected: open a pull request")
    before = git(origin, "rev-parse", "main").stdout
    alice.create("For review", "x\n")
    report = alice.sync()
    assert not report.pushed and report.review == "refs/heads/review/alice/main"
    assert git(origin, "rev-parse", "main").stdout == before
    assert git(origin, "rev-parse", "review/alice/main").stdout == git(alice.root, "rev-parse", "HEAD").stdout
    said = " ".join(report.lines())
    assert "origin refused your commits on main (hook declined)" in said
    assert "pushed them for review to origin/review/alice/main" in said
    # Later work updates the same review branch (forced: only this clone writes it).
    alice.create("More for review", "y\n")
    assert alice.sync().review == "refs/heads/review/alice/main"
    assert git(origin, "rev-parse", "review/alice/main").stdout == git(alice.root, "rev-parse", "HEAD").stdout
    # A maintainer merges it; the next sync finds main holding everything and pushes nothing.
    (origin / "hooks" / "update").unlink()
    git(origin, "update-ref", "refs/heads/main", git(origin, "rev-parse", "review/alice/main").stdout.strip())
    _protect(origin, "main is protected: open a pull request")
    report = alice.sync()
    assert report.pushed and report.review is None
    assert git(alice.root, "rev-parse", "HEAD").stdout == git(origin, "rev-parse", "main").stdout
    assert clean(alice.root)


def test_a_gerrit_remote_gets_the_commits_on_refs_for_the_branch(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    _protect(origin, "prohibited by Gerrit: ref update access denied", allowed="refs/for/*")
    alice.create("For Gerrit", "x\n")
    report = alice.sync()
    assert report.review == "refs/for/main" and not report.pushed
    assert git(origin, "rev-parse", "refs/for/main").stdout == git(alice.root, "rev-parse", "HEAD").stdout
    assert "sent them to Gerrit for review (refs/for/main)" in " ".join(report.lines())


def test_on_refused_fail_stops_with_the_remotes_words_and_pushes_nowhere(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    settings = alice.root / "engram.yaml"
    settings.write_text(settings.read_text() + "sync:\n  onRefused: fail\n")
    alice = Vault.open(alice.root, actor="alice")
    _protect(origin, "main is protected: open a pull request")
    alice.create("Refused", "x\n")
    with pytest.raises(GitError, match="refused the push to main: hook declined"):
        alice.sync()
    assert git(origin, "for-each-ref", "refs/heads/review").stdout == ""


def test_a_review_push_refused_too_says_both(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    _protect(origin, "no pushes at all", allowed="refs/nothing/*")
    alice.create("Refused twice", "x\n")
    with pytest.raises(GitError) as err:
        alice.sync()
    assert "refused the push to main: hook declined" in str(err.value)
    assert "The push for review to refs/heads/review/alice/main failed too: hook declined" in str(err.value)
    assert git(alice.root, "rev-list", "--count", "origin/main..HEAD").stdout.strip() == "1"


def test_an_unknown_on_refused_setting_is_refused_before_anything_moves(tmp_path: Path, origin: Path) -> None:
    from engram.errors import InvalidInput

    alice = first_machine(tmp_path, origin, "alice")
    settings = alice.root / "engram.yaml"
    settings.write_text(settings.read_text() + "sync:\n  onRefused: maybe\n")
    alice = Vault.open(alice.root, actor="alice")
    alice.create("Not yet", "x\n")
    head = git(alice.root, "rev-parse", "HEAD").stdout
    with pytest.raises(InvalidInput, match=r"sync\.onRefused is 'maybe'") as err:
        alice.sync()
    assert "review" in (err.value.hint or "") and git(alice.root, "rev-parse", "HEAD").stdout == head
