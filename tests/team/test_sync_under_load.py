"""Sync under a team's load (issue 15) and killed at any instant (issue 16.2).

The scenarios live in ``benchmarks/syncload.py``; here they run small enough for CI
(a few seeds, small vaults), and ``python -m benchmarks run merge`` runs them at size.
Real git, real processes, real ``kill -9``.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from pathlib import Path

import pytest

from benchmarks import syncload
from engram.vault import Vault
from mergedriver.merge import MergeResult, merge_file
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, git, tracked


@pytest.mark.slow
@pytest.mark.parametrize("step", syncload.STEPS)
def test_sync_killed_at_each_step_is_finished_by_the_next_one(tmp_path: Path, step: str) -> None:
    outcome = syncload.kill_during(tmp_path, 12, step, random.Random(step))
    assert outcome.failures == []
    assert outcome.landed != "finished", "the kill never landed"
    if outcome.landed == "checkout" and outcome.recovered:
        assert any("finished the interrupted update" in note for note in outcome.recovered)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 15, 26, 31])
def test_random_edits_and_syncs_converge_clean(tmp_path: Path, seed: int) -> None:
    """The randomized team of issue 26 at CI size: 3 clones, each set up a documented way,
    4 rounds of editor and engram edits and of engram sync / plain git pull (some at
    once); the invariants hold after every round and the clones end byte-identical.
    ``python -m benchmarks.syncload --seed N --clones 3 --rounds 4`` replays a seed; the
    harness runs 200 (``python -m benchmarks.syncload --seeds 200``)."""
    result = syncload.random_convergence(tmp_path, seed, clones=3, rounds=4, ops=4)
    assert result.failures == [], "\n".join([*result.failures, "what happened:", *result.log])
    # The guards against a vacuous run count what was written, which timing moves: a
    # file held back mid-run turns later edits into other ops (seed 1 wrote 21 lines
    # here and 18 on a loaded CI machine), so the floor is well below any seed's count.
    assert result.converged and result.lines >= 10 and sum(result.ops.values()) >= 40
    assert len(result.syncs) >= 2


@pytest.mark.slow
def test_the_fuzz_sees_a_merge_that_drops_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzz's oracle is not vacuous: with an in-process merge that drops one line of
    every item it merges, the fuzz reports lost lines."""

    def lossy(base: bytes | None, ours: bytes, theirs: bytes, path: str = "") -> MergeResult:
        result = merge_file(base, ours, theirs, path)
        if not path.endswith(".md"):
            return result
        return result._replace(data=re.sub(rb"(?m)^tok\d+[a-z]?xc\d+\n", b"", result.data, count=1))

    monkeypatch.setattr("engram.team.treemerge.merge_file", lossy)
    result = syncload.random_convergence(tmp_path, 2, clones=3, rounds=3, ops=4)
    assert result.lines_lost > 0, "\n".join([*result.failures, *result.log])
    assert any(f.startswith("[lines-lost]") for f in result.failures)


@pytest.mark.slow
def test_clones_syncing_in_loops_at_the_same_time_never_fail(tmp_path: Path) -> None:
    result = syncload.concurrent_loops(tmp_path, clones=3, seconds=6.0)
    assert result["failures"] == []
    assert result["failed"] == 0 and result["syncs"] >= 3 and result["converged"]


def half_checkout(bob: Vault, old: str, new: str) -> dict[str, str]:
    """What a kill in the middle of git's work-tree update leaves: some files new, one
    deleted before its new version was written, one cut to 0 bytes, one half written, a
    stale index.lock — and the journal sync wrote before it started."""
    changed = git(bob.root, "diff", "--name-only", old, new).stdout.split()
    fates: dict[str, str] = {}
    for n, path in enumerate(sorted(changed)):
        target = bob.root / path
        new_bytes = git(bob.root, "show", f"{new}:{path}").stdout.encode()
        fate = ("new", "missing", "empty", "half", "old")[n % 5]
        if fate == "new":
            target.write_bytes(new_bytes)
        elif fate == "missing":
            target.unlink()
        elif fate == "empty":
            target.write_bytes(b"")
        elif fate == "half":
            target.write_bytes(new_bytes[: len(new_bytes) // 2])
        fates[path] = fate
    (bob.root / ".git" / "index.lock").write_bytes(b"")
    journal = {"step": "checkout", "old": old, "new": new, "pid": 1, "host": "x", "started": time.time() - 5,
               "at": time.time() - 1}
    (bob.state.state_dir / "sync-journal.json").write_text(json.dumps(journal))
    return fates


def test_a_half_updated_work_tree_is_restored_never_committed(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    items = [alice.create(f"Item {n}", f"line {n}\n", dedupe=False).item for n in range(10)]
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    for item in items:
        alice.update(item.id, {"content": f"line {item.title[5:]}\nedited by alice\n"})
    alice.sync()
    git(bob.root, "fetch", "--quiet", "origin")
    old = git(bob.root, "rev-parse", "HEAD").stdout.strip()
    new = git(bob.root, "rev-parse", "origin/main").stdout.strip()
    fates = half_checkout(bob, old, new)
    assert {"missing", "empty", "half"} <= set(fates.values())
    report = bob.sync()
    assert any("finished the interrupted update" in note for note in report.recovered)
    assert any("kept" in note and "recovered" in note for note in report.recovered)  # the torn copies
    assert git(bob.root, "rev-parse", "HEAD").stdout.strip() == new  # nothing committed on top
    assert report.committed == 0 and not (bob.root / ".git" / "index.lock").exists()
    assert clean(bob.root) and tracked(bob.root) == tracked(alice.root)
    for item in items:
        assert bob.get(item.id).content.endswith("edited by alice\n")
    assert bob.doctor().problems == ()
    assert not (bob.state.state_dir / "sync-journal.json").exists()


def test_a_stale_index_lock_of_someone_elses_git_is_left_alone(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    lock = alice.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    past = time.time() - 3600
    os.utime(lock, (past, past))  # a person's git, killed an hour before any sync
    (alice.state.state_dir / "sync-journal.json").write_text(json.dumps({"step": "commit", "started": time.time()}))
    alice.create("Waits for the person", "x\n")
    with pytest.raises(Exception, match=r"index\.lock"):
        alice.sync()
    assert lock.exists()
