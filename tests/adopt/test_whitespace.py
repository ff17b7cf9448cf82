"""Whitespace in bodies survives every path byte for byte: add, update, import, a usage
flush, sync with a peer, a three-way merge, and an edit made in Obsidian.

The body under test holds what Markdown gives meaning to and tools like to strip: a
hard line break (two trailing spaces), a tab-indented code block, trailing spaces and
tabs, and blank lines at both ends.
"""

from __future__ import annotations

import json
from pathlib import Path

from engram.adopt.sources import parse_text
from engram.vault import Vault
from mergedriver import codec
from tests.git_helpers import bare_origin, clone_machine, first_machine, tracked

BODY = (
    "\n"
    "A hard line break follows.  \n"
    "Next line of the same paragraph.\n"
    "\n"
    "\tcode indented by a tab\n"
    "\t\tand by two   \n"
    "\n"
    "trailing spaces and a tab \t\n"
    "\n\n"
)


def body_of(vault: Vault, ref: str) -> str:
    item = vault.get(ref)
    assert item.path is not None
    data = vault.abspath(item.path).read_bytes()
    return codec.parse_engram(data)[1]


def raw_body(vault: Vault, ref: str) -> bytes:
    item = vault.get(ref)
    assert item.path is not None
    return vault.abspath(item.path).read_bytes().split(b"\n---\n", 1)[1]


def test_add_keeps_the_body(vault: Vault) -> None:
    item = vault.create("Hard breaks", BODY).item
    assert raw_body(vault, item.id) == BODY.encode()
    assert vault.get(item.id).content == BODY
    assert item.content_size == len(BODY.encode())


def test_update_keeps_the_body_and_a_new_one(vault: Vault) -> None:
    item = vault.create("Hard breaks", "first  \n").item
    vault.update(item.id, {"content": BODY})
    assert raw_body(vault, item.id) == BODY.encode()
    vault.update(item.id, {"importance": 0.9, "tags": ["markdown"]})
    assert raw_body(vault, item.id) == BODY.encode()


def test_import_keeps_the_body(vault: Vault) -> None:
    batch = parse_text(json.dumps([{"title": "Imported", "content": BODY}]), "test.json", "json")
    assert vault.run_import(batch).counts.get("NEW") == 1
    assert raw_body(vault, "Imported") == BODY.encode()


def test_a_usage_flush_and_a_link_keep_the_body(vault: Vault) -> None:
    item = vault.create("Hard breaks in recall", BODY).item
    other = vault.create("Another", "x").item
    assert vault.search("hard breaks recall").hits
    vault.flush_usage()
    assert vault.get(item.id).retrieval_count >= 1
    vault.link(item.id, "extends", other.id)  # adds the derived section below the body
    assert body_of(vault, item.id) == BODY
    assert raw_body(vault, item.id).startswith(BODY.encode())


def test_an_obsidian_edit_is_kept_and_recorded_on_sync(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "solo")
    item = vault.create("Edited in Obsidian", "plain\n").item
    assert item.path is not None
    path = vault.abspath(item.path)
    # A person adds a hard break and a tab-indented block in their editor.
    path.write_bytes(path.read_bytes().replace(b"plain\n", BODY.encode()))
    vault.sync()
    after = vault.get(item.id)
    assert raw_body(vault, item.id) == BODY.encode()
    assert after.content_hash == codec.content_hash(BODY) and after.version == item.version + 1
    assert vault.doctor().ok


def test_sync_with_a_peer_and_a_merge_keep_every_byte(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    bob = clone_machine(tmp_path, origin, "bob")
    item = alice.create("Shared note", "top\n" + BODY + "end\n").item
    alice.sync()
    bob.sync()
    assert raw_body(bob, item.id) == raw_body(alice, item.id) == ("top\n" + BODY + "end\n").encode()
    # Both edit different lines: the merge is line by line and touches nothing else.
    alice.update(item.id, {"content": "top, by alice  \n" + BODY + "end\n"})
    bob.update(item.id, {"content": "top\n" + BODY + "end, by bob\t\n"})
    alice.sync()
    bob.sync()
    alice.sync()
    want = ("top, by alice  \n" + BODY + "end, by bob\t\n").encode()
    assert raw_body(alice, item.id) == raw_body(bob, item.id) == want
    assert tracked(alice.root) == tracked(bob.root)
