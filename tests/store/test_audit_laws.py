"""The audit log: one JSON line per write, readable forwards and backwards, never fatal.

:class:`engram.store.audit.AuditLog` promises that readers skip what they cannot parse
(the log is evidence, not state) and that :meth:`~AuditLog.latest` pages newest first by
reading blocks from the end — so its answer must equal the forward read, reversed,
whatever the line lengths and wherever the 64 KiB block boundaries fall.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.audit import AuditEntry, AuditLog
from engram.vault import Vault


def test_an_entry_round_trips_through_its_line(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / ".engram" / "audit.jsonl")
    entry = log.record(
        "dana ü", "update", "01ABC", path="ops/ü.md", old_version=1, new_version=2,
        fields=("title", "content"), note="rewrote the “intro”\nsecond line",
    )
    (line,) = (tmp_path / ".engram" / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert "ü" in line  # kept as text, not \u escapes
    assert AuditEntry.from_json(line) == entry
    assert list(log.entries()) == [entry]
    assert set(json.loads(line)) == {"at", "actor", "action", "target", "id", "path", "oldVersion", "newVersion", "fields", "note"}
    quiet = log.record("dana", "create", "01ABD")
    assert "note" not in json.loads(quiet.to_json())  # absent, not null


def test_a_missing_log_reads_as_empty(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "none.jsonl")
    assert list(log.entries()) == [] and log.latest(10) == []


def test_lines_that_do_not_parse_are_skipped_forwards_and_backwards(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    good = [log.record("a", "create", f"ID{n}") for n in range(3)]
    with path.open("ab") as fh:
        fh.write(b"not json\n")
        fh.write(b'{"at": "x"}\n')  # no action, no id
        fh.write(b"\xff\xfe broken bytes\n")
        fh.write(b"[1, 2]\n")
        fh.write(b"\n\n")
    good.append(log.record("a", "delete", "ID0"))
    with path.open("ab") as fh:
        fh.write(b'{"at": "cut off mid-li')  # a crash mid-append: no final newline
    assert list(log.entries()) == good
    assert log.latest(100) == list(reversed(good))


def test_entries_for_one_id_never_match_a_longer_id_that_contains_it(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.record("a", "create", "ID1")
    log.record("a", "create", "ID12", note="mentions ID1 in words")
    log.record("a", "update", "ID1")
    assert [e.action for e in log.entries("ID1")] == ["create", "update"]
    assert [e.id for e in log.entries("ID12")] == ["ID12"]


def test_latest_pages_with_offset_limit_and_a_filter(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    made = [log.record("a", "create" if n % 3 else "delete", f"ID{n}") for n in range(20)]
    newest = list(reversed(made))
    assert log.latest(5) == newest[:5]
    assert log.latest(5, offset=5) == newest[5:10]
    assert log.latest(5, offset=18) == newest[18:]
    assert log.latest(5, offset=50) == []
    deletes = [e for e in newest if e.action == "delete"]
    assert log.latest(3, offset=1, keep=lambda e: e.action == "delete") == deletes[1:4]


@settings(max_examples=25)
@given(st.lists(st.integers(0, 40_000), min_size=1, max_size=30))
def test_reading_backwards_equals_reading_forwards_reversed(tmp_path_factory: pytest.TempPathFactory, sizes: list[int]) -> None:
    log = AuditLog(tmp_path_factory.mktemp("audit") / "audit.jsonl")
    for n, size in enumerate(sizes):
        log.record("actor", "update", f"ID{n}", note="é" * size)  # two bytes a character
    forwards = list(log.entries())
    assert [e.id for e in forwards] == [f"ID{n}" for n in range(len(sizes))]
    assert log.latest(len(sizes) + 5) == list(reversed(forwards))
    for k in (1, 2, len(sizes) // 2):
        assert log.latest(k, offset=1) == list(reversed(forwards))[1 : 1 + k]


def test_every_vault_write_is_audited_with_the_fields_it_changed(vault: Vault) -> None:
    item = vault.create("Audited", "first body", domain=["ops"]).item
    vault.update(item.id, {"content": "second body", "tags": ["x"]}, expected_version=1)
    other = vault.create("Other", "other body").item
    syn = vault.link(item.id, "extends", other.id, evidence="because")
    vault.delete(other.id)
    log = AuditLog(vault.state.state_dir / "audit.jsonl")
    mine = list(log.entries(item.id))
    assert [(e.action, e.old_version, e.new_version) for e in mine][:2] == [("create", None, 1), ("update", 1, 2)]
    assert set(mine[1].fields) == {"tags", "content"}
    assert all(e.actor == "tester" for e in log.entries())
    assert any(e.target == "synapse" and e.id == syn.id for e in log.entries())
    assert log.latest(1)[0].action == "delete" and log.latest(1)[0].id == other.id
