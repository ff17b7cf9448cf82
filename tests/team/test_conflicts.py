"""Flagged items: listing them, resolving them, and the cross-file checks after a merge."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import Conflict, InvalidInput
from engram.store.format import render_engram
from engram.store.model import Engram
from engram.team import conflicts
from engram.vault import Vault
from mergedriver.merge import merge_file


def flag_by_merge(vault: Vault, title: str = "Answer") -> Engram:
    """An item whose two concurrent edits of one line were merged (callout + flag)."""
    item = vault.create(title, "the answer is 41\n").item
    assert item.path is not None
    path = vault.abspath(item.path)
    base = path.read_bytes()
    ours = render_engram(replace(item, content="the answer is 42\n", updated_by="alice", updated_at="2026-06-22T09:00:00.000Z", version=2))
    theirs = render_engram(replace(item, content="the answer is 43\n", updated_by="bob", updated_at="2026-06-22T10:00:00.000Z", version=2))
    path.write_bytes(merge_file(base, ours, theirs, item.path).data)
    vault.refresh()
    return vault.get(item.id)


def test_flagged_lists_items_with_their_notes_and_callouts(vault: Vault) -> None:
    vault.create("Calm", "nothing to see")
    item = flag_by_merge(vault)
    (found,) = vault.conflicts()
    assert (found.id, found.path, found.callouts) == (item.id, item.path, 1)
    assert found.notes[0].startswith("content: both sides changed the same lines")


def test_resolve_refuses_while_a_conflict_block_remains(vault: Vault) -> None:
    item = flag_by_merge(vault)
    with pytest.raises(Conflict, match="still holds 1 conflict block"):
        vault.resolve_conflict(item.id)
    assert vault.get(item.id).merge_conflicts  # unchanged


def test_resolve_after_editing_clears_the_flag_as_a_new_version(vault: Vault) -> None:
    item = flag_by_merge(vault)
    vault.update(item.id, {"content": "the answer is 42\n"})
    before = vault.get(item.id)
    resolved = vault.resolve_conflict(item.id)
    assert resolved.merge_conflicts is None and resolved.version == before.version + 1
    assert resolved.updated_by == vault.actor
    assert vault.conflicts() == []
    assert [e.action for e in vault.history(item.id)][-1] == "resolve"
    with pytest.raises(InvalidInput, match="is not flagged"):
        vault.resolve_conflict(item.id)


def test_force_clears_the_flag_and_keeps_the_blocks(vault: Vault) -> None:
    item = flag_by_merge(vault)
    resolved = vault.resolve_conflict(item.id, force=True)
    assert resolved.merge_conflicts is None and "> [!conflict]" in resolved.content


def test_checks_report_superseded_items_that_are_still_active(vault: Vault) -> None:
    old = vault.create("Old way", "old").item
    new = vault.create("New way", "new").item
    vault.link(new.id, "supersedes", old.id)
    codes = [(f.code, f.path) for f in conflicts.checks(vault.state)]
    assert ("superseded_active", old.path) in codes
    vault.update(old.id, {"status": "superseded"})
    assert all(f.code != "superseded_active" for f in conflicts.checks(vault.state))


def test_the_conflicts_command_lists_and_resolves(vault: Vault) -> None:
    item = flag_by_merge(vault)
    runner = CliRunner()
    base = ["--vault", str(vault.root), "conflicts"]
    out = runner.invoke(cli, base)
    assert out.exit_code == 0 and f"{item.id}  {item.path}  (1 conflict block(s))" in out.output
    listed = json.loads(runner.invoke(cli, [*base, "--json"]).output)
    assert listed[0]["id"] == item.id and listed[0]["callouts"] == 1
    out = runner.invoke(cli, [*base, "--resolve", item.id])
    assert out.exit_code == 4 and "still holds 1 conflict block(s)" in out.output
    out = runner.invoke(cli, [*base, "--resolve", item.id, "--force"])
    assert out.exit_code == 0 and f"resolved {item.id}" in out.output
    assert runner.invoke(cli, base).output.strip() == "no flagged items"
