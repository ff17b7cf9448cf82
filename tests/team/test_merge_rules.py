"""The tree-merge rules of issue 15 against real git: paths, delete against edit, and
edges to deleted items. Every scenario runs in both orders (alice merges first, or bob
does) and must land on the same bytes and be doctor-clean but for merge flags."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, git, tracked

ORDERS = ["alice-first", "bob-first"]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp_path)
    return first_machine(tmp_path, origin, "alice"), clone_machine(tmp_path, origin, "bob")


def converge(order: str, *vaults: Vault) -> None:
    ordered = vaults if order == "alice-first" else tuple(reversed(vaults))
    for vault in (*ordered, *ordered):
        report = vault.sync()
        assert not report.partial, report.held
    first = tracked(vaults[0].root)
    for vault in vaults[1:]:
        assert tracked(vault.root) == first
    for vault in vaults:
        assert clean(vault.root)


def problems(vault: Vault, allowed: tuple[str, ...] = ("merge-conflict",)) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in vault.doctor().problems if p.code not in allowed]


def person_moves(vault: Vault, rel: str, new_rel: str) -> None:
    """What renaming a note in Obsidian does: the file moves, its frontmatter does not."""
    target = vault.root / new_rel
    target.parent.mkdir(parents=True, exist_ok=True)
    (vault.root / rel).rename(target)
    vault.refresh()


def dirs(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and ".git" not in p.parts
            and ".engram" not in p.parts and ".obsidian" not in p.parts}


@pytest.mark.parametrize("order", ORDERS)
def test_domain_on_one_side_and_title_on_the_other_give_the_natural_path(
    pair: tuple[Vault, Vault], order: str
) -> None:
    alice, bob = pair
    item = alice.create("Item X", "body\n", domain=["ops"]).item
    alice.sync()
    bob.sync()
    alice.update(item.id, {"domain_tags": ["ops", "db"]})
    bob.update(item.id, {"title": "Item X renamed"})
    converge(order, alice, bob)
    for vault in (alice, bob):
        got = vault.get(item.id)
        assert (got.path, got.slug, got.domain_tags) == ("ops/db/item-x-renamed.md", "item-x-renamed", ("ops", "db"))
        assert problems(vault, ()) == []


@pytest.mark.parametrize("order", ORDERS)
def test_a_persons_rename_is_kept_when_the_other_side_only_edited(pair: tuple[Vault, Vault], order: str) -> None:
    alice, bob = pair
    item = alice.create("Runbook", "step one\n", domain=["ops"]).item
    alice.sync()
    bob.sync()
    assert item.path == "ops/runbook.md"
    person_moves(alice, item.path, "ops/on-call/Runbook (2026).md")
    bob.update(item.id, {"content": "step one\nstep two\n"})
    converge(order, alice, bob)
    for vault in (alice, bob):
        got = vault.get(item.id)
        assert got.path == "ops/on-call/Runbook (2026).md" and got.content == "step one\nstep two\n"
    # doctor still calls a person's path drift until issue 9 adopts renames; nothing else
    assert problems(alice, ("path-drift",)) == []


@pytest.mark.parametrize("order", ORDERS)
def test_an_engram_move_beats_a_persons_rename_and_lands_at_the_merged_natural_path(
    pair: tuple[Vault, Vault], order: str
) -> None:
    alice, bob = pair
    item = alice.create("Runbook", "step one\n", domain=["ops"]).item
    alice.sync()
    bob.sync()
    person_moves(alice, "ops/runbook.md", "ops/my-runbook.md")
    bob.update(item.id, {"title": "Incident runbook"})
    converge(order, alice, bob)
    for vault in (alice, bob):
        assert vault.get(item.id).path == "ops/incident-runbook.md"
        assert problems(vault, ()) == []


@pytest.mark.parametrize("order", ORDERS)
def test_two_different_hand_renames_keep_the_path_that_sorts_first_and_flag_the_item(
    pair: tuple[Vault, Vault], order: str
) -> None:
    alice, bob = pair
    item = alice.create("Runbook", "step one\n", domain=["ops"]).item
    alice.sync()
    bob.sync()
    person_moves(alice, "ops/runbook.md", "ops/zebra.md")
    person_moves(bob, "ops/runbook.md", "ops/alpha.md")
    for vault, path, who in ((alice, "ops/zebra.md", "alice"), (bob, "ops/alpha.md", "bob")):
        with (vault.root / path).open("a") as note:  # and each edits the note in an editor
            note.write(f"added by {who}\n")
    converge(order, alice, bob)
    got = alice.get(item.id)
    assert got.path == "ops/alpha.md"
    assert any("both sides moved the file by hand" in note and "ops/zebra.md" in note for note in got.merge_conflicts)
    assert [p for p in tracked(alice.root) if p.startswith("ops/")] == ["ops/alpha.md"]
    assert "added by alice" in got.content and "added by bob" in got.content


def test_a_delete_wins_over_the_path_move_sync_made_for_a_same_title_pair(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    bob = clone_machine(tmp_path, origin, "bob")
    carol = clone_machine(tmp_path, origin, "carol")
    first = alice.create("Deploy", "alice's steps\n", domain=["ops"]).item  # the smaller id
    second = bob.create("Deploy", "bob's steps\n", domain=["ops"]).item
    assert first.id < second.id and first.path == second.path
    bob.sync()
    carol.sync()  # carol has bob's item at the natural path
    report = alice.sync()  # the merge moves bob's item aside: its only "edit"
    assert report.moved == [(second.path, second.path[:-3] + f"-{second.id[-6:].lower()}.md")]
    carol.delete(second.id)
    for vault in (carol, alice, bob, carol, alice, bob):
        vault.sync()
    for vault in (alice, bob, carol):
        assert [i.id for i in vault.list()] == [first.id]
        assert problems(vault, ()) == []
    assert tracked(alice.root) == tracked(bob.root) == tracked(carol.root)


@pytest.mark.parametrize("order", ORDERS)
def test_a_delete_wins_over_a_regenerated_link_section(pair: tuple[Vault, Vault], order: str) -> None:
    alice, bob = pair
    x = alice.create("Source", "x\n").item
    y = alice.create("Target", "y\n").item
    alice.link(x.id, "causes", y.id)
    alice.sync()
    bob.sync()
    alice.delete(x.id)
    bob.update(y.id, {"title": "Renamed target"})  # rewrites x's derived section on bob
    converge(order, alice, bob)
    for vault in (alice, bob):
        assert [i.id for i in vault.list()] == [y.id]
        assert vault.synapses() == []
        assert problems(vault, ()) == []


@pytest.mark.parametrize("order", ORDERS)
def test_an_edge_relinked_to_an_item_deleted_elsewhere_goes_to_the_trash(pair: tuple[Vault, Vault], order: str) -> None:
    alice, bob = pair
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    alice.link(x.id, "extends", y.id, evidence="first")
    alice.sync()
    bob.sync()
    alice.delete(x.id)
    bob.link(x.id, "extends", y.id, evidence="bob again")  # re-link: the edge file changes
    z = bob.create("Z", "z\n").item
    bob.link(z.id, "causes", x.id)  # and a brand-new edge to x
    converge(order, alice, bob)
    for vault in (alice, bob):
        assert {i.id for i in vault.list()} == {y.id, z.id}
        assert vault.synapses() == []
        assert problems(vault, ()) == []
        vault.link(z.id, "extends", y.id)  # link and unlink work on what is left
        vault.unlink(z.id, "extends", y.id)
    # Whoever merged keeps the edited edge in its trash: nothing is destroyed.
    trashed = [p.read_text() for v in (alice, bob) for p in (v.state.state_dir / "trash").rglob("syn-*.yaml")]
    assert any("bob again" in text for text in trashed)


@pytest.mark.parametrize("order", ORDERS)
def test_every_clone_can_restore_an_item_a_teammate_deleted_with_all_its_edges(
    pair: tuple[Vault, Vault], order: str
) -> None:
    """The merge or pull that removes a teammate's deleted item keeps this clone's copy
    in the trash bin of that id, with the edges that followed it — the ones the deleter
    trashed and the ones made here meanwhile — so `engram restore` works anywhere."""
    alice, bob = pair
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    old_edge = alice.link(x.id, "extends", y.id)
    alice.sync()
    bob.sync()
    alice.delete(x.id)
    z = bob.create("Z", "z\n").item
    new_edge = bob.link(z.id, "causes", x.id)  # made on bob while alice deleted x
    converge(order, alice, bob)
    for vault in (alice, bob):
        assert [e.id for e in vault.trash()] == [x.id]
        assert vault.synapses() == []
    back = bob.restore_deleted(x.id)
    assert set(back.synapses) == {old_edge.id, new_edge.id} and back.left == ()
    assert {s.id for s in bob.synapses(x.id)} == {old_edge.id, new_edge.id}
    assert bob.trash() == [] and not list((bob.state.state_dir / "trash").rglob("*.yaml"))
    converge(order, alice, bob)
    for vault in (alice, bob):
        assert {s.id for s in vault.synapses(x.id)} == {old_edge.id, new_edge.id}
        assert problems(vault) == []


def test_trash_bins_that_hold_only_edges_are_purged_by_age(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    x = alice.create("X", "x\n").item
    alice.sync()
    bob.sync()
    alice.delete(x.id)
    z = bob.create("Z", "z\n").item
    bob.link(z.id, "causes", x.id)
    bob.sync()
    alice.sync()  # the merge sends bob's new edge to x after it, in a bin of x's id
    bins = sorted(p for p in (alice.state.state_dir / "trash" / x.id).iterdir())
    assert len(bins) == 2
    alice.purge_trash(timedelta(0))
    assert not (alice.state.state_dir / "trash" / x.id).exists()


@pytest.mark.parametrize("order", ORDERS)
def test_a_deleted_item_someone_edited_survives_with_its_links(pair: tuple[Vault, Vault], order: str) -> None:
    alice, bob = pair
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    edge = alice.link(x.id, "extends", y.id)
    alice.sync()
    bob.sync()
    alice.delete(x.id)  # trashes the edge too
    bob.update(x.id, {"content": "x, improved\n"})
    converge(order, alice, bob)
    for vault in (alice, bob):
        got = vault.get(x.id)
        assert got.content == "x, improved\n" and any("links were kept" in n for n in got.merge_conflicts)
        assert [s.id for s in vault.synapses(x.id)] == [edge.id]
        assert problems(vault) == []


def test_unlink_and_delete_leave_no_empty_folders_on_either_clone(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    x = alice.create("X", "x\n", domain=["a", "b"]).item
    y = alice.create("Y", "y\n").item
    alice.link(x.id, "extends", y.id)
    alice.link(y.id, "causes", x.id)
    converge("alice-first", alice, bob)
    alice.unlink(x.id, "extends", y.id)
    alice.delete(x.id)
    converge("alice-first", alice, bob)
    assert dirs(alice.root) == dirs(bob.root)
    assert not (alice.root / "synapses").exists() and not (alice.root / "a").exists()


def test_an_item_file_removed_by_hand_takes_its_edges_along(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    alice.link(x.id, "extends", y.id)
    converge("alice-first", alice, bob)
    assert x.path is not None
    (alice.root / x.path).unlink()  # rm in a terminal, or delete in Obsidian
    converge("alice-first", alice, bob)
    for vault in (alice, bob):
        assert vault.synapses() == [] and problems(vault, ()) == []
    assert "engram sync" in git(alice.root, "log", "-1", "--format=%s").stdout

