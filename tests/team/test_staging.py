"""``engram sync`` commits only what is whole (issue 16.1), against real git."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.lifecycle.proposals import propose
from engram.recall.usage import journal_for
from engram.team.gitstore import GitRepo
from engram.team.staging import index_of_head
from engram.team.sync import PARTIAL_EXIT
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, clone_machine, commit_all, first_machine, git, tracked


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    (alice.root / "engram.yaml").write_text((alice.root / "engram.yaml").read_text() + "sync:\n  settleSeconds: 0.3\n")
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    return alice, bob


def committed(vault: Vault, rel: str) -> bytes | None:
    out = git(vault.root, "show", f"HEAD:{rel}", check=False)
    return out.stdout.encode() if out.returncode == 0 else None


def long_item(vault: Vault) -> tuple[str, str]:
    body = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(40))
    item = vault.create("Long note", body, domain=["notes"]).item
    assert item.path is not None
    return item.id, item.path


def test_a_half_written_item_is_not_committed_and_the_peers_copy_stays_intact(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item_id, rel = long_item(alice)
    alice.sync()
    bob.sync()
    good = (bob.root / rel).read_bytes()
    full = (alice.root / rel).read_bytes()
    (alice.root / rel).write_bytes(full[: len(full) // 2])  # an editor or a crash stopped half-way
    other = alice.create("Unrelated", "fine\n").item
    report = alice.sync()
    assert report.partial and [h.path for h in report.held] == [rel]
    assert "cut off in the middle of a line" in report.held[0].reason and "engram doctor" in report.held[0].reason
    assert committed(alice, rel) == full  # the commit kept the whole version
    assert other.path is not None and committed(alice, other.path) is not None  # the rest went out
    bob.sync()
    assert (bob.root / rel).read_bytes() == good
    assert bob.get(item_id).content.count("\n") == 40


def test_sync_exits_partial_and_names_what_it_held(pair: tuple[Vault, Vault]) -> None:
    alice, _ = pair
    (alice.root / "notes").mkdir(exist_ok=True)
    (alice.root / "notes" / "broken.md").write_text("---\nid: 01BROKEN\ntitle: [unclosed\n---\nbody\n")
    (alice.root / "notes" / ".idea.md.swp").write_bytes(b"\x00vim swap")
    outside = alice.root.parent / "outside.md"
    outside.write_text("not in the vault\n")
    os.symlink(outside, alice.root / "notes" / "zero.md")
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(alice.root), "sync", "--json"])
    assert out.exit_code == PARTIAL_EXIT, out.output
    data = json.loads(out.output)
    held = {h["path"]: h["reason"] for h in data["held"]}
    assert data["partial"] and data["pushed"]
    assert held["notes/broken.md"].startswith("does not parse")
    assert held["notes/.idea.md.swp"] == "an editor's temporary file"
    assert held["notes/zero.md"].startswith("a symbolic link")
    files = git(alice.root, "ls-files").stdout.split()
    assert not [f for f in files if f.startswith("notes/")]
    out = runner.invoke(cli, ["--vault", str(alice.root), "sync"])
    assert out.exit_code == PARTIAL_EXIT and "held back notes/broken.md: does not parse" in out.output


def test_an_item_emptied_or_stripped_of_its_frontmatter_is_held(pair: tuple[Vault, Vault]) -> None:
    alice, _ = pair
    a = alice.create("Will be emptied", "x\n").item
    b = alice.create("Will lose its frontmatter", "y\n").item
    alice.sync()
    assert a.path and b.path
    (alice.root / a.path).write_bytes(b"")
    (alice.root / b.path).write_text("just text now\n")
    report = alice.sync()
    assert {h.path for h in report.held} == {a.path, b.path}
    assert all("no longer an engram item" in h.reason for h in report.held)
    assert committed(alice, a.path) is not None and b"id:" in (committed(alice, b.path) or b"")


def test_a_plain_note_without_frontmatter_is_shared(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    (alice.root / "notes").mkdir(exist_ok=True)
    (alice.root / "notes" / "scratch.md").write_text("# Scratch\n\nno frontmatter here\n")
    assert not alice.sync().partial
    bob.sync()
    assert (bob.root / "notes" / "scratch.md").read_text() == "# Scratch\n\nno frontmatter here\n"


def test_a_file_still_being_written_waits_for_the_next_sync(pair: tuple[Vault, Vault]) -> None:
    alice, _ = pair
    (alice.root / "notes").mkdir(exist_ok=True)
    growing = alice.root / "notes" / "log.md"
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            with growing.open("a") as fh:
                fh.write(f"entry {n}\n")
            n += 1
            time.sleep(0.02)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.05)
        report = alice.sync()
    finally:
        stop.set()
        thread.join()
    assert [h.path for h in report.held] == ["notes/log.md"]
    assert report.held[0].reason.startswith("still being written")
    assert committed(alice, "notes/log.md") is None
    time.sleep(0.35)
    assert not alice.sync().partial
    assert committed(alice, "notes/log.md") == growing.read_bytes()


def test_a_body_edited_in_an_editor_is_recorded_and_every_other_byte_is_kept(pair: tuple[Vault, Vault]) -> None:
    alice, bob = pair
    item = alice.create("Edited by hand", "first line\n").item
    alice.sync()
    assert item.path is not None
    path = alice.root / item.path
    # a person adds trailing spaces, a tab, a line and a comment in the frontmatter
    text = path.read_text().replace("first line\n", "first line  \nsecond line\t\n")
    text = text.replace("kind: observation\n", "kind: observation  # kept as written\n")
    path.write_text(text)
    report = alice.sync()
    assert report.restamped == 1 and not report.partial
    after = path.read_text()
    assert "kind: observation  # kept as written\n" in after and "first line  \nsecond line\t\n" in after
    meta, content, _ = codec.parse_engram(after.encode())
    assert meta["contentHash"] == codec.content_hash(content) and meta["version"] == item.version + 1
    changed = {a.split(":")[0] for a, b in zip(text.splitlines(), after.splitlines(), strict=False) if a != b}
    assert changed <= {"contentHash", "contentSize", "version", "updatedAt", "updatedBy"}
    bob.sync()
    assert tracked(alice.root) == tracked(bob.root)
    assert alice.doctor().problems == () and bob.doctor().problems == ()


def test_files_outside_the_vault_and_staged_work_stay_out_of_syncs_commit(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    repo = tmp_path / "mono"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "remote", "add", "origin", str(origin))
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "add", "app.py")  # staged by the person, not engram's business
    vault = Vault.init(repo / "memory", actor="alice")
    vault.create("In the vault", "x\n")
    vault.sync()
    assert "app.py" not in git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.split()
    assert git(repo, "diff", "--cached", "--name-only").stdout.split() == ["app.py"]  # still staged
    # Again with a history: sync's index now starts from a copy of the real one.
    (repo / "app.py").write_text("print('hello')\n")
    git(repo, "add", "app.py")
    vault.create("Also in the vault", "y\n")
    vault.sync()
    assert "app.py" not in git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.split()
    assert len(git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.split("memory/")) > 2
    assert git(repo, "diff", "--cached", "--name-only").stdout.split() == ["app.py"]
    assert git(repo, "show", ":app.py").stdout == "print('hello')\n"


def _stat_data(root: Path, index: Path) -> dict[str, tuple[str, str]]:
    """Each entry's (ctime, mtime) as the index at ``index`` records them."""
    out = subprocess.run(
        ["git", "ls-files", "--debug"], cwd=root, capture_output=True, text=True, check=True,
        env={**os.environ, "GIT_INDEX_FILE": str(index)},
    ).stdout
    found: dict[str, tuple[str, str]] = {}
    name = ""
    for line in out.splitlines():
        if not line.startswith(" "):
            name = line
        elif line.strip().startswith("ctime:"):
            ctime = line.split("ctime:")[1].split()[0]
        elif line.strip().startswith("mtime:"):
            found[name] = (ctime, line.split("mtime:")[1].split()[0])
    return found


@pytest.mark.parametrize("real_index", ["as git left it", "staged work", "conflicts", "missing"])
def test_syncs_commit_index_is_heads_tree_and_keeps_gits_stat_data(tmp_path: Path, real_index: str) -> None:
    """Sync's commit is built from HEAD's tree alone, whatever the real index holds; where
    the real index can be merged from, the entries keep their stat data, so the commit's
    refresh does not hash the whole work tree again (issue 30: 2.2 GB at a million items)."""
    vault = Vault.init(tmp_path / "v", actor="alice")
    first = vault.create("First", "one\n").item
    second = vault.create("Second", "two\n").item
    assert first.path is not None and second.path is not None
    commit_all(vault)
    root = vault.root
    if real_index == "staged work":
        (root / first.path).write_text((root / first.path).read_text() + "a person's line\n")
        (root / "scratch.txt").write_text("new\n")
        git(root, "add", first.path, "scratch.txt")
        git(root, "rm", "--cached", "--quiet", second.path)
    elif real_index == "conflicts":
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input="theirs\n",
                              capture_output=True, text=True, check=True).stdout.strip()
        info = "".join(f"100644 {blob} {stage}\t{first.path}\0" for stage in (1, 2, 3))
        subprocess.run(["git", "update-index", "-z", "--index-info"], cwd=root, input=info, text=True, check=True)
        assert git(root, "ls-files", "--unmerged").stdout
    elif real_index == "missing":
        (root / ".git" / "index").unlink()
    head = git(root, "rev-parse", "HEAD").stdout.strip()
    target = root / ".git" / "sync-test-index"
    with GitRepo(root) as repo:
        index_of_head(repo, target, head)
    env = {**os.environ, "GIT_INDEX_FILE": str(target)}
    tree = subprocess.run(["git", "write-tree"], cwd=root, env=env, capture_output=True, text=True, check=True)
    assert tree.stdout.strip() == git(root, "rev-parse", "HEAD^{tree}").stdout.strip()
    assert not subprocess.run(["git", "ls-files", "--unmerged"], cwd=root, env=env, capture_output=True,
                              text=True, check=True).stdout
    stats = _stat_data(root, target)
    assert set(stats) == set(git(root, "ls-tree", "-r", "--name-only", "HEAD").stdout.split())
    kept = {name for name, (ctime, mtime) in stats.items() if mtime != "0:0"}
    if real_index == "as git left it":
        assert kept == set(stats)
    elif real_index == "staged work":  # what the person staged is HEAD's again, without stat data
        assert kept == set(stats) - {first.path, second.path}
    else:  # nothing git could merge from: the bare read-tree, as before
        assert kept == set()
    if real_index == "staged work":  # the person's staged work is still theirs, in the real index
        staged = git(root, "diff", "--cached", "--name-only").stdout.split()
        assert sorted(staged) == sorted([first.path, second.path, "scratch.txt"])


@pytest.mark.parametrize("journal", ["usage", "feedback", "neighbour"])
def test_sync_never_blesses_a_cut_short_item_while_it_folds_or_refreshes_links(
    pair: tuple[Vault, Vault], journal: str
) -> None:
    """What sync writes before it commits — the usage and feedback journals folded into
    frontmatter, link sections of a renamed item's neighbours — must not record a
    half-written body as the item's content: its hash stays stale, so staging vets it."""
    alice, bob = pair
    item_id, rel = long_item(alice)
    other = alice.create("Neighbour", "links here\n", domain=["notes"]).item
    alice.link(other.id, "extends", item_id)
    alice.sync()
    bob.sync()
    full = (alice.root / rel).read_bytes()
    (alice.root / rel).write_bytes(full[: len(full) // 2])  # an editor still saving
    if journal == "usage":
        alice.state.index.refresh_paths([rel])
        journal_for(alice.state).record([(item_id, 1.0)], by="agent")
    elif journal == "feedback":
        alice.feedback(item_id, "helped")
    else:
        alice.update(other.id, {"title": "Neighbour renamed"})  # rewrites the link section of rel
    report = alice.sync()
    assert [h.path for h in report.held] == [rel] and "cut off in the middle of a line" in report.held[0].reason
    assert committed(alice, rel) == full
    meta, content, _ = codec.parse_engram((alice.root / rel).read_bytes())
    assert meta["contentHash"] != codec.content_hash(content), "the truncated body was blessed"
    bob.sync()
    assert bob.get(item_id).content.count("\n") == 40


def test_torn_proposals_synapses_and_settings_are_held_and_the_peer_keeps_its_copy(pair: tuple[Vault, Vault]) -> None:
    """The other files the features write into the shared tree — lifecycle and capture
    proposals, synapses, engram.yaml — are vetted with their own readers too."""
    alice, bob = pair
    x = alice.create("Old lesson", "x\n").item
    y = alice.create("New lesson", "y\n").item
    edge = alice.link(x.id, "extends", y.id)
    proposal, _ = propose(alice.state, "archive", [x.id], title="Archive the old lesson", reason="it failed")
    alice.sync()
    bob.sync()
    torn = [
        f"proposals/archive/{proposal.id}.yaml",
        next(p.relative_to(alice.root).as_posix() for p in (alice.root / "synapses").rglob(f"{edge.id}.yaml")),
        "engram.yaml",
    ]
    before = {rel: (bob.root / rel).read_bytes() for rel in torn}
    for rel in torn:
        data = (alice.root / rel).read_bytes()
        # A write cut off mid-value (on a line of its own: the cut may fall in a comment).
        (alice.root / rel).write_bytes(data[: len(data) // 2] + b"\ncut: [\n")
    report = alice.sync()
    assert {h.path for h in report.held} == set(torn), report.held
    assert all(h.reason.startswith("does not parse") for h in report.held)
    bob.sync()
    assert {rel: (bob.root / rel).read_bytes() for rel in torn} == before


def test_the_files_init_laid_are_not_waited_for_but_a_persons_edit_is(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The template's files are whole when their bytes are the template's (`engram init`
    wrote them atomically): a sync right after init commits them without waiting out the
    settle window. A file a person just changed is still looked at twice."""
    from engram.team import staging

    waits: list[float] = []
    monkeypatch.setattr(staging.time, "sleep", waits.append)
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")  # init, then the first sync at once
    assert waits == []
    assert {".gitattributes", ".gitignore", "README.md", "engram.yaml"} <= set(tracked(alice.root))
    readme = alice.root / "README.md"
    readme.write_text(readme.read_text() + "Our own line.\n")
    alice.sync()
    assert waits == [1.0]  # the person's edit waited out the window
    assert b"Our own line." in (committed(alice, "README.md") or b"")


def test_a_file_only_touched_is_not_a_change_to_wait_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sync lists what changed with one `git status`, which refreshes the index's stat
    data: a file whose bytes are what HEAD holds but whose time moved (an editor that
    saved without a change, a `touch`, a checkout elsewhere) is not reported, so it is
    neither vetted nor waited for, and nothing is committed."""
    from engram.team import staging

    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    head = git(alice.root, "rev-parse", "HEAD").stdout.strip()
    for rel in ("README.md", "engram.yaml"):
        os.utime(alice.root / rel)  # now: inside the settle window
    waits: list[float] = []
    monkeypatch.setattr(staging.time, "sleep", waits.append)
    with GitRepo(alice.root) as repo:
        assert staging.uncommitted(repo, "", head) == set()
    report = alice.sync()
    assert waits == []
    assert report.committed == 0
    assert git(alice.root, "rev-parse", "HEAD").stdout.strip() == head


def test_the_changed_files_keep_their_head_blob_when_git_lists_them_twice(tmp_path: Path) -> None:
    """After `git rm --cached`, `git status` lists a file both as deleted from the index
    and as untracked; sync still knows what HEAD held there (its checks compare with it)."""
    from engram.team import staging

    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    git(alice.root, "rm", "--quiet", "--cached", "README.md")
    (alice.root / "notes.txt").write_text("new\n")
    blob = git(alice.root, "rev-parse", "HEAD:README.md").stdout.strip()
    with GitRepo(alice.root) as repo:
        listed = staging._candidates(repo, "", repo.rev("HEAD"))
    assert listed == {"README.md": blob, "notes.txt": None}
