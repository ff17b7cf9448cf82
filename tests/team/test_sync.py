"""``engram sync`` against real git: a bare origin and two or three clones in tmp folders."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from engram.errors import GitError
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, git, tracked


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return bare_origin(tmp_path)


@pytest.fixture
def pair(tmp_path: Path, origin: Path) -> tuple[Vault, Vault]:
    alice = first_machine(tmp_path, origin, "alice")
    bob = clone_machine(tmp_path, origin, "bob")
    return alice, bob


def meta_of(vault: Vault, ref: str) -> dict[str, object]:
    item = vault.get(ref)
    assert item.path is not None
    return codec.parse_engram(vault.abspath(item.path).read_bytes())[0]


def converge(*vaults: Vault) -> None:
    """Sync each machine in turn, then once more so everyone has the last merge."""
    for vault in (*vaults, *vaults):
        vault.sync()
    first = tracked(vaults[0].root)
    for vault in vaults[1:]:
        assert tracked(vault.root) == first
    for vault in vaults:
        assert clean(vault.root)


def test_without_a_remote_sync_commits_locally(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "solo")
    vault.create("Local only", "body")
    report = vault.sync()
    assert report.remote is None and report.committed > 0 and not report.pushed
    assert clean(vault.root)
    assert "no remote configured" in " ".join(report.lines())
    assert vault.sync().committed == 0  # nothing new


def test_the_first_push_creates_the_upstream_branch(tmp_path: Path, origin: Path) -> None:
    vault = Vault.init(tmp_path / "alice")
    git(vault.root, "remote", "add", "origin", str(origin))
    vault.create("First", "body")
    report = vault.sync()
    assert report.pushed and report.created_upstream
    assert git(origin, "rev-parse", "main").stdout.strip() == git(vault.root, "rev-parse", "HEAD").stdout.strip()
    assert git(vault.root, "config", "branch.main.remote").stdout.strip() == "origin"


def test_offline_sync_reports_and_keeps_the_local_commit(tmp_path: Path, pair: tuple[Vault, Vault]) -> None:
    """No answer from the remote (here: a port bound by nobody who listens, so every
    connection is refused, as on a plane) is "offline": the commit waits for the next sync.
    A URL that answers "no such repository" is not offline (tests/team/test_remote.py)."""
    alice, _ = pair
    with socket.socket() as closed_port:
        closed_port.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed_port.getsockname()[1]
        git(alice.root, "remote", "set-url", "origin", f"http://127.0.0.1:{port}/team.git")
        alice.create("Written on a plane", "body")
        report = alice.sync()
    assert report.offline is not None and "cannot fetch from origin" in report.offline
    assert report.committed > 0 and not report.pushed
    assert clean(alice.root)
    assert git(alice.root, "rev-list", "--count", "origin/main..HEAD").stdout.strip() == "1"


def test_divergent_edits_converge_with_every_field_rule(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create(
        "Copying a frozen dataclass", "intro\nmiddle\nend\n", domain=["engineering", "python"],
        tags=["gotcha", "python"], importance=0.5,
    ).item
    alice.sync()
    bob.sync()
    alice.update(item.id, {"tags": ["python", "perf"], "importance": 0.7, "retrieval_count": 3,
                           "content": "intro changed\nmiddle\nend\n"})
    bob.update(item.id, {"tags": ["gotcha", "python", "sql"], "importance": 0.6, "retrieval_count": 2,
                         "content": "intro\nmiddle\nend changed\n", "status": "archived"})
    converge(alice, bob)
    meta = meta_of(bob, item.id)
    assert meta["tags"] == ["python", "perf", "sql"]
    assert meta["importance"] == pytest.approx(0.8)
    assert meta["retrievalCount"] == 5
    assert meta["status"] == "archived"
    assert bob.get(item.id).content == "intro changed\nmiddle\nend changed\n"
    assert "mergeConflicts" not in meta
    records = [json.loads(x) for x in (bob.state.state_dir / "merges.jsonl").read_text().splitlines()]
    assert any(r["via"] == "sync" and r["strategies"].get("retrievalCount") == "add" for r in records)


def test_items_created_on_two_machines_with_the_same_title_both_survive(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    a = alice.create("Deploy checklist", "alice's steps", domain=["ops"]).item
    b = bob.create("Deploy checklist", "bob's steps", domain=["ops"]).item
    assert a.path == b.path  # the same natural path on both machines
    converge(alice, bob)
    for vault in (alice, bob):
        got_a, got_b = vault.get(a.id), vault.get(b.id)
        assert (got_a.content, got_b.content) == ("alice's steps\n", "bob's steps\n")
        assert got_a.path != got_b.path
        assert {got_a.path, got_b.path} == {a.path, a.path[:-3] + f"-{max(a.id, b.id)[-6:].lower()}.md"}


def test_an_item_deleted_on_one_side_and_edited_on_the_other_survives_flagged(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create("Disputed", "original").item
    alice.sync()
    bob.sync()
    alice.delete(item.id)
    bob.update(item.id, {"content": "improved"})
    converge(alice, bob)
    for vault in (alice, bob):
        got = vault.get(item.id)
        assert got.content == "improved\n"
        assert got.merge_conflicts and "deleted on one side" in got.merge_conflicts[0]


def test_a_rename_on_one_side_and_an_edit_on_the_other_merge_at_the_new_path(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create("Old title", "line one\nline two\n", domain=["notes"]).item
    alice.sync()
    bob.sync()
    renamed = alice.update(item.id, {"title": "New title"})
    bob.update(item.id, {"content": "line one\nline two\nline three\n"})
    converge(alice, bob)
    got = bob.get(item.id)
    assert got.path == renamed.path != item.path
    assert (got.title, got.content) == ("New title", "line one\nline two\nline three\n")
    assert not bob.abspath(item.path or "").exists()


def test_concurrent_same_line_edits_are_kept_in_a_callout_and_flagged(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create("Answer", "the answer is 41\n").item
    alice.sync()
    bob.sync()
    alice.update(item.id, {"content": "the answer is 42\n"})
    bob.update(item.id, {"content": "the answer is 43\n"})
    alice.sync()
    report = bob.sync()
    assert report.flagged == [item.path]
    converge(alice, bob)
    got = alice.get(item.id)
    assert "> the answer is 42" in got.content and "> the answer is 43" in got.content
    assert got.merge_conflicts


def test_concurrent_evidence_on_one_edge_merges_as_a_set(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    x = alice.create("X", "x").item
    y = alice.create("Y", "y").item
    alice.link(x.id, "extends", y.id, evidence="shared base")
    alice.sync()
    bob.sync()
    alice.link(x.id, "extends", y.id, evidence="alice saw it")
    bob.link(x.id, "extends", y.id, evidence="bob saw it")
    converge(alice, bob)
    (edge,) = bob.synapses(x.id)
    assert {e.description for e in edge.evidence} == {"shared base", "alice saw it", "bob saw it"}


def test_derived_links_are_regenerated_after_the_merge(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    x = alice.create("Source item", "x").item
    y = alice.create("Target item", "y").item
    alice.sync()
    bob.sync()
    alice.link(x.id, "causes", y.id)
    bob.update(y.id, {"title": "Renamed target"})
    converge(alice, bob)
    source = alice.get(x.id)
    assert source.path is not None
    text = alice.abspath(source.path).read_text()
    assert "Renamed target · causes" in text and "Target item ·" not in text


def test_three_machines_converge(tmp_path: Path, origin: Path) -> None:
    machines = [first_machine(tmp_path, origin, "m0")]
    item = machines[0].create("Shared", "base\n").item
    machines[0].sync()
    machines += [clone_machine(tmp_path, origin, f"m{i}") for i in (1, 2)]
    for i, vault in enumerate(machines):
        vault.update(item.id, {"tags": [f"t{i}"], "retrieval_count": i + 1})
    converge(*machines)
    meta = meta_of(machines[2], item.id)
    assert meta["tags"] == ["t0", "t1", "t2"]
    assert meta["retrievalCount"] == 6


def test_a_push_rejected_because_a_peer_pushed_first_is_retried(pair: tuple[Vault, Vault], tmp_path: Path) -> None:
    alice, bob = pair
    item = alice.create("Raced", "base\n").item
    alice.sync()
    bob.sync()
    bob.update(item.id, {"tags": ["from-bob"]})
    bob.sync()  # something new for alice to fetch
    bob.update(item.id, {"retrieval_count": 7})
    git(bob.root, "commit", "--quiet", "--all", "-m", "bob's second edit")
    # Right after alice's fetch lands, bob pushes again: alice's first push must lose.
    hook = alice.root / ".git" / "hooks" / "reference-transaction"
    marker = tmp_path / "raced"
    hook.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = committed ] && [ ! -e "{marker}" ] && grep -q refs/remotes/origin/main && {{\n'
        f'  touch "{marker}"; unset $(git rev-parse --local-env-vars); git -C "{bob.root}" push --quiet origin main\n'
        "}\nexit 0\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    alice.update(item.id, {"importance": 0.9})
    report = alice.sync()
    assert marker.exists()
    assert report.pushed and report.attempts == 2
    meta = meta_of(alice, item.id)
    assert (meta["tags"], meta["importance"], meta["retrievalCount"]) == (["from-bob"], 0.9, 7)


def test_a_file_that_needs_a_person_stops_sync_before_anything_changes(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    (alice.root / "NOTES.txt").write_text("shared\n")
    alice.sync()
    bob.sync()
    (alice.root / "NOTES.txt").write_text("shared\nalice\n")
    (bob.root / "NOTES.txt").write_text("shared\nbob\n")
    alice.sync()
    before = git(bob.root, "rev-parse", "HEAD").stdout
    with pytest.raises(GitError) as err:
        bob.sync()
    assert "NOTES.txt" in str(err.value) and "Nothing was changed" in str(err.value)
    assert clean(bob.root)
    head = git(bob.root, "rev-parse", "HEAD").stdout
    assert git(bob.root, "log", "--format=%s", "-1").stdout.startswith("engram sync:")
    assert head != before  # bob's edit was committed locally, and kept
    assert (bob.root / "NOTES.txt").read_text() == "shared\nbob\n"


def test_sync_refuses_to_start_in_the_middle_of_a_merge(pair: tuple[Vault, Vault]) -> None:
    alice, _ = pair
    (alice.root / ".git" / "MERGE_HEAD").write_text(git(alice.root, "rev-parse", "HEAD").stdout)
    with pytest.raises(GitError, match="in the middle of a merge"):
        alice.sync()


def test_sync_flushes_usage_before_committing(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "solo")
    item = vault.create("Searched for", "pg_repack rebuilds tables online").item
    vault.search("pg_repack rebuilds")  # journaled, not yet in the file
    assert vault.get(item.id).retrieval_count == 0
    vault.sync()
    assert vault.get(item.id).retrieval_count == 1
    assert git(vault.root, "status", "--porcelain").stdout == ""  # the fold was committed


def test_sync_works_for_a_vault_in_a_subfolder_of_the_repository(tmp_path: Path, origin: Path) -> None:
    repo = tmp_path / "monorepo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "remote", "add", "origin", str(origin))
    vault = Vault.init(repo / "memory", actor="alice")
    (repo / "unrelated.txt").write_text("not engram's business\n")
    vault.create("In a subfolder", "body")
    report = vault.sync()
    assert report.pushed
    files = git(repo, "ls-files").stdout.split()
    assert "unrelated.txt" not in files and any(f.startswith("memory/") and f.endswith(".md") for f in files)
    assert os.path.exists(repo / "unrelated.txt")


def test_an_item_renamed_differently_on_both_sides_lands_at_the_winning_title(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create("Original", "body\n", domain=["notes"]).item
    alice.sync()
    bob.sync()
    alice.update(item.id, {"title": "Alice's title"})
    later = bob.update(item.id, {"title": "Bob's title"})  # the later edit wins the tie
    converge(alice, bob)
    got = alice.get(item.id)
    assert (got.title, got.path) == ("Bob's title", later.path)
    assert got.merge_conflicts and any("Alice's title" in note for note in got.merge_conflicts)
    assert len([p for p in tracked(alice.root) if p.startswith("notes/")]) == 1


def test_search_sees_pulled_changes_right_after_sync(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create("Connection pool size", "Use a pool of 20 per worker.").item
    alice.sync()
    bob.sync()
    assert [h.id for h in bob.search("pool per worker").hits][:1] == [item.id]
    alice.update(item.id, {"content": "Use a pool of 12 per worker; pgbouncer does the rest."})
    other = alice.create("Statement timeout", "Set statement_timeout to 30s for web requests.").item
    alice.sync()
    bob.sync()  # fast-forward: only the changed files are re-read
    assert [h.id for h in bob.search("pgbouncer").hits] == [item.id]
    assert bob.search("statement_timeout").hits[0].id == other.id
    assert "20 per worker" not in bob.get(item.id).content
