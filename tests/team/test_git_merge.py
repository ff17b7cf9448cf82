"""Plain git through the merge driver: ``git pull``, ``git pull --rebase``, ``git merge``.

Real clones of a bare origin, with the driver registered by ``Vault.init`` exactly as a
user's ``engram init`` does; git starts ``python -m mergedriver`` for each file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engram.team import gitstore
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import (
    bare_origin,
    clean,
    clone_machine,
    commit_all,
    first_machine,
    git,
    tracked,
)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp_path)
    return first_machine(tmp_path, origin, "alice"), clone_machine(tmp_path, origin, "bob")


def shared_item(alice: Vault, bob: Vault, content: str = "intro\nmiddle\nend\n") -> str:
    item = alice.create("Copying a frozen dataclass", content, domain=["eng"], tags=["gotcha", "python"]).item
    alice.sync()
    bob.sync()
    return item.id


def divergent_edits(alice: Vault, bob: Vault, item_id: str) -> None:
    alice.update(item_id, {"tags": ["python", "perf"], "importance": 0.7, "retrieval_count": 3,
                           "content": "intro changed\nmiddle\nend\n"})
    bob.update(item_id, {"tags": ["gotcha", "python", "sql"], "importance": 0.6, "retrieval_count": 2,
                         "content": "intro\nmiddle\nend changed\n", "status": "archived"})
    commit_all(alice, "alice edits")
    commit_all(bob, "bob edits")


def item_bytes(vault: Vault, item_id: str) -> bytes:
    vault.refresh()
    path = vault.get(item_id).path
    assert path is not None
    return vault.abspath(path).read_bytes()


@pytest.mark.parametrize("first", ["alice", "bob"])
def test_git_pull_merges_every_field_through_the_driver_and_clones_converge(
    pair: tuple[Vault, Vault], first: str
) -> None:
    alice, bob = pair
    item_id = shared_item(alice, bob)
    divergent_edits(alice, bob, item_id)
    one, two = (alice, bob) if first == "alice" else (bob, alice)
    git(one.root, "push", "--quiet")
    git(two.root, "pull", "--quiet", "--no-rebase", "--no-edit")
    git(two.root, "push", "--quiet")
    git(one.root, "pull", "--quiet", "--no-rebase")
    assert tracked(alice.root) == tracked(bob.root)
    assert clean(alice.root) and clean(bob.root)
    meta, content, _ = codec.parse_engram(item_bytes(alice, item_id))
    assert meta["tags"] == ["python", "perf", "sql"]
    assert meta["importance"] == pytest.approx(0.8)
    assert (meta["retrievalCount"], meta["status"]) == (5, "archived")
    assert content == "intro changed\nmiddle\nend changed\n"
    records = [json.loads(x) for x in (two.state.state_dir / "merges.jsonl").read_text().splitlines()]
    assert [r["via"] for r in records] == ["driver"]


def test_git_pull_merge_git_pull_rebase_and_engram_sync_agree(pair: tuple[Vault, Vault], tmp_path: Path) -> None:
    alice, bob = pair
    item_id = shared_item(alice, bob)
    divergent_edits(alice, bob, item_id)
    git(alice.root, "push", "--quiet")
    results = {}
    for how in ("merge", "rebase", "sync"):
        copy = tmp_path / f"bob-{how}"
        shutil.copytree(bob.root, copy, symlinks=True)
        vault = Vault.open(copy, actor="bob")
        if how == "sync":
            vault.sync(push=False)
        else:
            git(copy, "pull", "--quiet", f"--{how if how == 'rebase' else 'no-rebase'}", "--no-edit")
        assert clean(copy)
        results[how] = item_bytes(vault, item_id)
        vault.close()
    assert results["merge"] == results["rebase"] == results["sync"]


def test_same_line_edits_complete_the_merge_with_a_callout_and_a_flag(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item_id = shared_item(alice, bob, "the answer is 41\n")
    alice.update(item_id, {"content": "the answer is 42\n"})
    bob.update(item_id, {"content": "the answer is 43\n"})
    commit_all(alice)
    commit_all(bob)
    git(alice.root, "push", "--quiet")
    proc = git(bob.root, "pull", "--no-rebase", "--no-edit")
    assert "kept 1 conflict(s) for review" in proc.stderr
    assert clean(bob.root)
    got = bob.get(item_id)
    assert "> the answer is 42" in got.content and "> the answer is 43" in got.content
    assert got.merge_conflicts and got.merge_conflicts[0].startswith("content: both sides changed")


def test_concurrent_synapse_evidence_merges_through_the_driver(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    x = alice.create("X", "x").item
    y = alice.create("Y", "y").item
    alice.link(x.id, "extends", y.id, evidence="shared base")
    alice.sync()
    bob.sync()
    alice.link(x.id, "extends", y.id, evidence="alice saw it")
    bob.link(x.id, "extends", y.id, evidence="bob saw it")
    commit_all(alice)
    commit_all(bob)
    git(alice.root, "push", "--quiet")
    git(bob.root, "pull", "--quiet", "--no-rebase", "--no-edit")
    bob.refresh()
    (edge,) = bob.synapses(x.id)
    assert {e.description for e in edge.evidence} == {"shared base", "alice saw it", "bob saw it"}
    assert clean(bob.root)


def test_a_rename_on_one_side_and_an_edit_on_the_other_merge_through_git_rename_detection(
    pair: tuple[Vault, Vault],
) -> None:
    alice, bob = pair
    item_id = shared_item(alice, bob, "one\ntwo\nthree\nfour\nfive\nsix\n")
    renamed = alice.update(item_id, {"title": "Frozen dataclass copies"})
    bob.update(item_id, {"content": "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"})
    commit_all(alice)
    commit_all(bob)
    git(alice.root, "push", "--quiet")
    git(bob.root, "pull", "--quiet", "--no-rebase", "--no-edit")
    bob.refresh()
    got = bob.get(item_id)
    assert got.path == renamed.path
    assert (got.title, got.content) == ("Frozen dataclass copies", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n")


def test_two_items_with_one_title_conflict_under_plain_git_and_sync_then_keeps_both(
    pair: tuple[Vault, Vault],
) -> None:
    alice, bob = pair
    a = alice.create("Deploy checklist", "alice's steps", domain=["ops"]).item
    b = bob.create("Deploy checklist", "bob's steps", domain=["ops"]).item
    commit_all(alice)
    commit_all(bob)
    git(alice.root, "push", "--quiet")
    proc = git(bob.root, "pull", "--no-rebase", "--no-edit", check=False)
    assert proc.returncode != 0
    assert "different items" in proc.stderr
    assert a.path is not None
    text = (bob.root / a.path).read_text()
    assert "alice's steps" in text and "bob's steps" in text and "<<<<<<<" in text
    git(bob.root, "merge", "--abort")
    assert clean(bob.root)
    bob.sync()
    assert {bob.get(a.id).content, bob.get(b.id).content} == {"alice's steps\n", "bob's steps\n"}


@pytest.mark.parametrize("driver", ["missing", "uninstalled"])
def test_an_unrunnable_or_missing_driver_leaves_a_normal_git_conflict_and_loses_nothing(
    pair: tuple[Vault, Vault], driver: str
) -> None:
    alice, bob = pair
    item_id = shared_item(alice, bob)
    divergent_edits(alice, bob, item_id)
    if driver == "missing":
        git(bob.root, "config", "merge.engram.driver", "engram-merge-driver-not-installed %O %A %B %L %P")
    else:
        gitstore.uninstall_merge_driver(bob.root)
    ours = item_bytes(bob, item_id)
    path = bob.get(item_id).path
    assert path is not None
    git(alice.root, "push", "--quiet")
    proc = git(bob.root, "pull", "--no-rebase", "--no-edit", check=False)
    assert proc.returncode != 0
    stages = git(bob.root, "ls-files", "--unmerged").stdout.splitlines()
    assert sorted(line.split()[2] for line in stages) == ["1", "2", "3"]  # all three versions kept
    text = (bob.root / path).read_bytes()
    if driver == "missing":
        assert text == ours  # the failed driver wrote nothing
    else:
        assert b"<<<<<<<" in text and b"end changed" in text and b"intro changed" in text
    git(bob.root, "merge", "--abort")
    assert clean(bob.root) and (bob.root / path).read_bytes() == ours


def test_the_driver_handles_spaces_in_the_clone_path_and_the_file_name(tmp_path: Path) -> None:
    home = tmp_path / "team memory"
    home.mkdir()
    origin = bare_origin(home)
    alice, bob = first_machine(home, origin, "alice one"), clone_machine(home, origin, "bob two")
    item = alice.create("Spaced", "one\ntwo\n", tags=["a"]).item
    assert item.path is not None
    (alice.root / item.path).rename(alice.root / "my spaced item.md")
    alice.sync()
    bob.sync()
    rel = "my spaced item.md"
    for vault, tag in ((alice, "x"), (bob, "y")):
        meta, content, _ = codec.parse_engram((vault.root / rel).read_bytes())
        meta = {**meta, "tags": [*meta["tags"], tag], "updatedBy": vault.actor, "version": meta["version"] + 1}
        (vault.root / rel).write_bytes(codec.render_engram(meta, content))
        commit_all(vault)
    git(alice.root, "push", "--quiet")
    git(bob.root, "pull", "--quiet", "--no-rebase", "--no-edit")
    assert codec.parse_engram((bob.root / rel).read_bytes())[0]["tags"] == ["a", "x", "y"]
    record = json.loads((bob.state.state_dir / "merges.jsonl").read_text().splitlines()[-1])
    assert record["path"] == rel and record["via"] == "driver"
