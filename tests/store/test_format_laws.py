"""The typed codec layer: values round-trip, the right writer is chosen, errors name files.

:mod:`engram.store.format` promises that a file engram wrote is rewritten canonically,
that any other note is edited in place (every byte it does not change is kept), that
reads are bounded by the codec's limits and that every refusal is a FormatError (or its
FileTooLarge / BinaryFile / UnsafeFile subclasses) naming the file.
"""

from __future__ import annotations

import os
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import BinaryFile, FileTooLarge, FormatError, NotAdopted, UnsafeFile
from engram.store.format import (
    is_canonical,
    parse_engram,
    parse_proposal,
    parse_synapse,
    read_engram,
    read_proposal,
    read_synapse,
    render_engram,
    render_synapse,
    write_engram,
    write_proposal,
    write_synapse,
)
from engram.store.model import (
    SYMMETRIC_KINDS,
    SYNAPSE_KINDS,
    Engram,
    Evidence,
    Synapse,
    instant,
    is_valid_id,
    new_id,
    now,
    synapse_id,
)
from mergedriver import codec

# ---------------------------------------------------------------------- strategies

# Number-like text ("1e3", "0E0", "12") is drawn often: the writer must quote it.
_NUMBER_LIKE = st.from_regex(r"[-+]?[0-9]{0,3}\.?[0-9]{0,3}(?:[eE][-+]?[0-9]{1,2})?", fullmatch=True)
line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00\u2028\u2029\x85"),
    min_size=1,
    max_size=40,
).map(str.strip).filter(bool) | _NUMBER_LIKE.filter(bool)
instants = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1)).map(codec.format_time)
units = st.floats(min_value=0, max_value=1, allow_nan=False).map(lambda f: round(f, 6))
bodies = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200
)
ids = st.from_regex(r"[0-9A-HJKMNP-TV-Z]{26}", fullmatch=True)


@st.composite
def engrams(draw: st.DrawFn) -> Engram:
    """Items as the vault builds them: every optional field either absent or set."""
    maybe = lambda s: draw(st.none() | s)  # noqa: E731
    return Engram(
        id=draw(ids),
        title=draw(line),
        content=codec.canonical_content(draw(bodies)),
        slug=maybe(st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True)),
        domain_tags=tuple(draw(st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), max_size=3, unique=True))),
        kind=draw(st.sampled_from(["observation", "fact", "procedure", "skill", "note"])),
        tags=tuple(draw(st.lists(line, max_size=3, unique=True))),
        summary=draw(st.just("") | line),
        importance=draw(units),
        confidence=draw(units),
        status=draw(st.sampled_from(["active", "draft", "frozen"])),
        created_by=draw(line),
        created_at=draw(instants),
        updated_by=draw(line),
        updated_at=draw(instants),
        version=draw(st.integers(1, 10**6)),
        retrieval_count=draw(st.integers(0, 10**4)),
        last_verified_at=maybe(instants),
        superseded_by=maybe(ids),
        situation=maybe(line),
        steps=maybe(st.lists(line, min_size=1, max_size=3).map(tuple)),
        recalled_by=maybe(st.lists(line, min_size=1, max_size=2, unique=True).map(tuple)),
        extra=MappingProxyType(draw(st.dictionaries(st.from_regex(r"x[a-zA-Z]{1,6}", fullmatch=True), line | st.integers(), max_size=2))),
    )


derived_sections = st.lists(st.sampled_from(["- → [[a/b|B · extends]]", "- ← [[c|C · part_of]]"]), max_size=2)


# ---------------------------------------------------------------------- model


@settings(max_examples=80)
@given(engrams())
def test_to_meta_and_from_meta_are_inverse(item: Engram) -> None:
    meta = item.to_meta()
    assert None not in meta.values()
    back = Engram.from_meta(codec.normalize_engram_meta(meta), item.content, path="x.md")
    assert back.to_meta() == codec.normalize_engram_meta(meta)
    assert back.with_changes(path=None) == Engram.from_meta(codec.normalize_engram_meta(meta), item.content)
    assert back.path == "x.md" and back.content == item.content


def test_a_missing_hash_and_size_are_computed_from_the_content() -> None:
    item = Engram.from_meta({"id": "A1", "title": "T"}, "héllo\r\nworld")
    assert item.content == "héllo\nworld\n"
    assert item.content_hash == codec.content_hash("héllo\nworld\n")
    assert item.content_size == len("héllo\nworld\n".encode())
    kept = Engram.from_meta({"id": "A1", "title": "T", "contentHash": "sha256:old", "contentSize": 3}, "x")
    assert (kept.content_hash, kept.content_size) == ("sha256:old", 3)  # what the file says


def from_meta_by_key_map(meta: dict[str, object], content: str) -> Engram:
    """An item built field by field from the frontmatter, hash and size always computed
    first (what :meth:`Engram.from_meta` must give: it reads the keys the meta has)."""
    keymap = [(f.name, "".join(p if i == 0 else p.title() for i, p in enumerate(f.name.split("_"))))
              for f in fields(Engram) if f.name not in ("content", "extra", "path")]
    values = {attr: tuple(meta[key]) if isinstance(meta[key], list) else meta[key] for attr, key in keymap if key in meta}
    values.setdefault("content_hash", codec.content_hash(content))
    values.setdefault("content_size", len(codec.canonical_content(content).encode()))
    extra = {k: v for k, v in meta.items() if k not in {key for _, key in keymap}}
    return Engram(content=codec.canonical_content(content), extra=MappingProxyType(extra), **values)  # type: ignore[arg-type]


_META_KEYS = st.sampled_from([key for key, _ in codec.ENGRAM_KEYS] + ["zeta", "Due date", "content", "path", "extra"])
_META_VALUES = st.one_of(st.none(), st.text(max_size=8), st.integers(), st.lists(st.text(max_size=4), max_size=3))


@settings(max_examples=150)
@given(st.dictionaries(_META_KEYS, _META_VALUES, max_size=12), st.text(max_size=40))
def test_an_item_is_built_from_whatever_keys_its_meta_has(drawn: dict[str, object], content: str) -> None:
    meta = {"id": "A1", "title": "T", **drawn}
    assert Engram.from_meta(meta, content) == from_meta_by_key_map(meta, content)


@settings(max_examples=150)
@given(st.dictionaries(_META_KEYS, _META_VALUES | st.tuples(st.text(max_size=3)), max_size=12), st.text(max_size=40))
def test_the_meta_of_an_item_is_its_to_meta_without_building_it(drawn: dict[str, object], content: str) -> None:
    meta = {"id": "A1", "title": "T", **drawn}
    expected = Engram.from_meta(meta, content).to_meta()
    got = Engram.meta_of(meta, content)
    assert got == expected and list(got) == list(expected)
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_unknown_keys_ride_along_after_the_known_ones() -> None:
    item = Engram.from_meta({"id": "A1", "title": "T", "zeta": 1, "Due date": "2026-01-01"}, "")
    assert dict(item.extra) == {"zeta": 1, "Due date": "2026-01-01"}
    keys = list(item.to_meta())
    assert keys[-2:] == ["zeta", "Due date"] and keys[:2] == ["id", "title"]
    # An extra never overrides a built-in field of the same name.
    clash = Engram(id="A1", title="Real", extra=MappingProxyType({"title": "fake"}))
    assert clash.to_meta()["title"] == "Real"


@given(a=ids, b=ids, kind=st.sampled_from(SYNAPSE_KINDS))
def test_synapse_ids_are_content_derived_and_symmetric_only_for_symmetric_kinds(a: str, b: str, kind: str) -> None:
    sid = synapse_id(a, b, kind)
    assert sid.startswith("syn-") and len(sid) == 20 and int(sid[4:], 16) >= 0
    assert sid == synapse_id(a, b, kind)
    if kind in SYMMETRIC_KINDS or a == b:
        assert synapse_id(b, a, kind) == sid
    else:
        assert synapse_id(b, a, kind) != sid
    other = next(k for k in SYNAPSE_KINDS if k != kind)
    assert synapse_id(a, b, other) != sid


def test_synapse_endpoints_and_path() -> None:
    syn = Synapse(id="syn-0123456789abcdef", source="A", target="B", kind="extends")
    assert syn.path == "synapses/extends/syn-0123456789abcdef.yaml"
    assert (syn.other("A"), syn.other("B")) == ("B", "A")
    assert not syn.symmetric and Synapse(id="s", source="A", target="B", kind="similar_to").symmetric


def test_ids_and_clock() -> None:
    made = {new_id() for _ in range(200)}
    assert len(made) == 200 and all(len(i) == 26 and is_valid_id(i) for i in made)
    assert all(is_valid_id(v) for v in ("note-0123abcd", "a", "A.b_c-d", "x" * 128))
    assert not any(is_valid_id(v) for v in ("", "-a", ".a", "a/b", "a b", "x" * 129, "é", "a\n"))
    stamp = now()
    assert codec.format_time(stamp) == stamp and stamp.endswith("Z")
    assert instant(stamp).tzinfo is not None
    assert instant("2026-06-21T12:30:00+02:00") == instant("2026-06-21T10:30:00.000Z")


# ---------------------------------------------------------------------- engram files


@settings(max_examples=80)
@given(engrams(), derived_sections)
def test_what_engram_writes_is_canonical_reads_back_and_rewrites_to_nothing(
    tmp_path_factory: pytest.TempPathFactory, item: Engram, derived: list[str]
) -> None:
    path = tmp_path_factory.mktemp("f") / "item.md"
    assert write_engram(path, item, derived) is True
    data = path.read_bytes()
    assert is_canonical(data) and data == render_engram(item, derived)
    back, derived_text = read_engram(path, "item.md")
    assert back.to_meta() == codec.normalize_engram_meta(item.to_meta())
    assert back.content == item.content and back.path == "item.md"
    assert derived_text == "\n".join(derived)
    assert write_engram(path, back, derived) is False  # nothing changed: no write at all


@settings(max_examples=40)
@given(engrams(), line, bodies)
def test_an_update_of_an_engram_file_stays_canonical(
    tmp_path_factory: pytest.TempPathFactory, item: Engram, title: str, body: str
) -> None:
    path = tmp_path_factory.mktemp("u") / "item.md"
    write_engram(path, item)
    updated = item.with_changes(title=title, content=codec.canonical_content(body), version=item.version + 1)
    write_engram(path, updated)
    assert path.read_bytes() == render_engram(updated)
    assert read_engram(path, "item.md")[0].title == title


PERSON_NOTE = (
    "---\r\n"
    "# my own comment\r\n"
    "aliases: [Pool, 'the pool']\r\n"
    "tags:\r\n"
    "    - Work\r\n"
    "status: \"[[Published]]\"\r\n"
    "Due date: 2026-05-01\r\n"
    "---\r\n"
    "Body   with trailing spaces   \r\n"
    "\r\n"
    "- [ ] a task\r\n"
)


def person_note(tmp_path: Path) -> tuple[Path, Engram]:
    path = tmp_path / "Notes" / "Pool.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(PERSON_NOTE.encode())
    item, _ = read_engram(path, "Notes/Pool.md")
    return path, item


def test_a_persons_note_is_read_as_a_note_without_changing_it(tmp_path: Path) -> None:
    path, item = person_note(tmp_path)
    assert not is_canonical(path.read_bytes())
    assert item.id.startswith("note-") and item.title == "Pool" and item.kind == "note"
    assert item.tags == ("Work",) and item.domain_tags == ("Notes",)
    assert item.status == "active"  # "[[Published]]" is an Obsidian property, not a status
    assert path.read_bytes() == PERSON_NOTE.encode()


def test_an_edit_to_a_persons_note_changes_only_the_keys_that_changed(tmp_path: Path) -> None:
    path, item = person_note(tmp_path)
    updated = item.with_changes(id="01JABCDEFGHJKMNPQRSTVWXYZ0", tags=("work", "db"))
    assert write_engram(path, updated) is True
    text = path.read_bytes().decode()
    head, body = text.split("---\r\n")[1], text.split("---\r\n", 2)[2]
    assert body == PERSON_NOTE.split("---\r\n", 2)[2]  # the body, byte for byte
    for kept in ("# my own comment\r\n", "aliases: [Pool, 'the pool']\r\n", 'status: "[[Published]]"\r\n', "Due date: 2026-05-01\r\n"):
        assert kept in head
    assert "    - Work" not in head and "\n" not in head.replace("\r\n", "")  # CRLF kept everywhere
    back, _ = read_engram(path, "Notes/Pool.md")
    assert back.id == "01JABCDEFGHJKMNPQRSTVWXYZ0" and back.tags == ("work", "db")
    assert write_engram(path, back) is False


def adopted_note(tmp_path: Path) -> tuple[Path, Engram]:
    """The person's note once its owner adopted it (an id line added, as `engram adopt` does)."""
    path, item = person_note(tmp_path)
    assert write_engram(path, item.with_changes(id=ADOPTED)) is True
    return path, read_engram(path, "Notes/Pool.md")[0]


ADOPTED = "01JABCDEFGHJKMNPQRSTVWXYZ0"


def test_a_persons_note_not_adopted_is_never_written_under_its_derived_id(tmp_path: Path) -> None:
    path, item = person_note(tmp_path)
    for change in ({"content": "New body.\n"}, {"retrieval_count": 3}, {"tags": ("x",)}):
        with pytest.raises(NotAdopted):
            write_engram(path, item.with_changes(**change))
    with pytest.raises(NotAdopted):
        write_engram(path, item, ["- → [[a/b|B · extends]]"])
    assert path.read_bytes() == PERSON_NOTE.encode()


def test_a_content_change_to_a_persons_note_keeps_the_frontmatter_bytes(tmp_path: Path) -> None:
    path, item = adopted_note(tmp_path)
    write_engram(path, item.with_changes(content="New body.\n"))
    data = path.read_bytes().decode()
    front = PERSON_NOTE.split("---\r\n", 2)[1]
    assert data.startswith("---\r\n" + front.replace("Due date: 2026-05-01\r\n", f"Due date: 2026-05-01\r\nid: {ADOPTED}\r\n") + "---\r\n")
    assert read_engram(path, "Notes/Pool.md")[0].content == "New body.\n"


def test_a_move_carries_the_persons_style_to_the_new_path(tmp_path: Path) -> None:
    path, item = adopted_note(tmp_path)
    before = path.read_bytes()
    target = tmp_path / "Archive" / "Pool.md"
    assert write_engram(target, item.with_changes(summary="moved"), previous=path) is True
    assert "# my own comment\r\n" in target.read_bytes().decode()
    assert path.read_bytes() == before  # removing the old file is the caller's job


def test_a_note_that_cannot_be_edited_in_place_is_a_format_error_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "Broken.md"
    original = b"---\nstatus: [unclosed\n---\nbody\n"
    path.write_bytes(original)
    item, _ = read_engram(path, "Broken.md")  # readable by name and body
    assert item.title == "Broken"
    with pytest.raises(FormatError, match="cannot be updated in place") as err:
        write_engram(path, item.with_changes(id="01JABCDEFGHJKMNPQRSTVWXYZ0"))
    assert err.value.path == "Broken.md" and err.value.exit_code == 5
    assert path.read_bytes() == original


@pytest.mark.parametrize(
    ("data", "error", "problem"),
    [
        (b"---\nid: X1\ntitle: [unclosed\n---\n", FormatError, ""),
        (b"---\nid: X1\n- a\n- b\n---\n", FormatError, ""),
        (b"---\nid: X1\ntitle: T\n---\nbin\x00ary\n", BinaryFile, "NUL bytes"),
        (b"---\nid: X1\ntitle: caf\xe9\n---\n", FormatError, "not UTF-8 (byte 21"),
        (b"---\nid: X1\ntitle: T\n" + b"k: v\n" * 60_000 + b"---\n", FileTooLarge, "frontmatter"),
    ],
)
def test_a_broken_item_file_is_a_format_error_naming_it(data: bytes, error: type[FormatError], problem: str) -> None:
    with pytest.raises(error) as err:
        parse_engram(data, "ops/broken.md")
    assert type(err.value) is error
    assert err.value.path == "ops/broken.md" and problem in err.value.problem
    assert str(err.value).startswith("ops/broken.md: ") and err.value.hint


def test_reads_are_bounded_and_refuse_what_is_not_a_regular_file(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_bytes(b"---\nid: X1\ntitle: T\n---\n" + b"x" * codec.MAX_ITEM_BYTES)
    with pytest.raises(FileTooLarge, match="engram reads at most"):
        read_engram(big, "big.md")
    os.symlink(big, tmp_path / "link.md")
    with pytest.raises(UnsafeFile):
        read_engram(tmp_path / "link.md", "link.md")
    with pytest.raises(FileNotFoundError):
        read_engram(tmp_path / "gone.md", "gone.md")


def test_a_value_the_codec_cannot_render_is_a_format_error_naming_the_item() -> None:
    item = Engram(id="A1", title="T", importance="high")  # type: ignore[arg-type]
    with pytest.raises(FormatError) as err:
        render_engram(item)
    assert err.value.path == "A1"
    with pytest.raises(FormatError) as err:
        render_engram(item.with_changes(path="ops/t.md"))
    assert err.value.path == "ops/t.md"


# ---------------------------------------------------------------------- synapses, proposals


@st.composite
def synapses(draw: st.DrawFn) -> Synapse:
    kind = draw(st.sampled_from(SYNAPSE_KINDS))
    a, b = draw(ids), draw(ids)
    evidence = tuple(
        Evidence(description=draw(line), added_by=draw(line), confidence=draw(st.none() | units), added_at=draw(st.none() | instants))
        for _ in range(draw(st.integers(0, 3)))
    )
    return Synapse(
        id=synapse_id(a, b, kind), source=a, target=b, kind=kind, weight=draw(units),
        evidence=evidence, created_by=draw(line), created_at=draw(instants),
        updated_by=draw(st.none() | line), updated_at=draw(instants),
        retrieval_weight=draw(st.none() | st.floats(0, 5, allow_nan=False).map(lambda f: round(f, 6))),
    )


@settings(max_examples=60)
@given(synapses())
def test_a_synapse_round_trips_through_its_file(tmp_path_factory: pytest.TempPathFactory, syn: Synapse) -> None:
    path = tmp_path_factory.mktemp("s") / syn.path
    assert write_synapse(path, syn) is True
    back = read_synapse(path, syn.path)
    assert (back.id, back.source, back.target, back.kind, back.weight) == (syn.id, syn.source, syn.target, syn.kind, syn.weight)
    assert {e.description for e in back.evidence} == {e.description for e in syn.evidence}
    assert len(back.evidence) <= len(syn.evidence)  # an entry given twice is kept once
    assert render_synapse(back) == path.read_bytes()  # canonical: re-rendering is a fixed point
    assert write_synapse(path, back) is False


def test_a_synapse_without_updated_at_takes_created_at() -> None:
    data = b"id: syn-1\nfrom: A\nto: B\nkind: extends\ncreatedAt: 2026-01-02T03:04:05Z\n"
    syn = parse_synapse(data, "synapses/extends/syn-1.yaml")
    assert syn.updated_at == syn.created_at == "2026-01-02T03:04:05.000Z"
    assert syn.weight == 0.5 and syn.evidence == ()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"from: A\nto: B\nkind: extends\n", "no 'id'"),
        (b"- a list\n", "must be a YAML mapping"),
        (b"id: s\nfrom: A\nto: B\nkind: extends\nevidence: oops\n", "evidence"),
        (b"id: s\nfrom: A\nto: B\nkind: extends\nweight: heavy\n", "weight"),
    ],
)
def test_a_broken_synapse_file_is_a_format_error_naming_it(data: bytes, problem: str) -> None:
    with pytest.raises(FormatError) as err:
        parse_synapse(data, "synapses/extends/s.yaml")
    assert err.value.path == "synapses/extends/s.yaml" and problem in err.value.problem


def test_an_oversize_synapse_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"id: s\n" + b"# pad\n" * (codec.MAX_SYNAPSE_BYTES // 6 + 1))
    with pytest.raises(FileTooLarge):
        read_synapse(path, "synapses/extends/s.yaml")


def test_a_proposal_round_trips_and_rewrites_to_nothing(tmp_path: Path) -> None:
    path = tmp_path / "proposals" / "merge" / "prop-1.yaml"
    data = {"id": "prop-1", "kind": "merge", "status": "open", "targets": ["A", "B"], "score": 0.75,
            "createdAt": "2026-01-02T03:04:05Z", "payload": {"why": "same text"}, "zNote": "kept"}
    assert write_proposal(path, data) is True
    back = read_proposal(path, "proposals/merge/prop-1.yaml")
    assert back["createdAt"] == "2026-01-02T03:04:05.000Z" and back["payload"] == {"why": "same text"}
    assert back["zNote"] == "kept" and back["targets"] == ["A", "B"]
    assert write_proposal(path, back) is False
    with pytest.raises(FormatError) as err:
        write_proposal(tmp_path / "p.yaml", {"id": "prop-2", "kind": "merge"})  # no status
    assert err.value.path == "prop-2" and not (tmp_path / "p.yaml").exists()
    with pytest.raises(FormatError) as err:
        parse_proposal(b"id: p\nkind: merge\n", "proposals/merge/p.yaml")
    assert err.value.path == "proposals/merge/p.yaml"


def test_an_oversize_or_binary_proposal_is_refused_like_a_synapse(tmp_path: Path) -> None:
    path = tmp_path / "prop.yaml"
    path.write_bytes(b"id: p\nkind: k\nstatus: open\n" + b"# pad\n" * (codec.MAX_SYNAPSE_BYTES // 6 + 1))
    with pytest.raises(FileTooLarge):
        read_proposal(path, "proposals/k/prop.yaml")
    with pytest.raises(BinaryFile):
        parse_proposal(b"id: p\x00\n", "proposals/k/prop.yaml")


def test_an_id_with_a_trailing_newline_is_not_taken_as_the_notes_id() -> None:
    item, _ = parse_engram(b'---\nid: "X1\\n"\ntitle: T\n---\nbody\n', "ops/t.md")
    assert item.id.startswith("note-")  # a derived id; the broken value stays the person's


def test_a_new_body_in_a_crlf_note_keeps_crlf_throughout(tmp_path: Path) -> None:
    path, item = adopted_note(tmp_path)
    assert write_engram(path, item.with_changes(content="First line.\nSecond line.\n"), ["- → [[a/b|B · extends]]"]) is True
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")  # no bare LF anywhere
    back, derived = read_engram(path, "Notes/Pool.md")
    assert back.content == "First line.\nSecond line.\n" and derived == "- → [[a/b|B · extends]]"
    assert write_engram(path, back, ["- → [[a/b|B · extends]]"]) is False  # no churn after


def test_a_new_body_in_an_lf_note_stays_lf(tmp_path: Path) -> None:
    path = tmp_path / "lf.md"
    path.write_bytes(b"---\naliases: [x]\nid: 01JABCDEFGHJKMNPQRSTVWXYZ0\n---\nold\n")
    item, _ = read_engram(path, "lf.md")
    write_engram(path, item.with_changes(content="new\nlines\n"))
    assert b"\r" not in path.read_bytes()


def test_an_item_file_that_never_said_when_it_was_made_can_still_be_updated(tmp_path: Path) -> None:
    """Seed 7 of the issue-26 fuzz: a hand-written item (an id, no ``createdAt``) came back
    from a merge in canonical form with an ``updatedAt``; every later write of it raised
    "not a timestamp: ''" (exit 5), so the clone holding it could no longer sync. An instant
    nobody recorded stays unrecorded; it is not written as an empty string."""
    path = tmp_path / "hand.md"
    path.write_bytes(
        b"---\nid: 01M96GYKRSR5YXCJZ4SSN8RP92\ntitle: Hand note\ntags:\n  - hand\nupdatedBy: c2\n"
        b"updatedAt: 2026-12-06T20:33:11.019Z\nversion: 3\n"
        b"contentHash: sha256:4d203e01738d4c58207f3b3bd975a256df6d452c45e8181b44cd0c94e50adcf8\n"
        b"contentSize: 17\n---\ntok4xc0\ntok37xc2\n"
    )
    item, _ = read_engram(path, "hand.md")
    assert item.created_at == ""
    assert write_engram(path, item.with_changes(tags=("hand", "z"), version=4)) is True
    back, _ = read_engram(path, "hand.md")
    assert back.tags == ("hand", "z") and back.created_at == ""
    assert b"createdAt" not in path.read_bytes()
    # And engram's canonical rendering of such an item leaves the instant out too.
    assert b"createdAt" not in render_engram(back)
