"""One item in two files after a git merge (issue 26, fuzz seeds 134, 408, 415): a restore
from the trash at the item's old path meets, in a plain ``git pull``, the merge that had
brought the item back renamed. git matches files by path and keeps both; engram joins
them (``engram.team.twins``) wherever it next sees the change — the post-merge and
post-rewrite hooks, the sync that pushes the pull's merge, or a peer's sync that pulls
it — so the origin never keeps one id twice. Real git: a bare origin and clones."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.team import twins
from engram.team.gitstore import GitRepo
from engram.vault import Vault
from tests.git_helpers import bare_origin, clone_machine, first_machine, git, tracked
from tests.team.test_link_integrity import hooked_clone

_ID = re.compile(rb"^id: *(\S+)", re.MULTILINE)


def held_twice(repo: Path, ref: str | None = None) -> dict[str, list[str]]:
    """Ids that more than one item file carries: in the work tree, or at ``ref``."""
    if ref is None:  # the work tree as it is, committed or not
        files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*.md")
                 if ".engram" not in p.relative_to(repo).parts and ".git" not in p.relative_to(repo).parts}
    else:
        names = git(repo, "ls-tree", "-r", "--name-only", ref).stdout.split()
        files = {name: git(repo, "show", f"{ref}:{name}").stdout.encode() for name in names if name.endswith(".md")}
    where: dict[str, list[str]] = {}
    for rel, data in files.items():
        found = _ID.search(data)
        if rel.endswith(".md") and found:
            where.setdefault(found.group(1).decode(), []).append(rel)
    return {item_id: paths for item_id, paths in where.items() if len(paths) > 1}


@dataclass
class Team:
    tmp: Path
    origin: Path
    alice: Vault
    bob: Path
    item_id: str

    @property
    def alice_root(self) -> Path:
        return self.tmp / "alice"


def restore_meets_rename(tmp: Path, *, bob_hooked: bool = True, alice_edits: bool = True) -> Team:
    """Alice deletes X; Bob, who had not seen the delete, renames it, and his sync keeps
    the edited item (at its new path); Alice, who has not pulled since, restores X from
    her trash at its old path, adds a line to it (unless not ``alice_edits``) and commits
    with plain git."""
    origin = bare_origin(tmp)
    alice = first_machine(tmp, origin, "alice")
    x = alice.create("Item X", "x body\n", domain=["team"]).item
    alice.sync()
    bob = hooked_clone(tmp, origin, "bob") if bob_hooked else None
    if bob is None:
        git(tmp, "clone", "--quiet", str(origin), "bob")
        bob = tmp / "bob"
    with Vault.open(bob, actor="bob") as vault:
        vault.refresh()
    alice.delete(x.id)
    alice.sync()
    with Vault.open(bob, actor="bob") as vault:
        vault.update(x.id, {"title": "Item X renamed", "content": "x body\nbob's line\n"})
        vault.sync()
    restored = alice.restore_deleted(x.id)
    assert restored.path == "team/item-x.md"
    if alice_edits:
        alice.update(x.id, {"content": "x body\nalice's line\n"})
    git(tmp / "alice", "add", "-A")
    git(tmp / "alice", "commit", "--quiet", "-m", "restore X")
    return Team(tmp, origin, alice, bob, x.id)


def joined_at_origin(team: Team) -> str:
    """The origin holds X once, with both sides' lines; returns its path."""
    assert held_twice(team.origin, "main") == {}
    paths = [name for name in git(team.origin, "ls-tree", "-r", "--name-only", "main").stdout.split()
             if name.startswith("team/")]
    assert paths == ["team/item-x-renamed.md"]
    text = git(team.origin, "show", f"main:{paths[0]}").stdout
    assert "bob's line" in text and "alice's line" in text
    return paths[0]


def test_the_sync_after_a_plain_pull_joins_the_two_files_before_it_pushes(tmp_path: Path) -> None:
    team = restore_meets_rename(tmp_path)
    # Alice's clone was set up by `engram init`: the driver and the pre-commit hook, no
    # post-merge hook, so nothing of engram runs after this pull.
    git(team.alice_root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    assert list(held_twice(team.alice_root)) == [team.item_id]
    report = team.alice.sync()
    assert report.twins == ["team/item-x-renamed.md"]
    assert any("joined the two files" in line for line in report.lines())
    joined_at_origin(team)
    assert held_twice(team.alice_root) == {}
    trash = team.alice_root / ".engram" / "trash" / team.item_id
    assert [p.name for p in trash.rglob("*.md")] != []  # the other file is kept in the bin
    again = team.alice.sync()
    assert again.twins == [] and again.committed == 0


def test_a_peer_joins_what_a_plain_push_published(tmp_path: Path) -> None:
    team = restore_meets_rename(tmp_path)
    git(team.alice_root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    git(team.alice_root, "push", "--quiet", "origin", "main")  # plain git all the way
    assert list(held_twice(team.origin, "main")) == [team.item_id]
    with Vault.open(team.bob, actor="bob") as vault:
        report = vault.sync()
    assert report.twins == ["team/item-x-renamed.md"]
    joined_at_origin(team)
    team.alice.sync()
    assert tracked(team.alice_root) == tracked(team.bob)


def test_twins_a_peer_edited_after_a_plain_push_published_them_keep_every_line(tmp_path: Path) -> None:
    """Fuzz seed 1057: the twins were already on the origin when a peer edited one of
    them, so the merge base of the next pull holds both; merged against that base's
    version, the other twin looked as if it had deleted the lines only the base's twin
    had. Each twin is now merged from the version both were edited from."""
    team = restore_meets_rename(tmp_path, alice_edits=False)  # her twin is X as it was
    git(team.alice_root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    git(team.alice_root, "push", "--quiet", "origin", "main")  # the origin holds X twice
    git(tmp_path, "clone", "--quiet", str(team.origin), "carol")
    git(tmp_path, "clone", "--quiet", str(team.origin), "dave")
    dave = tmp_path / "dave"
    note = dave / "team/item-x-renamed.md"  # a person's edit of one twin, in an editor: a first line
    note.write_text(note.read_text(encoding="utf-8").replace("---\nx body", "---\ndave's line\nx body"), encoding="utf-8")
    git(dave, "mv", "team/item-x.md", "team/item-x-restored.md")  # and a rename of the other
    git(dave, "commit", "--quiet", "--no-verify", "-am", "dave adds a line and renames a note")
    git(dave, "push", "--quiet", "origin", "main")
    # Carol's clone held both twins before this pull: its merge base does too.
    with Vault.open(tmp_path / "carol", actor="carol") as vault:
        report = vault.sync()
    assert report.twins
    assert held_twice(team.origin, "main") == {}
    text = git(team.origin, "show", f"main:{report.twins[0]}").stdout
    assert all(line in text for line in ("x body", "bob's line", "dave's line")), text
    assert "title: Item X renamed" in text and "[!conflict]" not in text


def install_hooks(root: Path) -> None:
    out = CliRunner().invoke(cli, ["--vault", str(root), "hooks", "install"])
    assert out.exit_code == 0, out.output


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_the_hooks_join_them_as_the_pull_lands(tmp_path: Path, how: str) -> None:
    team = restore_meets_rename(tmp_path)
    install_hooks(team.alice_root)  # post-merge and post-rewrite run engram after a pull
    proc = git(team.alice_root, "pull", "--quiet", how, "--no-edit", "origin", "main")
    assert "joined into one" in proc.stdout + proc.stderr
    assert held_twice(team.alice_root) == {}
    report = team.alice.sync()
    assert report.twins == []  # nothing left for sync to join: it commits the hook's work
    joined_at_origin(team)


def test_a_copy_a_person_made_here_is_left_for_doctor(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    x = alice.create("Item X", "x body\n", domain=["team"]).item
    alice.sync()
    root = tmp_path / "alice"
    shutil.copy(root / "team/item-x.md", root / "team/item-x-copy.md")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "--no-verify", "-m", "a person copies a note")
    report = alice.sync()
    assert report.twins == []
    assert held_twice(origin, "main") == {x.id: ["team/item-x-copy.md", "team/item-x.md"]}
    problems = Counter(p.code for p in alice.doctor().problems)
    assert problems["duplicate-id"] == 1


def test_a_persons_note_a_merge_left_twice_is_joined_too(tmp_path: Path) -> None:
    """Fuzz seed 502: the same story with a note a person wrote (no ``createdAt``)."""
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    root = tmp_path / "alice"
    (root / "hand").mkdir()
    (root / "hand/field-notes.md").write_text("---\nid: hand-0001\ntitle: Field notes\ntags: [hand]\n---\nfirst line\n")
    alice.sync()
    git(tmp_path, "clone", "--quiet", str(origin), "bob")
    with Vault.open(tmp_path / "bob", actor="bob") as vault:
        vault.refresh()
    alice.delete("hand-0001")
    alice.sync()
    with Vault.open(tmp_path / "bob", actor="bob") as vault:
        moved = vault.update("hand-0001", {"title": "Field notes renamed", "content": "first line\nbob's line\n"})
        vault.sync()
    alice.restore_deleted("hand-0001")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "restore the note")
    git(root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    assert list(held_twice(root)) == ["hand-0001"]
    report = alice.sync()
    assert report.twins == [moved.path]
    assert held_twice(origin, "main") == {}
    assert "bob's line" in git(origin, "show", f"main:{moved.path}").stdout


def test_a_note_a_peer_made_from_a_template_keeps_its_own_file(tmp_path: Path) -> None:
    """Notes made from an Obsidian template that carries an id share it (issue 28): each
    was committed beside the template, so it is a copy, never joined into it."""
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    root = tmp_path / "alice"
    (root / "templates").mkdir()
    template = "---\nid: tmpl-0001\ntitle: Meeting\ntags: [meeting]\n---\n## Agenda\n"
    (root / "templates/meeting.md").write_text(template)
    alice.sync()
    git(tmp_path, "clone", "--quiet", str(origin), "bob")
    bob = tmp_path / "bob"
    (bob / "meetings").mkdir()
    (bob / "meetings/monday.md").write_text(template.replace("title: Meeting", "title: Monday") + "- budget\n")
    git(bob, "add", "-A")
    git(bob, "commit", "--quiet", "--no-verify", "-m", "monday's notes from the template")
    git(bob, "push", "--quiet", "origin", "main")
    report = alice.sync()
    assert report.twins == []
    assert (root / "templates/meeting.md").read_text() == template
    assert "budget" in (root / "meetings/monday.md").read_text()


@pytest.mark.parametrize("title", ["Item X", "Café X"])  # git quotes a name like "café-x.md"
def test_a_twins_past_follows_the_item_through_a_rename_git_does_not_see(tmp_path: Path, title: str) -> None:
    """Fuzz seed 3096: a person renamed a note in an editor and rewrote much of it, which
    git takes for a delete and a new file. The twin's past — what it was edited from,
    the base of a join — must still reach the versions at the old path."""
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    x = alice.create(title, "x body\n", domain=["team"]).item
    alice.sync()
    alice.update(x.id, {"content": "x body\nsecond line\n"})
    alice.sync()
    root = tmp_path / "alice"
    text = (root / x.path).read_text(encoding="utf-8")
    (root / x.path).unlink()
    moved = "team/item x in my words.md"
    (root / moved).write_text(text + "".join(f"a line of my own, {n}\n" for n in range(40)), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "--no-verify", "-m", "a person renames and rewrites X")
    status = git(root, "show", "--format=", "--name-status", "-M", "HEAD").stdout.split()
    assert "D" in status and "A" in status  # no rename to git
    with GitRepo(root) as repo:
        past = twins._lineage(repo, "HEAD", moved, x.id, set())
    versions = sorted(version for version, _ in past)
    assert versions == [1, 2]  # both versions engram wrote at the old path


def test_a_clone_that_edited_both_twins_merges_with_a_peer_that_joined_them(tmp_path: Path) -> None:
    """Fuzz seed 5013: a plain push published X in two files; a peer's sync joined them
    (one file removed, its lines in the other) while this clone edited both. The tree
    merge split the kept file's versions between the id and the path, and two files
    claimed one path: sync refused the merge, and the clone could not sync again."""
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    x = alice.create("Item X", "x body\n", domain=["team"]).item
    alice.sync()
    root = tmp_path / "alice"
    twin = "team/item-x-again.md"
    shutil.copy(root / x.path, root / twin)
    git(root, "add", twin)
    git(root, "commit", "--quiet", "--no-verify", "-m", "X twice")
    git(root, "push", "--quiet", "origin", "main")
    bob = clone_machine(tmp_path, origin, "bob")

    def add_line(repo: Path, rel: str, line: str) -> None:
        path = repo / rel
        path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")

    add_line(root, x.path, "alice's line")  # alice joins them by hand: one file stays
    git(root, "rm", "--quiet", twin)
    git(root, "commit", "--quiet", "--no-verify", "-am", "alice joins X")
    alice.sync()
    add_line(bob.root, x.path, "bob's first line")  # bob edits both
    add_line(bob.root, twin, "bob's second line")
    git(bob.root, "commit", "--quiet", "--no-verify", "-am", "bob edits both files of X")
    report = bob.sync()
    assert report.pushed and report.refused is None, report
    alice.sync()  # the twin arrives again, and alice's sync joins it
    bob.sync()
    assert held_twice(origin, "main") == {}
    files = [name for name in git(origin, "ls-tree", "-r", "--name-only", "main").stdout.split()
             if name.startswith("team/")]
    assert len(files) == 1
    text = git(origin, "show", f"main:{files[0]}").stdout
    assert all(line in text for line in ("x body", "alice's line", "bob's first line", "bob's second line")), text
    assert tracked(root) == tracked(bob.root)
    bob.close()
