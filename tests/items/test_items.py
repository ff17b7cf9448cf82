"""Items in a real vault: create/dedup, get, update with versions, moves, delete, list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.errors import InvalidInput, NotFound, UnknownKind, VaultNotFound, VersionConflict
from engram.store.format import read_engram
from engram.vault import Vault
from tests.conftest import snapshot


def audit_lines(vault: Vault) -> list[dict[str, object]]:
    path = vault.state.state_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ---------------------------------------------------------------------- create


def test_create_writes_one_canonical_file_where_domain_and_title_say(vault: Vault) -> None:
    result = vault.create(
        "Use pg_repack, not VACUUM FULL",
        "VACUUM FULL locks the table.",
        domain=["Ops", "Postgres"],
        kind="procedure",
        tags=["#Postgres", "maintenance"],
        importance=0.8,
    )
    assert result.outcome == "NEW"
    item = result.item
    assert item.path == "ops/postgres/use-pg_repack-not-vacuum-full.md"
    on_disk, derived = read_engram(vault.root / item.path, item.path)
    assert on_disk.id == item.id and len(item.id) == 26
    assert on_disk.version == 1 and on_disk.tags == ("postgres", "maintenance")
    assert on_disk.created_by == "tester" and on_disk.content == "VACUUM FULL locks the table.\n"
    assert on_disk.content_hash.startswith("sha256:") and derived == ""
    assert [e["action"] for e in audit_lines(vault)] == ["create"]
    assert audit_lines(vault)[0]["id"] == item.id


def test_same_title_gets_a_distinct_path_and_keeps_both(vault: Vault) -> None:
    a = vault.create("Deploy checklist", "Staging first.", domain=["ops"])
    b = vault.create("Deploy checklist", "Announce in #ops, then roll out by region.", domain=["ops"])
    assert a.outcome == b.outcome == "NEW"
    assert a.item.path == "ops/deploy-checklist.md"
    assert b.item.path == f"ops/deploy-checklist-{b.id[-6:].lower()}.md"
    assert {i.id for i in vault.list()} == {a.id, b.id}


def test_identical_content_is_a_duplicate_that_reinforces_the_original(vault: Vault) -> None:
    first = vault.create("Cache keys need a version", "Prefix keys with v2:.", domain=["eng"])
    before = snapshot(vault)
    again = vault.create("cache keys need a VERSION", "Prefix keys with  v2:", domain=["elsewhere"])
    assert again.outcome == "DUPLICATE" and again.id == first.id
    assert again.item.reinforcement_score == 1.0 and again.item.version == 2
    after = snapshot(vault)
    assert set(after) == set(before)  # no new file
    assert after[first.item.path] != before[first.item.path]  # the original was reinforced
    assert [e["action"] for e in audit_lines(vault)] == ["create", "reinforce"]


def test_near_identical_content_is_a_learn_decision_that_never_overwrites(vault: Vault) -> None:
    first = vault.create(
        "Retry idempotent HTTP calls with jittered backoff",
        "Sleep a random time in [0, base * 2**attempt], cap it at 30 s, give up after 5 attempts.",
    )
    before = snapshot(vault)
    near = vault.create(
        "Retry idempotent HTTP calls with jittered backoff",
        "Sleep a random time in [0, base * 2**attempt], cap it at 30 s, and give up after 5 tries.",
    )
    # A reworded copy reinforces the original; its text is untouched and no file is added.
    assert near.outcome == "DUPLICATE" and near.id == first.id and near.note and "reinforced" in near.note
    after = snapshot(vault)
    assert set(after) == set(before)
    assert vault.get(first.id).content == first.item.content
    forced = vault.create(
        "Retry idempotent HTTP calls with jittered backoff",
        "Sleep a random time in [0, base * 2**attempt], cap it at 30 s, and give up after 5 tries.",
        dedupe=False,
    )
    assert forced.outcome == "NEW" and forced.id != first.id


def test_unrelated_content_is_new(vault: Vault) -> None:
    vault.create("Retry idempotent HTTP calls", "Use jittered exponential backoff.")
    other = vault.create("Postgres autovacuum tuning", "Lower the scale factor on hot tables.")
    assert other.outcome == "NEW"


# ---------------------------------------------------------------------- get


def test_get_by_id_prefix_path_and_title(vault: Vault) -> None:
    item = vault.create("Prefer immutable value objects", "Frozen dataclasses.", domain=["eng", "python"]).item
    assert item.path is not None
    assert vault.get(item.id).id == item.id
    assert vault.get(item.id[:10].lower()).id == item.id
    assert vault.get(item.path).id == item.id
    assert vault.get(item.path[:-3]).id == item.id
    assert vault.get(str(vault.root / item.path)).id == item.id
    assert vault.get("Prefer immutable value objects").id == item.id
    assert vault.get("prefer IMMUTABLE value objects").id == item.id


def test_get_ambiguous_title_lists_the_candidates(vault: Vault) -> None:
    a = vault.create("Standup notes", "Monday.", domain=["team"]).id
    b = vault.create("Standup notes", "Tuesday: the deploy slipped.", domain=["team"]).id
    with pytest.raises(InvalidInput) as err:
        vault.get("Standup notes")
    assert a in str(err.value) and b in str(err.value) and "Pass one of the ids" in str(err.value)


def test_get_unknown_and_escaping_refs(vault: Vault) -> None:
    with pytest.raises(NotFound, match="no item matches 'nothing here'"):
        vault.get("nothing here")
    with pytest.raises(InvalidInput):
        vault.get("../../etc/passwd")


def test_get_reads_the_file_as_it_is_now(vault: Vault) -> None:
    item = vault.create("Timeouts", "Client timeouts are 55 s.").item
    assert item.path is not None
    path = vault.root / item.path
    path.write_text(path.read_text().replace("55 s", "50 s"))
    assert vault.get(item.id).content == "Client timeouts are 50 s.\n"


# ---------------------------------------------------------------------- update


def test_update_with_the_current_version_bumps_it_and_audits_the_fields(vault: Vault) -> None:
    item = vault.create("Runbooks", "Every service needs one.", tags=["process"]).item
    updated = vault.update(item.id, {"importance": 0.9, "tags": ["process", "launch"]}, expected_version=1)
    assert updated.version == 2 and updated.importance == 0.9 and updated.tags == ("process", "launch")
    assert updated.created_at == item.created_at and updated.id == item.id
    last = audit_lines(vault)[-1]
    assert last["action"] == "update" and last["oldVersion"] == 1 and last["newVersion"] == 2
    assert last["fields"] == ["tags", "importance"]


def test_stale_version_is_refused_with_what_changed(vault: Vault) -> None:
    item = vault.create("Runbooks", "Every service needs one.").item
    vault.update(item.id, {"summary": "No runbook, no launch"}, expected_version=1)
    before = snapshot(vault)
    with pytest.raises(VersionConflict) as err:
        vault.update(item.id, {"title": "Something else"}, expected_version=1)
    assert err.value.expected == 1 and err.value.actual == 2
    message = str(err.value)
    assert "v2 by tester" in message and "(summary)" in message and "pass version 2" in message
    assert snapshot(vault) == before


def test_update_that_changes_nothing_writes_nothing(vault: Vault) -> None:
    item = vault.create("Runbooks", "Every service needs one.").item
    before = snapshot(vault)
    same = vault.update(item.id, {"title": "Runbooks", "content": "Every service needs one.\n"})
    assert same.version == 1 and snapshot(vault) == before


def test_title_and_domain_changes_move_the_file_and_keep_the_id(vault: Vault) -> None:
    item = vault.create("Old title", "Body.", domain=["a", "b"]).item
    moved = vault.update(item.id, {"title": "New title", "domainTags": ["c"]}, expected_version=1)
    assert moved.id == item.id and moved.path == "c/new-title.md" and moved.slug == "new-title"
    assert not (vault.root / "a").exists()  # emptied folders are removed
    assert (vault.root / "c/new-title.md").is_file()
    assert [i.path for i in vault.list()] == ["c/new-title.md"]


def test_content_change_recomputes_hash_and_size(vault: Vault) -> None:
    item = vault.create("Notes", "one").item
    updated = vault.update(item.id, {"content": "one\ntwo\n"})
    assert updated.content_hash != item.content_hash and updated.content_size == 8


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"id": "01XYZ"}, "cannot be changed"),
        ({"createdAt": "2020-01-01T00:00:00Z"}, "cannot be changed"),
        ({"version": 7}, "cannot be changed"),
        ({"importance": 3}, "from 0 to 1"),
        ({"kind": "insight"}, "unknown kind"),
        ({"title": "x" * 10_000}, "10,000 characters"),
        ({"domainTags": ["..", "etc"]}, "not a folder name"),
        ({"status": "gone"}, "not one of"),
        ({"title": None}, "cannot be empty"),
    ],
)
def test_invalid_updates_change_nothing(vault: Vault, changes: dict[str, object], error: str) -> None:
    item = vault.create("Stable", "Body.").item
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match=error):
        vault.update(item.id, changes)
    assert snapshot(vault) == before


def test_unknown_keys_survive_updates_and_extras_can_be_set(vault: Vault) -> None:
    item = vault.create("With extras", "Body.", extra={"jiraTicket": "OPS-12"}).item
    assert item.path is not None
    path = vault.root / item.path
    path.write_text(path.read_text().replace("---\nBody.", "customKey:\n  nested: [1, 2]\n---\nBody."))
    updated = vault.update(item.id, {"summary": "now with a summary", "owner": "ops-team"})
    assert dict(updated.extra) == {"customKey": {"nested": [1, 2]}, "jiraTicket": "OPS-12", "owner": "ops-team"}
    cleared = vault.update(item.id, {"owner": None})
    assert "owner" not in cleared.extra and "customKey" in cleared.extra


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"title": "x" * 10_000}, InvalidInput, "the limit is 300"),
        ({"title": "   "}, InvalidInput, "title is empty"),
        ({"title": "two\nlines"}, InvalidInput, "one line"),
        ({"title": "ok", "domain": ["..", "..", "etc"]}, InvalidInput, "not a folder name"),
        ({"title": "ok", "domain": "../../etc"}, InvalidInput, "not a folder name"),
        ({"title": "ok", "kind": "insight"}, UnknownKind, "unknown kind 'insight'"),
        ({"title": "ok", "importance": 1.5}, InvalidInput, "from 0 to 1"),
        ({"title": "ok", "visibility": "public"}, InvalidInput, "not one of"),
        ({"title": "ok", "content": "x" * 1_000_001}, InvalidInput, "1,000,000"),
        ({"title": "ok", "content": "nul\x00byte"}, InvalidInput, "NUL"),
        ({"title": "ok", "extra": {"title": "clash"}}, InvalidInput, "built-in field"),
    ],
)
def test_malformed_creates_are_refused_and_change_nothing(
    vault: Vault, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    vault.create("Existing", "Already here.")
    before = snapshot(vault)
    with pytest.raises(error, match=message):
        vault.create(**kwargs)  # type: ignore[arg-type]
    assert snapshot(vault) == before


def test_broken_files_are_reported_not_fatal(vault: Vault) -> None:
    good = vault.create("Good", "Fine.").item
    (vault.root / "bad").mkdir()
    (vault.root / "bad/broken-yaml.md").write_text("---\nid: 01BAD\ntitle: [oops\n---\nbody\n")
    (vault.root / "bad/latin1.md").write_bytes("---\nid: 01LAT\ntitle: caf\xe9\n---\n".encode("latin-1"))
    (vault.root / "bad/plain-note.md").write_text("# Just a note\nNo frontmatter.\n")
    # A plain note is an item like any (a derived id); broken engram files are reported.
    listed = {i.path: i for i in vault.list()}
    assert set(listed) == {good.path, "bad/plain-note.md"}
    assert listed["bad/plain-note.md"].id.startswith("note-")
    broken = dict(vault.broken_files())
    assert set(broken) == {"bad/broken-yaml.md", "bad/latin1.md"}
    assert "invalid YAML" in broken["bad/broken-yaml.md"] and "UTF-8" in broken["bad/latin1.md"]


# ---------------------------------------------------------------------- delete, list


def test_delete_moves_item_and_edges_to_trash(vault: Vault) -> None:
    a = vault.create("A thing", "Body A.").item
    b = vault.create("B thing", "Body B.").item
    syn = vault.link(a.id, "extends", b.id)
    assert a.path is not None and b.path is not None
    deleted = vault.delete(a.id, expected_version=1)
    assert deleted.id == a.id
    assert not (vault.root / a.path).exists() and not (vault.root / syn.path).exists()
    trashed = list((vault.state.state_dir / "trash" / a.id).rglob("*"))
    assert any(p.name == Path(a.path).name for p in trashed)
    assert any(p.name == f"{syn.id}.yaml" for p in trashed)
    assert "## Synapses (derived)" not in (vault.root / b.path).read_text()
    with pytest.raises(NotFound):
        vault.get(a.id)


def test_list_filters(vault: Vault) -> None:
    vault.create("Pg one", "a", domain=["ops", "postgres"], kind="procedure", tags=["db"])
    vault.create("Net one", "b", domain=["ops", "networking"], kind="fact")
    vault.create("Py one", "c", domain=["eng", "python"], kind="pattern", tags=["db", "orm"], importance=0.9)
    frozen = vault.create("Old one", "d", domain=["ops"], status="frozen")
    titles = lambda **kw: sorted(i.title for i in vault.list(**kw))  # noqa: E731
    assert titles(domain="ops") == ["Net one", "Pg one"]
    assert titles(domain="ops/postgres") == ["Pg one"]
    assert titles(domain="op") == []  # a prefix of folders, not of names
    assert titles(kinds=["fact", "pattern"]) == ["Net one", "Py one"]
    assert titles(tags=["db"]) == ["Pg one", "Py one"]
    assert titles(tags=["db", "orm"]) == ["Py one"]
    assert titles(min_importance=0.8) == ["Py one"]
    assert titles(statuses=["frozen"]) == ["Old one"]
    assert frozen.item.title in titles(include_hidden=True)
    assert len(vault.list(limit=2)) == 2


# ---------------------------------------------------------------------- opening


def test_open_walks_up_and_refuses_non_vaults(vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    item = vault.create("Deep", "x", domain=["a", "b"]).item
    assert Vault.open(vault.root / "a" / "b").root == vault.root
    monkeypatch.chdir(vault.root / "a")
    assert Vault.open().get(item.id).id == item.id
    elsewhere = tmp_path / "not-a-vault"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(VaultNotFound, match="engram init"):
        Vault.open()
    with pytest.raises(VaultNotFound):
        Vault.open(tmp_path / "missing")


def test_near_duplicates_are_found_by_their_rare_words_under_another_title(vault: Vault) -> None:
    body = (
        "Autovacuum on the orders table falls behind after the nightly retention job; "
        "lowering autovacuum_vacuum_scale_factor to 0.01 with ALTER TABLE kept bloat under five percent."
    )
    first = vault.create("Tune autovacuum for orders", body)
    for n in range(20):  # unrelated items sharing the common words
        vault.create(f"Unrelated note {n}", f"The table and the job number {n} ran after the nightly window.")
    near = vault.create("Orders table autovacuum settings", body.replace("five percent", "5 percent"))
    assert near.outcome == "DUPLICATE" and near.id == first.id  # found, and reinforced
