"""Concurrent pushes are races sync wins by retrying; a remote's rule is not (issue 15.1).

Real git and a bare origin; the many-processes version is in test_sync_under_load.py."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path

import pytest

from engram.errors import GitError
from engram.team import remote
from tests.git_helpers import bare_origin, clean, first_machine, git


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return bare_origin(tmp_path)


def test_a_remote_ref_lock_held_by_another_push_is_a_race_and_is_retried(tmp_path: Path, origin: Path) -> None:
    alice = first_machine(tmp_path, origin, "alice")
    lock = origin / "refs" / "heads" / "main.lock"
    lock.write_text("another push is updating main\n")
    threading.Timer(1.0, lock.unlink).start()
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
