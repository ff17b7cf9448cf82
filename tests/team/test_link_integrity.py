"""Links survive the team's git traffic (issue 26): a plain ``git pull`` through the hooks
never takes a live edge for one to a deleted item, and when a merge undoes a delete,
the item's edges come back as the merge of every side's versions, never an older copy.
Real git throughout: a bare origin and clones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.store.model import Engram
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, git, tracked


def hooked_clone(tmp: Path, origin: Path, name: str) -> Path:
    """A clone set up the documented way without ``engram init``: ``git clone``, then
    ``engram merge-driver install`` and ``engram hooks install``. No index is built."""
    git(tmp, "clone", "--quiet", str(origin), name)
    root = tmp / name
    runner = CliRunner()
    for group in ("merge-driver", "hooks"):
        out = runner.invoke(cli, ["--vault", str(root), group, "install"])
        assert out.exit_code == 0, out.output
    assert not (root / ".engram" / "index.sqlite").exists()
    return root


def evidence_at(repo: Path, ref: str, rel: str) -> list[str]:
    data = git(repo, "show", f"{ref}:{rel}").stdout.encode()
    return [str(e["description"]) for e in codec.parse_synapse(data)["evidence"]]


def trashed(root: Path) -> list[str]:
    trash = root / ".engram" / "trash"
    return sorted(p.name for p in trash.rglob("*") if p.is_file()) if trash.exists() else []


def linked_pair(tmp: Path) -> tuple[Path, Vault, Engram, Engram, str]:
    """An origin and alice's first machine, where items X and Y are linked (X extends Y,
    evidence "E-seed") and shared; returns the origin, alice, X, Y and the edge's path."""
    origin = bare_origin(tmp)
    alice = first_machine(tmp, origin, "alice")
    x = alice.create("Item X", "x body\n", domain=["team"]).item
    y = alice.create("Item Y", "y body\n", domain=["team"]).item
    edge = alice.link(x.id, "extends", y.id, evidence="E-seed")
    alice.sync()
    return origin, alice, x, y, alice.state.index.synapse_paths(edge.id)[0]


def test_a_plain_pull_on_a_clone_without_an_index_keeps_a_changed_link(tmp_path: Path) -> None:
    origin, alice, x, y, rel = linked_pair(tmp_path)
    bob = hooked_clone(tmp_path, origin, "bob")
    alice.link(x.id, "extends", y.id, evidence="E-more")  # alice adds evidence
    alice.sync()
    proc = git(bob, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    said = proc.stdout + proc.stderr
    assert "moved to the trash" not in said
    assert (bob / rel).is_file() and trashed(bob) == []
    assert git(bob, "status", "--porcelain").stdout == ""
    with Vault.open(bob, actor="bob") as vault:
        vault.sync()
    assert evidence_at(origin, "main", rel) == ["E-seed", "E-more"]



def test_a_pull_keeps_a_link_to_an_item_a_stale_index_does_not_know(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    x = alice.create("Item X", "x body\n").item
    alice.sync()
    bob = hooked_clone(tmp_path, origin, "bob")
    with Vault.open(bob, actor="bob") as vault:
        vault.refresh()  # bob's index is built now …
    z = alice.create("Item Z", "z body\n").item
    edge = alice.link(x.id, "causes", z.id, evidence="E-seed")
    alice.sync()
    # … and goes stale: this pull runs no hook, so nothing tells the index about Z.
    git(bob, "-c", f"core.hooksPath={tmp_path / 'no-hooks'}", "pull", "--quiet", "--no-rebase", "origin", "main")
    alice.link(x.id, "causes", z.id, evidence="E-more")  # only the edge file changes
    alice.sync()
    rel = alice.state.index.synapse_paths(edge.id)[0]
    proc = git(bob, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    assert "moved to the trash" not in proc.stdout + proc.stderr
    assert (bob / rel).is_file() and trashed(bob) == []
    with Vault.open(bob, actor="bob") as vault:
        vault.sync()
    assert evidence_at(origin, "main", rel) == ["E-seed", "E-more"]


# --------------------------------------------------------------------------- a delete undone


def links_of(vault: Vault, item_id: str) -> dict[str, list[str]]:
    """The edges of an item: kind → evidence, in the order written."""
    vault.refresh()
    return {s.kind: [e.description for e in s.evidence] for s in vault.synapses(item_id)}


def converge(order: list[Vault], everyone: list[Vault], origin: Path) -> None:
    for vault in (*order, *order):
        assert not vault.sync().partial
    first = tracked(everyone[0].root)
    assert all(tracked(v.root) == first for v in everyone) and all(clean(v.root) for v in everyone)
    assert git(origin, "rev-parse", "main").stdout == git(everyone[0].root, "rev-parse", "HEAD").stdout


@pytest.fixture
def team(tmp_path: Path) -> tuple[Path, Vault, Vault, Vault]:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    return origin, alice, clone_machine(tmp_path, origin, "bob"), clone_machine(tmp_path, origin, "carol")


@pytest.mark.parametrize("order", ["alice bob carol", "bob alice carol", "carol alice bob"])
def test_an_undone_delete_brings_back_the_links_as_they_were_last_changed(
    team: tuple[Path, Vault, Vault, Vault], order: str
) -> None:
    origin, alice, bob, carol = team
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    z = alice.create("Z", "z\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    for vault in (alice, bob, carol):
        vault.sync()
    alice.delete(x.id)
    bob.link(x.id, "extends", y.id, evidence="E-more")  # only x's links: the delete beats these on bob
    bob.link(x.id, "causes", z.id, evidence="E-new")
    carol.update(x.id, {"content": "x, improved\n"})  # an edit: the delete is undone
    named = {"alice": alice, "bob": bob, "carol": carol}
    converge([named[name] for name in order.split()], [alice, bob, carol], origin)
    for vault in (alice, bob, carol):
        assert vault.get(x.id).content == "x, improved\n"
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-more"], "causes": ["E-new"]}


def test_an_undone_delete_brings_back_the_links_the_deleting_side_changed_first(
    team: tuple[Path, Vault, Vault, Vault],
) -> None:
    origin, alice, bob, _ = team
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    z = alice.create("Z", "z\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    alice.sync()
    bob.sync()
    alice.link(x.id, "extends", y.id, evidence="E-more")
    alice.link(x.id, "causes", z.id, evidence="E-new")
    alice.sync()  # shared: the delete below removes what the team had
    alice.delete(x.id)
    bob.update(x.id, {"content": "x, improved\n"})  # bob has not pulled since
    converge([alice, bob], [alice, bob], origin)
    for vault in (alice, bob):
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-more"], "causes": ["E-new"]}


@pytest.mark.parametrize("order", ["deleter-first", "editor-first"])
def test_a_delete_undone_by_the_side_that_changed_the_links_keeps_them(
    team: tuple[Path, Vault, Vault, Vault], order: str
) -> None:
    origin, alice, bob, _ = team
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    z = alice.create("Z", "z\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    alice.sync()
    bob.sync()
    alice.delete(x.id)
    bob.update(x.id, {"content": "x, improved\n"})
    bob.link(x.id, "extends", y.id, evidence="E-more")
    bob.link(x.id, "causes", z.id, evidence="E-new")
    converge([alice, bob] if order == "deleter-first" else [bob, alice], [alice, bob], origin)
    for vault in (alice, bob):
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-more"], "causes": ["E-new"]}


def test_links_two_clones_each_lost_to_the_delete_come_back_merged(
    team: tuple[Path, Vault, Vault, Vault], tmp_path: Path
) -> None:
    origin, alice, bob, carol = team
    dave = clone_machine(tmp_path, origin, "dave")
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    for vault in (alice, bob, carol, dave):
        vault.sync()
    alice.delete(x.id)
    bob.link(x.id, "extends", y.id, evidence="E-bob")
    dave.link(x.id, "extends", y.id, evidence="E-dave")
    carol.update(x.id, {"content": "x, improved\n"})
    # alice's delete wins on bob and on dave, each over its own evidence; carol undoes it.
    converge([alice, bob, dave, carol], [alice, bob, carol, dave], origin)
    for vault in (alice, bob, carol, dave):
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-bob", "E-dave"]}


def remove(vault: Vault, item: Engram, how: str) -> None:
    """Delete ``item`` on ``vault``: with engram (``delete``) or as a person does (``by hand``)."""
    if how == "delete":
        vault.delete(item.id)
    else:
        assert item.path is not None
        (vault.root / item.path).unlink()


@pytest.mark.parametrize("how", ["delete", "by hand"])
@pytest.mark.parametrize("order", ["deleter-first", "editor-first"])
def test_an_undone_delete_brings_back_links_the_deleter_made_and_never_shared(
    team: tuple[Path, Vault, Vault, Vault], order: str, how: str
) -> None:
    origin, alice, bob, _ = team
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    z = alice.create("Z", "z\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    alice.sync()
    bob.sync()
    alice.link(x.id, "extends", y.id, evidence="E-more")  # never synced before the delete:
    alice.link(z.id, "causes", x.id, evidence="E-new")  # only alice's trash keeps these
    remove(alice, x, how)
    bob.update(x.id, {"content": "x, improved\n"})
    converge([alice, bob] if order == "deleter-first" else [bob, alice], [alice, bob], origin)
    for vault in (alice, bob):
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-more"], "causes": ["E-new"]}


@pytest.mark.parametrize("first", ["editor", "linker"])
@pytest.mark.parametrize("how", ["delete", "by hand"])
def test_a_delete_undone_after_the_linker_merged_it_brings_back_the_linkers_edits(
    team: tuple[Path, Vault, Vault, Vault], first: str, how: str
) -> None:
    """Fuzz seed 117: the delete reaches the linker and the editor separately. The
    linker's merge lets it win over the evidence and the new link (its own commit then
    its merge: git has seen both); the editor's merge undoes it. When those two merges
    meet, the merge base already lacks the item, so neither merge saw an undone delete
    — the edges the linker's merge removed with the item must still come back."""
    origin, alice, bob, carol = team
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    z = alice.create("Z", "z\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    for vault in (alice, bob, carol):
        vault.sync()
    remove(alice, x, how)
    alice.sync()
    bob.link(x.id, "extends", y.id, evidence="E-more")  # bob has not pulled the delete
    bob.link(x.id, "causes", z.id, evidence="E-new")
    carol.update(x.id, {"content": "x, improved\n"})  # an edit: the delete is undone
    # Each merges the delete before the other's merge reaches origin.
    early, late = (carol, bob) if first == "editor" else (bob, carol)
    early.sync(push=False)
    assert late.sync().pushed
    converge([early, late, alice], [alice, bob, carol], origin)
    for vault in (alice, bob, carol):
        assert vault.get(x.id).content == "x, improved\n"
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-more"], "causes": ["E-new"]}


@pytest.mark.parametrize("how", ["delete", "by hand"])
def test_a_delete_undone_keeps_evidence_the_deleters_own_merge_brought_in(
    team: tuple[Path, Vault, Vault, Vault], how: str
) -> None:
    """Fuzz seed 80: the deleter removes the item (and its edge, as it then stood), then
    merges evidence added to that edge meanwhile — the delete wins and the merge removes
    the newer edge. When an edit then undoes the delete, the deleter's history holds
    both removed versions; the older one predates the merge base, so its lacking the
    newer evidence is no removal of it."""
    origin, alice, bob, carol = team
    x = alice.create("X", "x\n").item
    y = alice.create("Y", "y\n").item
    alice.link(x.id, "extends", y.id, evidence="E-seed")
    for vault in (alice, bob, carol):
        vault.sync()
    remove(carol, x, how)
    bob.link(x.id, "extends", y.id, evidence="E-more")
    assert bob.sync().pushed
    carol.sync(push=False)  # commits the delete, then merges E-more: the delete wins
    assert not any(x.id.encode() in data for data in tracked(carol.root).values())
    alice.sync()
    alice.update(x.id, {"content": "x, improved\n"})  # an edit: the delete is undone
    assert alice.sync().pushed
    converge([carol, alice, bob], [alice, bob, carol], origin)
    for vault in (alice, bob, carol):
        assert vault.get(x.id).content == "x, improved\n"
        assert links_of(vault, x.id) == {"extends": ["E-seed", "E-more"]}


def test_links_a_pull_trashed_as_dangling_come_back_with_their_items(tmp_path: Path) -> None:
    """Fuzz seed 514: carol deletes X and Y; bob, who has not pulled, links them and
    pulls with plain git — the hook moves his links to the trash, since X and Y are gone,
    and his sync commits that on its own; alice, who had not seen the delete either,
    edits X and Y, so her sync brings them back. Bob's links come back with them: they
    were removed because their items were gone, never unlinked."""
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    hand = tmp_path / "alice" / "hand"
    hand.mkdir()
    for name in ("x", "y"):  # notes a person wrote: a link never rewrites them
        (hand / f"{name}.md").write_text(f"---\nid: note-{name}\ntitle: Note {name}\n---\n{name} body\n")
    alice.sync()
    bob_root = hooked_clone(tmp_path, origin, "bob")
    carol = clone_machine(tmp_path, origin, "carol")
    for name in ("x", "y"):  # deleted in an editor
        (tmp_path / "carol" / "hand" / f"{name}.md").unlink()
    carol.sync()
    with Vault.open(bob_root, actor="bob") as bob:
        edge = bob.link("note-x", "depends_on", "note-y", evidence="E-bob")
    git(bob_root, "add", "-A")
    git(bob_root, "commit", "--quiet", "-m", "bob links X and Y")
    proc = git(bob_root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    assert "moved to the trash" in proc.stdout + proc.stderr  # X and Y are gone here: the link dangles
    with Vault.open(bob_root, actor="bob") as bob:
        bob.sync()
    for name in ("x", "y"):  # edited in an editor, the delete not seen
        with (hand / f"{name}.md").open("a") as note:
            note.write("alice's line\n")
    alice.sync()  # the edits bring X and Y back
    names = git(origin, "ls-tree", "-r", "--name-only", "main").stdout.split()
    assert f"synapses/depends_on/{edge.id}.yaml" in names
    assert evidence_at(origin, "main", f"synapses/depends_on/{edge.id}.yaml") == ["E-bob"]


@pytest.mark.parametrize(("linked", "name"), [("before bob pulled", "x"), ("after bob pulled", "x"),
                                             ("after bob pulled", "é")])  # git quotes a name like "é.md"
def test_a_rebase_that_brings_a_deleted_note_back_brings_its_links_back(tmp_path: Path, linked: str,
                                                                         name: str) -> None:
    """Fuzz seed 3053: alice links notes X and Y and shares it; bob, in an editor,
    rewrites X under a new file name and commits with plain git; carol deletes X by hand
    and her sync removes the link with it (it would dangle). Bob's `git pull --rebase`
    replays his new file on top of the delete (git sees no rename: the text changed too
    much), so X is back — and the link, removed only because X was gone, must come back
    with it (the post-rewrite hook), not stay lost for the team: whether bob's clone
    ever had the link or it was made and removed upstream of him (the seed's replay)."""
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    hand = tmp_path / "alice" / "hand"
    hand.mkdir()
    for note, key in ((name, "x"), ("y", "y")):  # notes a person wrote
        (hand / f"{note}.md").write_text(f"---\nid: note-{key}\ntitle: Note {note}\n---\n{note} body\n")
    alice.sync()
    if linked == "after bob pulled":
        bob_root = hooked_clone(tmp_path, origin, "bob")
    edge = alice.link("note-x", "depends_on", "note-y", evidence="E-alice")
    alice.sync()
    rel = f"synapses/depends_on/{edge.id}.yaml"
    if linked == "before bob pulled":
        bob_root = hooked_clone(tmp_path, origin, "bob")
    with Vault.open(bob_root, actor="bob") as bob:
        bob.refresh()
    (bob_root / "hand" / f"{name}.md").unlink()  # rewritten under a new name, in an editor
    (bob_root / "hand" / f"{name} renamed.md").write_text(
        f"---\nid: note-x\ntitle: Note {name}\n---\nA new first line.\nThe body, rewritten.\nAnd a third line.\n"
    )
    git(bob_root, "add", "-A")
    git(bob_root, "commit", "--quiet", "-m", "bob rewrites X")
    carol = clone_machine(tmp_path, origin, "carol")
    (tmp_path / "carol" / "hand" / f"{name}.md").unlink()  # deleted in an editor
    carol.sync()
    assert rel not in git(origin, "ls-tree", "-r", "--name-only", "main").stdout.split()  # it went with X
    git(bob_root, "pull", "--quiet", "--rebase", "origin", "main")
    assert (bob_root / "hand" / f"{name} renamed.md").is_file()  # X is back
    assert (bob_root / rel).is_file()  # and so is its link
    with Vault.open(bob_root, actor="bob") as bob:
        bob.sync()
    assert evidence_at(origin, "main", rel) == ["E-alice"]
    assert clean(bob_root)


def test_a_link_unlinked_after_its_item_came_back_stays_unlinked_on_a_pull(tmp_path: Path) -> None:
    """The other side of the rule above: an edge removed while both its ends were there
    was unlinked by someone, even if one end had been deleted and restored before."""
    origin, alice, x, y, rel = linked_pair(tmp_path)
    bob = hooked_clone(tmp_path, origin, "bob")
    with Vault.open(bob, actor="bob") as vault:
        vault.refresh()
    alice.delete(x.id)
    alice.sync()
    alice.restore_deleted(x.id)  # X and its link are back
    alice.sync()
    assert rel in git(origin, "ls-tree", "-r", "--name-only", "main").stdout.split()
    alice.unlink(x.id, "extends", y.id)
    alice.sync()
    git(bob, "pull", "--quiet", "--rebase", "origin", "main")
    assert not (bob / rel).exists()
    with Vault.open(bob, actor="bob") as vault:
        vault.sync()
    assert rel not in git(origin, "ls-tree", "-r", "--name-only", "main").stdout.split()


def test_two_sides_that_remove_the_same_twin_keep_the_items_links(tmp_path: Path) -> None:
    """Fuzz seed 1057: a plain push published item X in two files (engram.team.twins);
    both clones then removed the same one of the two, each in its own commit. To the
    merge of those commits X's id lost a file on both sides — yet X lives on in the
    other file, which neither side touched, and its link must not go to the trash as a
    link to a deleted item."""
    origin, alice, x, _, rel = linked_pair(tmp_path)
    twin = "team/item-x-again.md"
    assert x.path is not None
    shutil.copy(alice.root / x.path, alice.root / twin)
    git(alice.root, "add", twin)
    git(alice.root, "commit", "--quiet", "--no-verify", "-m", "X twice")
    git(alice.root, "push", "--quiet", "origin", "main")
    bob = clone_machine(tmp_path, origin, "bob")
    for vault in (alice, bob):  # each joins the twins the same way, in a commit of its own
        git(vault.root, "rm", "--quiet", twin)
        git(vault.root, "commit", "--quiet", "--no-verify", "-m", f"{vault.actor} joins X")
    alice.sync()
    report = bob.sync()
    assert not report.fast_forward and report.trashed == [], report
    at_origin = git(origin, "ls-tree", "-r", "--name-only", "main").stdout.split()
    assert x.path in at_origin and twin not in at_origin
    assert rel in at_origin and evidence_at(origin, "main", rel) == ["E-seed"]
    assert trashed(bob.root) == []
    bob.close()
