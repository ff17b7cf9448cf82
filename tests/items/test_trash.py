"""The trash: restore brings an item and its synapses back (audited), list shows what it
holds, purge lets old copies go for good."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import Forbidden, InvalidInput, NotFound
from engram.vault import Vault
from tests.conftest import snapshot
from tests.trust.settings import add_settings


def test_delete_then_restore_gives_back_the_same_files(vault: Vault) -> None:
    a = vault.create("Prefer immutable values", "frozen", domain=["eng"])
    b = vault.create("Copy with replace()", "dataclasses.replace", domain=["eng"])
    vault.link(b.id, "extends", a.id, evidence="same idea")
    before = snapshot(vault)
    vault.delete(a.id)
    assert vault.synapses() == [] and [e.id for e in vault.trash()] == [a.id]
    restored = vault.restore_deleted(a.id[:8])
    assert restored.path == a.item.path and len(restored.synapses) == 1 and restored.left == ()
    assert snapshot(vault) == before  # the item, its edge and both derived sections, byte for byte
    assert vault.trash() == []
    assert [e.action for e in vault.history(a.id)][-2:] == ["delete", "restore"]
    assert vault.search("immutable values").hits[0].id == a.id


def test_restore_keeps_edges_to_deleted_neighbours_in_the_trash(vault: Vault) -> None:
    a = vault.create("A note", "a")
    b = vault.create("B note", "b")
    vault.link(a.id, "depends_on", b.id)
    vault.delete(a.id)
    vault.delete(b.id)
    done = vault.restore_deleted(a.id)
    assert done.synapses == () and len(done.left) == 1
    assert vault.synapses() == []
    done_b = vault.restore_deleted(b.id)
    assert done_b.synapses == () and vault.synapses() == []  # the edge went to a's bin; b's has none


def test_restore_never_overwrites(vault: Vault) -> None:
    a = vault.create("Kept", "v1", domain=["x"])
    vault.delete(a.id)
    other = vault.create("Kept", "a different note now holds the path", domain=["x"])
    done = vault.restore_deleted(a.id)
    assert done.path != other.item.path and vault.get(other.id).content.startswith("a different")
    with pytest.raises(NotFound, match="the trash holds no item"):
        vault.restore_deleted(a.id)
    # the id came back another way (a teammate's copy arrived with a sync): refused
    vault.delete(a.id)
    [entry] = vault.trash()
    (vault.root / "x" / "from-a-peer.md").write_bytes((entry.folder / entry.path).read_bytes())
    vault.refresh()
    with pytest.raises(InvalidInput, match="is in the vault already"):
        vault.restore_deleted(a.id)
    assert [e.id for e in vault.trash()] == [a.id]  # the trashed copy stays where it was


def test_purge_by_age_and_cli(vault: Vault) -> None:
    old = vault.create("Old", "x")
    new = vault.create("New", "y")
    vault.delete(old.id)
    [bin_dir] = [e.folder for e in vault.trash()]
    aged = bin_dir.parent / "2020-01-01T00-00-00.000Z"
    bin_dir.rename(aged)
    vault.delete(new.id)
    assert [e.id for e in vault.trash()] == [new.id, old.id]
    assert [e.id for e in vault.purge_trash(timedelta(days=30), dry_run=True)] == [old.id]
    run = CliRunner()
    listed = run.invoke(cli, ["--vault", str(vault.root), "trash", "list"])
    assert f"{old.id}  2020-01-01T00:00:00.000Z  Old  (old.md, 0 synapse(s))" in listed.stdout
    refused = run.invoke(cli, ["--vault", str(vault.root), "trash", "purge", "--older-than", "30d"])
    assert refused.exit_code == 2 and "without confirmation" in refused.stderr
    done = run.invoke(cli, ["--vault", str(vault.root), "trash", "purge", "--older-than", "30d", "--yes"])
    assert done.exit_code == 0 and "purged 1 item(s)" in done.stdout
    assert [e.id for e in vault.trash()] == [new.id] and not aged.exists()
    assert [e.action for e in vault.state.audit.entries(old.id)][-1] == "purge"
    back = run.invoke(cli, ["--vault", str(vault.root), "restore", new.id])
    assert back.exit_code == 0 and f"{new.id} restored from the trash (new.md, 0 synapse(s)), active" in back.stdout
    bad = run.invoke(cli, ["--vault", str(vault.root), "trash", "purge", "--older-than", "soon"])
    assert bad.exit_code == 2 and "is not an age" in bad.stderr


def test_a_purged_item_restored_from_the_trash_is_back_in_one_step(vault: Vault) -> None:
    """purge trashes a *forgotten* item, and restoring it brought it back still
    ``forgotten``: hidden, and a second ``restore`` was needed (issue 29, item 9)."""
    item = vault.create("Rotate the signing key yearly", "The HSM holds it.").item
    vault.forget(item.id)
    vault.purge(item.id)
    done = vault.restore_deleted(item.id)
    back = vault.get(item.id)
    assert (done.status, back.status) == ("active", "active") and done.path == item.path
    assert [i.id for i in vault.list()] == [item.id]
    assert vault.search("signing key", record=False).hits[0].id == item.id
    assert [e.action for e in vault.history(item.id)][-3:] == ["purge", "restore", "update"]
    # The CLI says what it is now, in one call.
    vault.forget(item.id)
    vault.purge(item.id)
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), "restore", item.id, "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["status"] == "active"


def test_a_restored_item_with_a_successor_comes_back_superseded(vault: Vault) -> None:
    old = vault.learn("Access tokens are valid for 1 hour.").item
    new = vault.learn("Access tokens are valid for 15 minutes.").item
    assert old is not None and new is not None
    vault.forget(old.id)
    vault.purge(old.id)
    assert vault.restore_deleted(old.id).status == "superseded" and vault.get(old.id).status == "superseded"


def test_a_writer_may_not_restore_another_authors_purged_item(vault: Vault) -> None:
    """Bringing back another author's deleted item is undoing their deletion: whoever may
    delete it may restore it (its author, a curator). The refusal moves nothing, names
    who may, and is audited (issue 29; it used to come back, forgotten, to anyone)."""
    add_settings(vault.root, 'roles:\n  "*": writer\n')
    with Vault.open(vault.root, actor="ana") as ana:
        item = ana.create("Rotate the signing key yearly", "The HSM holds it.").item
        ana.forget(item.id)
        ana.purge(item.id)
    with Vault.open(vault.root, actor="bo") as bo:
        with pytest.raises(Forbidden) as refused:
            bo.restore_deleted(item.id)
        assert refused.value.rule == "role.others-item" and "which ana created" in refused.value.message
        assert bo.in_trash(item.id) and bo.list(include_hidden=True) == []
        assert [(e.actor, e.action, e.rule) for e in bo.audit(refused=True)] == [("bo", "restore", "role.others-item")]
    with Vault.open(vault.root, actor="ana") as ana:
        assert ana.restore_deleted(item.id).status == "active"
