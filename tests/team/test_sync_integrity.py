"""A clone never gets stuck and a half-written item is never published (issue 26.1, 26.4).

Each test starts from the issue's reproduction, against real git: a bare origin and
clones. The first two failed before the fix: the clone whose person deleted the last
line of an item was held back as "cut short" and then refused every sync with "a file
changed while sync was merging"; a new item whose frontmatter never closed was adopted
as a plain note and pushed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.team import held
from engram.team.gitstore import GitRepo
from engram.team.sync import PARTIAL_EXIT
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, clean, clone_machine, first_machine, git, tracked


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    (alice.root / "engram.yaml").write_text((alice.root / "engram.yaml").read_text() + "sync:\n  settleSeconds: 0.2\n")
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    return alice, bob


def shared_item(alice: Vault, bob: Vault, body: str = "line one\nline two\nline three\n") -> str:
    item = alice.create("Shared item", body, domain=["team"]).item
    alice.sync()
    bob.sync()
    assert item.path is not None
    return item.path


def edit(vault: Vault, rel: str, old: str, new: str) -> None:
    """A person's edit in a text editor: one line replaced (or deleted, with ``new`` empty)."""
    path = vault.root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def sync_cli(vault: Vault) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), "sync"])
    return out.exit_code, out.output


def content(vault: Vault, rel: str) -> str:
    vault.refresh()
    return (vault.root / rel).read_text()


def test_a_person_deleting_the_last_line_while_a_peer_edits_never_sticks_the_clone(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    rel = shared_item(alice, bob)
    (bob.root / rel).write_text((bob.root / rel).read_text() + "line four from bob\n")  # a peer appends
    bob.sync()
    edit(alice, rel, "line three\n", "")  # a person deletes the last line
    for _ in range(2):
        status, said = sync_cli(alice)
        assert status == 0, said
        assert "a file changed while sync was merging" not in said
    bob.sync()
    assert tracked(alice.root) == tracked(bob.root)
    assert clean(alice.root) and clean(bob.root)
    text = content(alice, rel)
    assert "line one" in text and "line two" in text and "line four from bob" in text  # nothing lost
    assert git(alice.root, "rev-parse", "HEAD").stdout == git(alice.root, "rev-parse", "origin/main").stdout


def test_deleting_the_first_or_a_middle_line_is_committed_as_the_persons_edit(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    rel = shared_item(alice, bob, "first\nmiddle\nlast\n")
    edit(alice, rel, "first\n", "")
    edit(alice, rel, "middle\n", "")
    report = alice.sync()
    assert not report.partial and report.committed == 1
    bob.sync()
    body = bob.get(alice.list(limit=None)[0].id).content
    assert body.strip() == "last"


def test_a_held_file_the_pull_changes_is_carried_across_it_and_merged_once_whole(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    rel = shared_item(alice, bob)
    edit(bob, rel, "line one\n", "line one, edited by bob\n")
    bob.sync()
    edit(alice, rel, "importance: 0.5\n", "importance: [oops\n")  # a typo: the file does not parse
    edit(alice, rel, "line three\n", "line three, edited by alice\n")
    other = alice.create("Unrelated", "goes out now\n", domain=["team"]).item
    status, said = sync_cli(alice)
    assert status == PARTIAL_EXIT, said
    assert f"held back {rel}: does not parse" in said and "then `engram sync`" in said
    assert "pushed to origin/main" in said  # everything else went out …
    assert "kept your uncommitted edit" in said
    assert other.path is not None and git(alice.root, "cat-file", "-e", f"origin/main:{other.path}", check=False).returncode == 0
    text = (alice.root / rel).read_text()
    assert "importance: [oops" in text and "line three, edited by alice" in text  # … and the edit is as typed
    assert "edited by bob" not in text  # the pulled version waits in HEAD, not mixed in yet
    edit(alice, rel, "importance: [oops\n", "importance: 0.7\n")  # the person fixes it
    status, said = sync_cli(alice)
    assert status == 0, said
    assert f"merged your edit to {rel}" in said
    bob.sync()
    text = content(bob, rel)
    assert "line one, edited by bob" in text and "line three, edited by alice" in text
    assert "importance: 0.7" in text
    assert tracked(alice.root) == tracked(bob.root) and clean(alice.root) and clean(bob.root)
    assert not (alice.state.state_dir / held.FOLDER / held.BASES).exists()


def test_an_edit_set_aside_by_a_killed_sync_is_put_back_by_the_next_one(pair: tuple[Vault, Vault]) -> None:
    """A sync killed after it set an edit aside and before it put it back: the journal
    finishes the work-tree update, and the next sync returns the edit to its file."""
    alice, bob = pair
    rel = shared_item(alice, bob)
    edit(bob, rel, "line one\n", "line one, edited by bob\n")
    bob.sync()
    edit(alice, rel, "importance: 0.5\n", "importance: [oops\n")
    mine = (alice.root / rel).read_bytes()
    git(alice.root, "fetch", "--quiet", "origin")
    with alice.state.lock.hold(), GitRepo(alice.root) as repo:
        aside = held.set_aside(repo, alice.state, "", repo.rev("HEAD"), repo.rev("origin/main") or "", {rel})
    assert rel in aside.files and (alice.root / rel).read_bytes() != mine
    git(alice.root, "merge", "--ff-only", "--quiet", "origin/main")  # what recovery finishes; then the kill
    report = alice.sync()
    assert any(rel in line and "interrupted" in line for line in report.recovered), report.recovered
    assert (alice.root / rel).read_bytes() == mine and [h.path for h in report.held] == [rel]


def test_a_new_item_whose_frontmatter_never_closes_is_held_and_doctor_names_it(pair: tuple[Vault, Vault]) -> None:
    alice, _bob = pair
    (alice.root / "team").mkdir(exist_ok=True)
    torn = alice.root / "team" / "half-written.md"
    torn.write_text("---\nid: 01JHALFWRITTEN0000000000000\ntitle: Half written\ndomainTags:\n  - team\nkind: fa")
    status, said = sync_cli(alice)
    assert status == PARTIAL_EXIT, said
    assert "held back team/half-written.md: does not parse" in said and "never closes" in said
    assert git(alice.root, "cat-file", "-e", "origin/main:team/half-written.md", check=False).returncode != 0
    report = alice.doctor()
    found = [p for p in report.problems if p.path == "team/half-written.md"]
    assert found and "never closes" in found[0].message, report.problems
    assert all(hit.path != "team/half-written.md" for hit in alice.list(limit=None))


def test_a_plain_note_that_starts_with_a_rule_is_still_adopted(pair: tuple[Vault, Vault]) -> None:
    """The rule is narrow: only ``---`` followed at once by ``id:`` reads as a torn item."""
    alice, _bob = pair
    (alice.root / "notes").mkdir(exist_ok=True)
    (alice.root / "notes" / "rule.md").write_text("---\nA horizontal rule, then text.\nid: not frontmatter\n")
    report = alice.sync()
    assert not report.partial
    assert git(alice.root, "cat-file", "-e", "origin/main:notes/rule.md", check=False).returncode == 0
    assert os.path.exists(alice.root / "notes" / "rule.md")


def test_a_last_line_deleted_and_pushed_with_plain_git_is_recorded_not_flagged_on_every_clone(
    pair: tuple[Vault, Vault],
) -> None:
    """Seed 10 of the issue-26 fuzz: a person deletes the last line in an editor and pushes
    with plain git (no hooks). Every clone that pulled it left the hash stale ("looks cut
    short") and doctor reported lost-content on all of them, after the team converged. The
    commit is the person's edit: the first clone to settle it records the hash, and the
    team ends doctor-clean."""
    alice, bob = pair
    rel = shared_item(alice, bob)
    edit(alice, rel, "line three\n", "")
    git(alice.root, "commit", "-qam", "a person deletes a line")
    git(alice.root, "push", "-q", "origin", "main")
    report = bob.sync()
    assert not report.held and not report.partial
    assert "line three" not in content(bob, rel) and "line two" in content(bob, rel)
    alice.sync()
    assert tracked(alice.root) == tracked(bob.root)
    for vault in (alice, bob):
        assert [p.code for p in vault.doctor().problems] == [], vault.root
        meta, text, _ = codec.parse_engram((vault.root / rel).read_bytes())
        assert meta["contentHash"] == codec.content_hash(text)


def test_a_pulled_item_cut_off_inside_a_line_is_still_never_blessed(pair: tuple[Vault, Vault]) -> None:
    """The other side of the rule above: a peer that pushes a file cut off in the middle of a
    line (a torn write committed by hand) leaves its hash stale on every clone, and doctor
    asks before keeping it."""
    alice, bob = pair
    rel = shared_item(alice, bob)
    path = alice.root / rel
    path.write_text(path.read_text().replace("line three\n", "line th"))
    git(alice.root, "commit", "-qam", "a torn write committed by hand")
    git(alice.root, "push", "-q", "origin", "main")
    bob.sync()
    meta, text, _ = codec.parse_engram((bob.root / rel).read_bytes())
    assert text.endswith("line th\n") and meta["contentHash"] != codec.content_hash(text)
    (problem,) = bob.doctor().problems
    assert problem.code == "lost-content" and problem.consent and "-line three" in (problem.diff or "")


def test_an_edit_committed_with_plain_git_on_a_clone_without_hooks_is_recorded_by_its_next_sync(
    pair: tuple[Vault, Vault],
) -> None:
    """Nobody else syncs after it: the clone that committed a person's edit with plain git
    (no hooks) pushed a stale hash, and before, no later sync of its own ever looked at it
    again — doctor said "the next sync records the edit" for ever."""
    alice, bob = pair
    rel = shared_item(alice, bob)
    edit(alice, rel, "line two\n", "line two, made clearer\n")
    git(alice.root, "commit", "-qam", "a person's edit")
    git(alice.root, "push", "-q", "origin", "main")
    alice.refresh()
    assert alice.adoption().edited_outside == (rel,)
    report = alice.sync()
    assert report.pushed and report.restamped == 1
    meta, text, _ = codec.parse_engram((alice.root / rel).read_bytes())
    assert meta["contentHash"] == codec.content_hash(text) and "made clearer" in text
    assert alice.adoption().edited_outside == ()
    assert clean(alice.root) and alice.doctor().problems == ()
    bob.sync()
    assert tracked(alice.root) == tracked(bob.root)
