"""From files to rows: which paths are read, what each kind of file becomes, what the
trigram index keeps of a body.

:mod:`engram.index.rows` never raises for file content: every file becomes a row or a
recorded problem of one of :data:`BAD_KINDS`; a just-written file is stamped racy so the
next refresh re-reads it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.index.catalog import Index
from engram.index.rows import (
    BAD_KINDS,
    RACY_NS,
    FileStamp,
    classify,
    identifiers,
    parse_all,
    parse_file,
)
from engram.index.settings import IndexSettings
from mergedriver import codec


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("note.md", "item"),
        ("ops/db/note.md", "item"),
        ("private/me/note.md", "item"),
        ("synapses/extends/syn-1.yaml", "synapse"),
        ("private/synapses/extends/syn-1.yaml", "synapse"),
        ("synapses/extends/notes.md", None),  # the synapse folder holds no items
        ("ops/synapses/x.yaml", None),
        ("ops/config.yaml", None),
        (".obsidian/workspace.md", None),
        ("ops/.hidden/x.md", None),
        ("ops/.x.md.swp", None),
        ("README.txt", None),
        ("note.MD", None),
    ],
)
def test_classify_reads_items_and_synapses_only(rel: str, kind: str | None) -> None:
    assert classify(rel) == kind


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_identifiers_keep_only_tokens_of_the_text_and_never_plain_words(text: str) -> None:
    kept = identifiers(text).split(" ") if identifiers(text) else []
    assert len(kept) == len(set(kept))
    for token in kept:
        assert token in text
        assert not (token.isalpha() and (token.islower() or token.istitle()) and token.isascii())
        assert len(token) > 1


def identifiers_token_by_token(text: str) -> str:
    """What the trigram index keeps, read token by token (the reading
    :func:`identifiers` must give, whatever tokens it remembers from other bodies)."""
    special = re.compile(r"[\d_/:#@+]|[A-Za-z][-.][A-Za-z]|[a-z][A-Z]|[^\x00-\x7f]")
    kept: dict[str, None] = {}
    for token in dict.fromkeys(text.split()):
        if token.isalpha() and (token.islower() or token.istitle()):
            continue
        token = token.strip("\"'`()[]{}<>,;:!?*.-")
        if len(token) > 1 and special.search(token):
            kept[token] = None
    return " ".join(kept)


_TOKENS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["the", "The", "db_url_v2", "os.path.join()", "(v1.2)", "camelCase", "x86_64", "東京", "café",
                     "Ölçek", "a:b", "#tag", "--", "RFC-7231,", "'quoted'", "e.g.", "\u00a0", "\u3000x", "1", "ab"]),
)


@settings(max_examples=300)
@given(st.lists(st.lists(_TOKENS, max_size=40).map(lambda ws: " ".join(ws)), min_size=1, max_size=3))
def test_identifiers_read_as_token_by_token_whatever_was_read_before(texts: list[str]) -> None:
    # The second reading of each text meets the tokens the first one remembered.
    for text in [*texts, *texts, " \n".join(texts)]:
        assert identifiers(text) == identifiers_token_by_token(text)


def test_identifiers_of_a_body_of_many_identifiers_keep_their_order() -> None:
    text = " ".join(f"x{i % 97}_{i} plain Words" for i in range(500))
    assert identifiers(text) == identifiers_token_by_token(text)
    assert identifiers(text).split()[:3] == ["x0_0", "x1_1", "x2_2"]


def test_identifiers_keep_code_and_non_latin_text() -> None:
    assert identifiers("call `os.path.join()` with PATH_MAX; see RFC-7231 and 東京") == "os.path.join PATH_MAX RFC-7231 東京"
    assert identifiers("Plain English Words only.") == ""


def write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_every_kind_of_file_becomes_a_row_or_a_named_problem(tmp_path: Path) -> None:
    root = tmp_path
    write(root, "good.md", b"---\nid: 01JGOOD0000000000000000000\ntitle: Good\n---\nbody\n")
    write(root, "plain.md", b"Just words.\n")
    write(root, "broken.md", b"---\nid: 01JBROKEN\ntitle: [unclosed\n---\n")
    write(root, "binary.md", b"\x00\x01\x02")
    write(root, "latin1.md", b"caf\xe9\n")
    write(root, "big.md", b"x" * (codec.MAX_ITEM_BYTES + 1))
    write(root, "synapses/extends/ok.yaml", b"id: s\nfrom: A\nto: B\nkind: extends\n")
    write(root, "synapses/extends/bad.yaml", b"- not a mapping\n")
    os.symlink("/etc/hostname", root / "link.md")
    os.mkfifo(root / "fifo.md")
    (root / "real").mkdir()
    write(root, "real/inside.md", b"inside\n")
    os.symlink(root / "real", root / "linked")
    rels = ["good.md", "plain.md", "broken.md", "binary.md", "latin1.md", "big.md", "synapses/extends/ok.yaml",
            "synapses/extends/bad.yaml", "link.md", "fifo.md", "linked/inside.md", "gone.md"]
    got = {p.rel: p for p in parse_all(root, rels)}
    kinds = {rel: p.kind for rel, p in got.items()}
    assert kinds == {
        "good.md": "item", "plain.md": "item", "broken.md": "bad", "binary.md": "binary", "latin1.md": "bad",
        "big.md": "oversize", "synapses/extends/ok.yaml": "synapse", "synapses/extends/bad.yaml": "bad",
        "link.md": "unsafe", "fifo.md": "unsafe", "linked/inside.md": "unsafe", "gone.md": "gone",
    }
    for rel, parsed in got.items():
        if parsed.kind in BAD_KINDS:
            assert parsed.error and parsed.values is None and parsed.stamp is not None, rel
    assert "linked" in (got["linked/inside.md"].error or "")
    assert "not UTF-8" in (got["latin1.md"].error or "")
    assert got["gone.md"].stamp is None


def test_a_file_written_just_now_is_stamped_racy_and_re_read_by_the_next_refresh(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "new.md", b"first\n")
    parsed = parse_file(root, "new.md")
    assert parsed.stamp is not None and parsed.stamp.ctime_ns == -1
    assert FileStamp.of(os.stat(root / "new.md")).ino == os.stat(root / "new.md").st_ino
    index = Index(root, tmp_path / "db.sqlite", IndexSettings())
    try:
        index.refresh()
        assert index.query("SELECT ctime_ns FROM files WHERE path = 'new.md'")[0]["ctime_ns"] == -1
        # Within the file system's timestamp granularity a same-size rewrite can leave
        # (ctime, size, inode) equal; the racy stamp makes the next refresh read it anyway.
        with open(root / "new.md", "r+b") as fh:
            fh.write(b"again")
        assert index.refresh().changed == 1
        assert index.query("SELECT body FROM items WHERE path = 'new.md'")[0]["body"] == "again\n"
    finally:
        index.close()
    assert RACY_NS == 2 * 10**9


def test_a_racy_file_whose_bytes_did_not_change_is_re_stamped_not_parsed(tmp_path: Path) -> None:
    """A folder just copied or cloned is racy throughout: every note was parsed twice
    (engram init on 6,571 notes, 1,950 of them again). The bytes' digest tells an
    unchanged racy file from a rewritten one."""
    root = tmp_path / "vault"
    for i in range(5):
        write(root, f"n{i}.md", f"note {i}\n".encode())
    index = Index(root, tmp_path / "db.sqlite", IndexSettings())
    try:
        assert index.refresh().changed == 5
        assert index.refresh().changed == 0  # all racy, none rewritten: re-stamped only
        with open(root / "n3.md", "r+b") as fh:  # same size, same inode, likely the same ctime tick
            fh.write(b"NOTE")
        assert index.refresh().changed == 1
        bodies = {r["path"]: r["body"] for r in index.query("SELECT path, body FROM items")}
        assert bodies["n3.md"] == "NOTE 3\n" and bodies["n2.md"] == "note 2\n"
    finally:
        index.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.binary(min_size=4, max_size=4)), max_size=6))
def test_after_any_same_size_rewrites_a_refresh_indexes_what_the_files_say(
    tmp_path_factory: pytest.TempPathFactory, rewrites: list[tuple[int, bytes]]
) -> None:
    tmp_path = tmp_path_factory.mktemp("racy")
    root = tmp_path / "vault"
    for i in range(4):
        write(root, f"n{i}.md", b"body text\n")
    index = Index(root, tmp_path / "db.sqlite", IndexSettings())
    try:
        index.refresh()
        for i, data in rewrites:
            clean = bytes(b if 0x61 <= b <= 0x7a else 0x78 for b in data)  # a-z, as text
            with open(root / f"n{i}.md", "r+b") as fh:
                fh.write(clean)
            index.refresh()
        for i in range(4):
            body = index.query("SELECT body FROM items WHERE path = ?", (f"n{i}.md",))[0]["body"]
            assert body == (root / f"n{i}.md").read_text(encoding="utf-8")
    finally:
        index.close()


def test_a_notes_row_carries_its_links_unresolved(tmp_path: Path) -> None:
    write(tmp_path, "ops/Trip.md", b"---\ncategories: ['[[Trips]]']\n---\nTo [[Lisbon|the city]] and ![[map.png]].\n")
    parsed = parse_file(tmp_path, "ops/Trip.md")
    assert parsed.kind == "item"
    texts = sorted((link[2], link[4], link[5]) for link in parsed.links)
    assert texts == [("Lisbon", 0, 0), ("Trips", 0, 1), ("map.png", 1, 0)]


# ---------------------------------------------------------------- rows of what a write wrote
# The index records a write from the bytes just written, read in memory, with the canonical
# frontmatter mapping standing in for a parse of it (store.format.write_note); these hold
# that row equal to the one read back from the file, as it was recorded before.

_KEYS = st.sampled_from(["desc", "created", "updated", "modified", "related", "aliases", "up", "n", "status2"])
_LEAF = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["[[Alpha]]", "[[ops/Beta|b]]", "see [[Gamma#h]]", "1e3", "0x1F", "1700000000000", "2024-05-01",
                     "yes", "null", "~", "'quoted'", "a: b", "#tag", "- dash", "[[", "]]"]),
    st.integers(min_value=-(10**15), max_value=10**15),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
)
_VALUE = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.from_regex(r"[a-z][a-zA-Z0-9_]{0,8}", fullmatch=True), inner, max_size=3), max_leaves=6)
def strings_depth_first(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if "[[" in value else []
    if isinstance(value, dict):
        return [s for inner in value.values() for s in strings_depth_first(inner)]
    if isinstance(value, (list, tuple)):
        return [s for inner in value for s in strings_depth_first(inner)]
    return []


@settings(max_examples=200)
@given(st.dictionaries(_KEYS, _VALUE, max_size=5))
def test_property_links_are_those_of_every_string_at_any_depth_in_order(properties: dict[str, object]) -> None:
    from engram.index import wikilinks

    found: dict[wikilinks.Link, None] = {}
    for value in strings_depth_first(properties):
        for link in wikilinks._links_in(value, True):
            found.setdefault(link, None)
    assert wikilinks.property_links(properties) == list(found)


_TEXT = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["", "plain words", "See [[Alpha]] and ![[pic.png]].", "line\n\n## Synapses (derived)\n- → [[x]]\nafter",
                     "ends with newline\n", "trailing   \n\n\n", "\r\nwindows\r\n", "---\nnot: frontmatter\n---"]),
)


@settings(max_examples=150, deadline=None)
@given(
    title=st.one_of(st.text(min_size=1, max_size=60), st.sampled_from(["Alpha", "[[Beta]]", "a: b", "- x", "1e3"])),
    content=_TEXT,
    summary=st.text(max_size=40),
    domain=st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), max_size=3),
    tags=st.lists(st.from_regex(r"[a-z][a-z0-9/-]{0,8}", fullmatch=True), max_size=3),
    extra=st.dictionaries(_KEYS | st.from_regex(r"[a-z][a-zA-Z0-9]{0,8}", fullmatch=True), _VALUE, max_size=4),
    folder=st.sampled_from(["", "ops/db/", "private/", "private/me/", "People/"]),
    derived=st.lists(st.sampled_from(["- → [[alpha-1]]", "- ← [[ops/beta]]", "- → [[Gamma Note]]"]), max_size=3),
    visibility=st.sampled_from(["team", "private"]),
)
def test_the_row_of_a_write_equals_the_row_read_back_from_its_file(
    tmp_path_factory: pytest.TempPathFactory, title: str, content: str, summary: str, domain: list[str],
    tags: list[str], extra: dict[str, object], folder: str, derived: list[str], visibility: str,
) -> None:
    from hypothesis import assume

    from engram.errors import EngramError
    from engram.index.rows import note_values
    from engram.store import rules
    from engram.store.format import write_note
    from engram.store.model import new_id, now

    try:
        item = rules.build_new(
            new_id(), title=title, content=content, domain=domain, kind="fact", tags=tags, summary=summary,
            importance=0.5, confidence=0.5, source_type="firsthand", status="active", visibility=visibility,
            extra=extra, actor="tester", at=now(), source={"file": "[[Alpha]].md", "n": 3} if extra else None,
        )
    except EngramError:
        assume(False)
        return
    root = tmp_path_factory.mktemp("rows")
    rel = f"{folder}{item.slug or 'untitled'}.md"
    item = item.with_changes(path=rel)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    written = write_note(path, rel, item, derived)
    assert written.note is not None
    back = parse_file(root, rel)
    assert back.kind == "item" and back.values is not None
    row, links = note_values(rel, written.note)
    assert row == back.values
    assert tuple(links) == back.links
    assert written.size == path.stat().st_size


def test_a_write_into_a_persons_note_is_indexed_as_its_file_reads(tmp_path: Path) -> None:
    from engram.vault import Vault

    note = tmp_path / "v" / "People" / "Alice.md"
    vault = Vault.init(tmp_path / "v")
    try:
        note.parent.mkdir(parents=True)
        note.write_text("---\ntags: [person]\nmet: '[[Bob]]'\n# a comment\n---\nAlice runs [[Ops]].\n", encoding="utf-8")
        vault.refresh()
        item = vault.update("People/Alice.md", {"summary": "Runs ops"})
        index = vault.state.index
        kept = index.query("SELECT * FROM items WHERE path = 'People/Alice.md'")[0]
        links = index.links("src_path = ?", ("People/Alice.md",))
        fresh = parse_file(vault.root, "People/Alice.md")
        assert fresh.values is not None and tuple(kept)[1:] == fresh.values
        assert "# a comment" in note.read_text(encoding="utf-8") and item.summary == "Runs ops"
        assert sorted(link.text for link in links) == ["Bob", "Ops"]
    finally:
        vault.close()
