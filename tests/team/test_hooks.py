"""The post-merge and post-rewrite hooks: installed without clobbering, run by a real
``git pull`` and ``git pull --rebase``."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import Conflict
from engram.team import hooks
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, clone_machine, commit_all, first_machine, git

USER_HOOK = '#!/bin/sh\necho "user hook ran with $1" >> "$(git rev-parse --show-toplevel)/../user-hook.log"\n'


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Vault, Vault]:
    origin = bare_origin(tmp_path)
    return first_machine(tmp_path, origin, "alice"), clone_machine(tmp_path, origin, "bob")


def user_hook(vault: Vault, hook: str = "post-merge") -> Path:
    path = vault.root / ".git" / "hooks" / hook
    path.write_text(USER_HOOK)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_install_writes_executable_hooks_and_status_reports_them(vault: Vault) -> None:
    merge, rewrite = hooks.install(vault.root)
    assert (merge.hook, rewrite.hook) == ("post-merge", "post-rewrite")
    for st in (merge, rewrite):
        assert st.installed and st.current and not st.chained
        assert st.path == (vault.root / ".git" / "hooks" / st.hook).resolve()
        assert st.path.stat().st_mode & stat.S_IXUSR
    assert hooks.install(vault.root) == (merge, rewrite)  # idempotent
    assert not any(st.installed for st in hooks.uninstall(vault.root))
    assert not merge.path.exists() and not rewrite.path.exists()


def test_an_existing_hook_is_chained_and_restored_byte_for_byte(vault: Vault) -> None:
    path = user_hook(vault)
    merge, _ = hooks.install(vault.root)
    assert merge.installed and merge.chained
    assert (path.parent / hooks.chained_name("post-merge")).read_text() == USER_HOOK
    hooks.uninstall(vault.root)
    assert path.read_text() == USER_HOOK and not (path.parent / hooks.chained_name("post-merge")).exists()


def test_install_refuses_when_it_cannot_chain_without_clobbering(vault: Vault) -> None:
    path = user_hook(vault, "post-rewrite")
    (path.parent / hooks.chained_name("post-rewrite")).write_text("#!/bin/sh\n")
    with pytest.raises(Conflict, match="already exists"):
        hooks.install(vault.root)
    assert path.read_text() == USER_HOOK
    assert not (path.parent / "post-merge").exists()  # refused before writing anything


def test_core_hooks_path_is_honoured(vault: Vault) -> None:
    git(vault.root, "config", "core.hooksPath", "githooks")
    merge, _ = hooks.install(vault.root)
    assert merge.path == (vault.root / "githooks" / "post-merge").resolve() and merge.path.exists()


def test_after_git_pull_the_hook_settles_runs_the_users_hook_and_reports_problems(
    pair: tuple[Vault, Vault], tmp_path: Path
) -> None:
    alice, bob = pair
    x = alice.create("X", "x").item
    answer = alice.create("Answer", "the answer is 41\n").item
    alice.sync()
    bob.sync()
    user_hook(bob)
    hooks.install(bob.root)
    edge = {"id": "syn-0000000000000001", "from": x.id, "to": "01NOSUCHITEM0000000000000A", "kind": "causes"}
    (alice.root / "synapses" / "causes").mkdir(parents=True)
    (alice.root / "synapses" / "causes" / "syn-0000000000000001.yaml").write_bytes(codec.render_synapse(edge))
    alice.update(answer.id, {"content": "the answer is 42\n"})
    bob.update(answer.id, {"content": "the answer is 43\n"})
    commit_all(alice)
    commit_all(bob)
    git(alice.root, "push", "--quiet")
    proc = git(bob.root, "pull", "--no-rebase", "--no-edit")
    said = proc.stdout + proc.stderr  # git sends a hook's output to stderr
    # The edge to nothing followed the rule doctor --fix applies: it went to the trash.
    assert "1 link(s) to deleted items moved to the trash" in said
    assert not (bob.root / "synapses" / "causes").exists()
    assert list((bob.state.state_dir / "trash").rglob("syn-0000000000000001.yaml"))
    # What a person must decide is still reported.
    assert "1 thing(s) to look at after this merge" in said
    assert "flagged by a merge" in said and answer.id in said
    assert (tmp_path / "user-hook.log").read_text() == "user hook ran with 0\n"
    bob.refresh()
    assert [p.code for p in bob.doctor().problems] == ["merge-conflict"]


def test_sync_skips_engrams_part_of_the_hook_but_still_runs_the_users(
    pair: tuple[Vault, Vault], tmp_path: Path
) -> None:
    alice, bob = pair
    user_hook(bob)
    hooks.install(bob.root)
    alice.create("New on alice", "x")
    alice.sync()
    report = bob.sync()
    assert report.fast_forward
    assert (tmp_path / "user-hook.log").read_text() == "user hook ran with 0\n"


def test_after_git_pull_rebase_the_rewrite_hook_reports(pair: tuple[Vault, Vault], tmp_path: Path) -> None:
    alice, bob = pair
    answer = alice.create("Answer", "the answer is 41\n").item
    alice.sync()
    bob.sync()
    user_hook(bob, "post-rewrite")
    hooks.install(bob.root)
    alice.update(answer.id, {"content": "the answer is 42\n"})
    bob.update(answer.id, {"content": "the answer is 43\n"})
    commit_all(alice)
    commit_all(bob)
    git(alice.root, "push", "--quiet")
    proc = git(bob.root, "pull", "--rebase")
    said = proc.stdout + proc.stderr
    assert "thing(s) to look at after this rebase" in said and "flagged by a merge" in said
    assert (tmp_path / "user-hook.log").read_text() == "user hook ran with rebase\n"


def test_the_hooks_commands(vault: Vault) -> None:
    runner = CliRunner()
    base = ["--vault", str(vault.root), "hooks"]
    out = runner.invoke(cli, [*base, "status"])
    assert out.exit_code == 0 and "post-merge hook: not installed" in out.output
    assert "post-rewrite hook: not installed" in out.output
    out = runner.invoke(cli, [*base, "install", "--json"])
    data = json.loads(out.output)
    assert out.exit_code == 0 and data["post-merge"]["installed"] and data["post-rewrite"]["installed"]
    out = runner.invoke(cli, [*base, "uninstall"])
    assert out.exit_code == 0 and "not installed" in out.output


def test_the_hook_entry_point_rejects_wrong_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert hooks._main(["post-merge"]) == 2
    assert "usage: python -m engram.team.hooks post-merge|post-rewrite --vault PATH" in capsys.readouterr().err


def test_a_merge_that_moved_nothing_is_not_checked_but_a_squash_is(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    """git runs the hook only after a merge that brought something; when ``ORIG_HEAD`` is
    ``HEAD`` all the same, nothing arrived to settle, screen or report (``engram doctor``
    lists what was there before), so the hook stops after one ``git rev-parse``."""
    vault.create("A note", "Some text.")
    commit_all(vault)
    assert hooks.moved(vault.root)  # no ORIG_HEAD: git cannot tell, so the full check runs
    git(vault.root, "update-ref", "ORIG_HEAD", "HEAD")
    assert not hooks.moved(vault.root)
    (vault.root / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    assert hooks.report(vault.root, "post-merge") == 0
    assert capsys.readouterr().out == ""  # the broken file was there before this merge
    git(vault.root, "switch", "--quiet", "-c", "other")
    (vault.root / "later.md").write_text("A later note.\n", encoding="utf-8")
    git(vault.root, "add", "later.md")
    git(vault.root, "commit", "--quiet", "-m", "later")
    git(vault.root, "switch", "--quiet", "-")
    git(vault.root, "merge", "--squash", "--quiet", "other")  # HEAD stays; the work tree changes
    assert hooks.moved(vault.root)
    assert hooks.report(vault.root, "post-merge") == 0
    assert "thing(s) to look at after this merge" in capsys.readouterr().out
