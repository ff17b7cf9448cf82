"""The canonical codec: round trips, YAML coercion, Co-Engram files, bad bytes."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engram.store.model import SYNAPSE_KINDS, Engram, Evidence, Synapse, synapse_id
from mergedriver import codec, yamlio
from tests.conftest import COMPAT, shared

# ---------------------------------------------------------------------- strategies

text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=60,
)
line = text.map(lambda s: s.replace("\n", " ").replace("\r", " ").strip()).filter(bool)
instants = st.datetimes(
    min_value=__import__("datetime").datetime(1990, 1, 1),
    max_value=__import__("datetime").datetime(2100, 1, 1),
).map(codec.format_time)
units = st.floats(min_value=0, max_value=1, allow_nan=False).map(lambda f: round(f, 6))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**9), 10**9), units, text, instants
)
extra_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.from_regex(r"[a-z][a-zA-Z0-9]{0,8}", fullmatch=True), inner, max_size=3),
    ),
    max_leaves=6,
)
known_keys = {key for key, _ in codec.ENGRAM_KEYS}
extras = st.dictionaries(
    st.from_regex(r"x[A-Za-z0-9_]{0,10}", fullmatch=True).filter(lambda k: k not in known_keys),
    extra_values,
    max_size=3,
)
bodies = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"),
    max_size=300,
)


@st.composite
def engrams(draw: st.DrawFn) -> Engram:
    return Engram(
        id=draw(st.from_regex(r"[0-9A-HJKMNP-TV-Z]{26}", fullmatch=True)),
        title=draw(line),
        content=codec.canonical_content(draw(bodies)),
        slug=draw(st.none() | st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True)),
        domain_tags=tuple(draw(st.lists(line, max_size=3, unique=True))),
        kind=draw(st.sampled_from(["observation", "fact", "pattern", "decision"])),
        tags=tuple(draw(st.lists(line, max_size=4, unique=True))),
        summary=draw(text),
        importance=draw(units),
        confidence=draw(units),
        created_by=draw(text),
        created_at=draw(instants),
        updated_by=draw(text),
        updated_at=draw(instants),
        version=draw(st.integers(1, 10**6)),
        retrieval_count=draw(st.integers(0, 10**6)),
        reinforcement_score=draw(st.floats(-100, 100, allow_nan=False).map(lambda f: round(f, 6) + 0.0)),
        last_retrieved_at=draw(st.none() | instants),
        superseded_by=draw(st.none() | line),
        extra=draw(extras),
    )


def _roundtrip(item: Engram, derived: list[str]) -> tuple[bytes, Engram, str]:
    data = codec.render_engram(item.to_meta(), item.content, derived)
    meta, content, derived_text = codec.parse_engram(data)
    return data, Engram.from_meta(meta, content), derived_text


# ---------------------------------------------------------------------- round trips


@given(engrams(), st.lists(st.sampled_from(["- → [[a/b|B · extends]]", "- ← [[c|C · part_of]]"]), max_size=2))
def test_engram_round_trip_is_lossless_and_byte_identical(item: Engram, derived: list[str]) -> None:
    data, back, derived_text = _roundtrip(item, derived)
    assert back.to_meta() == codec.normalize_engram_meta(item.to_meta())
    assert back.content == item.content
    assert derived_text == "\n".join(derived)
    # Writing what was read gives the same bytes: a no-op.
    assert codec.render_engram(*codec.parse_engram(data)[:2], derived_text.splitlines()) == data
    assert data.endswith(b"\n") and b"\r" not in data.split(b"\n---\n", 1)[0]


@given(st.sampled_from(SYNAPSE_KINDS), st.lists(st.tuples(line, text, instants), max_size=4), units)
def test_synapse_round_trip(kind: str, entries: list[tuple[str, str, str]], weight: float) -> None:
    syn = Synapse(
        id=synapse_id("A", "B", kind),
        source="A",
        target="B",
        kind=kind,
        weight=weight,
        evidence=tuple(Evidence(d, by, 0.5, at) for d, by, at in entries),
        created_by="x",
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-02T00:00:00.000Z",
    )
    data = codec.render_synapse(syn.to_meta())
    back = Synapse.from_meta(codec.parse_synapse(data))
    assert codec.render_synapse(back.to_meta()) == data
    assert {e.description for e in back.evidence} == {d for d, _, _ in entries}


def test_co_engram_files_round_trip_byte_identical() -> None:
    for path in sorted(shared(COMPAT).rglob("*.md")):
        data = path.read_bytes()
        meta, content, derived = codec.parse_engram(data)
        assert codec.render_engram(meta, content, derived.splitlines()) == data, path
        assert set(meta) >= {"id", "title", "contentHash", "contentSize", "reinforcementScore"}
    for path in sorted(COMPAT.rglob("*.yaml")):
        data = path.read_bytes()
        assert codec.render_synapse(codec.parse_synapse(data)) == data, path


# ---------------------------------------------------------------------- coercion


def test_yaml_coercions_are_normalised_on_read() -> None:
    data = (
        b"---\nid: 01ABC\ntitle: 1.10\nsummary: yes\ntags: [no, 2024-01-01, 0755, on]\n"
        b"importance: '0.7'\nversion: '3'\ncreatedAt: 2026-06-21 10:30:00+02:00\n"
        b"updatedAt: 2026-06-21\nxOctal: 0755\nxTime: 10:30\nxNum: 3\nxBool: true\n---\nbody\n"
    )
    meta, _, _ = codec.parse_engram(data)
    assert meta["title"] == "1.10"
    assert meta["summary"] == "yes"
    assert meta["tags"] == ["no", "2024-01-01", "0755", "on"]
    assert meta["importance"] == 0.7 and meta["version"] == 3
    assert meta["createdAt"] == "2026-06-21T08:30:00.000Z"
    assert meta["updatedAt"] == "2026-06-21T00:00:00.000Z"
    assert meta["xOctal"] == "0755" and meta["xTime"] == "10:30"
    assert meta["xNum"] == 3 and meta["xBool"] is True
    rendered = codec.render_engram(meta, "body\n").decode()
    assert "title: '1.10'" in rendered and "summary: 'yes'" in rendered
    assert "createdAt: 2026-06-21T08:30:00.000Z" in rendered  # instants plain, as Co-Engram


def test_timestamps_compare_as_instants() -> None:
    assert codec.format_time("2026-01-01T00:00:00Z") == codec.format_time("2026-01-01T00:00:00.000+00:00")
    assert codec.format_time("2026-01-01T01:00:00+01:00") == "2026-01-01T00:00:00.000Z"


def test_crlf_becomes_lf_and_every_other_body_byte_is_kept() -> None:
    meta, content, _ = codec.parse_engram(b"---\r\nid: x\r\ntitle: t\r\n---\r\nline one  \r\nline two\r\n\r\n\r\n")
    assert content == "line one  \nline two\n\n\n"
    assert b"\r" not in codec.render_engram(meta, content)


WHITESPACE_BODIES = [
    "hard break  \nnext line\n",
    "\tcode indented by a tab\n\tsecond\n",
    "\n\nleading blank lines\n",
    "trailing blank lines\n\n\n",
    "trailing spaces   \n  \n\t\n",
    "no final newline",
    "```\n  code  \n\n\n```\n",
]


@pytest.mark.parametrize("body", WHITESPACE_BODIES)
@pytest.mark.parametrize("derived", [[], ["- → [[a|A · extends]]"]])
def test_body_whitespace_survives_render_and_parse(body: str, derived: list[str]) -> None:
    data = codec.render_engram({"id": "x", "title": "t"}, body, derived)
    _, content, derived_text = codec.parse_engram(data)
    want = body if body.endswith("\n") else body + "\n"
    assert content == want
    assert derived_text == "\n".join(derived)
    assert codec.render_engram({"id": "x", "title": "t"}, content, derived) == data


@given(bodies, st.lists(st.sampled_from(["- → [[a/b|B · extends]]", "- ← [[c|C · part_of]]"]), max_size=2))
def test_any_body_round_trips_byte_for_byte(body: str, derived: list[str]) -> None:
    content = codec.canonical_content(body)
    data = codec.render_engram({"id": "x", "title": "t"}, content, derived)
    assume(codec.DERIVED_HEADING not in body)
    _, back, derived_text = codec.parse_engram(data)
    assert back == content
    assert derived_text == "\n".join(derived)
    assert codec.render_engram({"id": "x", "title": "t"}, back, derived) == data


def test_text_below_the_derived_section_is_kept() -> None:
    body = "intro\n\n## Synapses (derived)\n- → [[a|A · extends]]\n\nA note added in Obsidian.\n"
    content, derived = codec.split_derived(body)
    assert "A note added in Obsidian." in content and "intro" in content
    assert derived == "- → [[a|A · extends]]"


def test_content_hash_ignores_the_derived_section() -> None:
    with_links = codec.render_engram({"id": "x", "title": "t"}, "same body\n", ["- → [[a|A · extends]]"])
    without = codec.render_engram({"id": "x", "title": "t"}, "same body\n")
    _, c1, _ = codec.parse_engram(with_links)
    _, c2, _ = codec.parse_engram(without)
    assert codec.content_hash(c1) == codec.content_hash(c2)


# ---------------------------------------------------------------------- bad bytes


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"no frontmatter here\n", "no frontmatter"),
        (b"---\nid: x\ntitle: [unclosed\n---\n", "invalid YAML"),
        (b"---\nid: x\n", "not closed"),
        (b"---\nid: x\ntitle: caf\xe9\n---\n", "not UTF-8"),
        (b"---\nid: x\x00\n---\n", "binary"),
        (b"---\n- a list\n---\n", "mapping"),
        (b"---\ntitle: no id\n---\n", "no 'id'"),
        (b"---\nid: x\nimportance: high\n---\n", "must be a number"),
        (b"---\nid: x\ncreatedAt: last tuesday\n---\n", "not a timestamp"),
        (b"---\nid: x\nfoo: !!python/object:os.system ls\n---\n", "invalid YAML"),
    ],
)
def test_bad_files_raise_codec_errors_with_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(codec.CodecError, match=problem):
        codec.parse_engram(data)


def test_codec_modules_import_only_stdlib_and_yaml() -> None:
    for module in (codec, yamlio):
        source = Path(module.__file__).read_text(encoding="utf-8")
        imports = {line.split()[1].split(".")[0] for line in source.splitlines() if line.startswith(("import ", "from "))}
        assert imports <= {"__future__", "hashlib", "math", "re", "collections", "datetime", "typing", "yaml", "mergedriver"}


@given(st.dictionaries(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,12}", fullmatch=True), extra_values, max_size=8))
def test_fast_mapping_emitter_matches_pyyaml(data: dict[str, object]) -> None:
    assert yamlio.dump_mapping(data) == yamlio.dump_yaml(data)


@given(engrams())
def test_fast_emitter_matches_pyyaml_on_frontmatter(item: Engram) -> None:
    meta = codec.normalize_engram_meta(item.to_meta())
    assert yamlio.dump_mapping(meta) == yamlio.dump_yaml(meta)


yaml_lines = st.lists(
    st.one_of(
        st.sampled_from(
            ["id: x", "title: 'it''s'", "tags:", "  - a", "  - 'b'", "  - 3", "n: 07", "t: yes", "e: []",
             "f: 1.5e3", "g: null", "h: ~", "k: True", "x: a: b", "y: a #c", "z: |-", "  text", "q: \"dq\"",
             "w: [1, 2]", "v: {a: 1}", "u:", "  nested: 1", "# comment", "", "- item", "s: -", "r: - x",
             "p: 'open", "o: it's", "m: &a x", "l: *a", "j: !!str 1", "i: @x", "c: `x`", "b: x  ", "a:  x",
             "true: 1", "2: x", "d: .inf", "dd: -0.5", "de: 2026-01-01", "df: 12:30"]
        ),
        st.from_regex(r"[a-z]{1,5}: [ -~]{0,12}", fullmatch=True),
    ),
    max_size=12,
)


@given(yaml_lines)
def test_fast_frontmatter_reader_agrees_with_pyyaml(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    fast = yamlio.fast_mapping(text)
    if fast is None:
        return
    slow = yaml.load(text, Loader=yamlio.Loader)
    assert fast == slow
    assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()]
    for key, value in fast.items():
        if isinstance(value, list):
            assert [type(v) for v in value] == [type(v) for v in slow[key]]


@given(engrams())
def test_files_engram_writes_take_the_fast_path(item: Engram) -> None:
    data = codec.render_engram(item.to_meta(), item.content)
    front = data.decode().split("---\n")[1]
    slow = yaml.load(front, Loader=yamlio.Loader)
    fast = yamlio.fast_mapping(front)
    if fast is not None:
        assert fast == slow


@given(st.one_of(
    st.text(max_size=40),
    st.text(alphabet="abcXYZ019 _.,/()+@'=-:#~!", max_size=20),
    st.sampled_from(["yes", "No", "on", "OFF", "null", "~", "1e3", "0x1F", "0o17", "1_000", ".5", "2024-05-01",
                     "2024-05-01 10:00", "12:30", "a: b", "a #b", "x ", " x", "=", "<<", "People/Alice Smith.md"]),
))
def test_plain_text_that_reads_back_as_itself_is_what_pyyaml_reads_back(value: str) -> None:
    # rules._text_as_read skips PyYAML for such text; the round trip must agree.
    if yamlio.reads_back_plain(value):
        assert yamlio.load_yaml(yamlio.dump_yaml(value)) == value


def test_the_plain_text_memo_never_answers_for_a_typed_scalar() -> None:
    # Instant and Number are str subclasses: the memo of plain text must not serve them.
    stamp = "2026-01-02T03:04:05Z"
    assert yamlio._plain_scalar(stamp) is None  # a str that looks like a time is quoted
    assert yamlio._plain_scalar(yamlio.Instant(stamp)) == stamp
    assert yamlio._plain_scalar(stamp) is None
    for value in ("fact", "yes", "1e3", "People/Alice Smith.md", "a: b"):
        first = yamlio._plain_scalar(value)
        assert yamlio._plain_scalar(value) == first  # now from the memo
        assert (first is not None) == (yamlio.dump_yaml(value).rstrip("\n.").rstrip("\n") == value)


# ---------------------------------------------------------------------- fast paths
# Every file of a cold index passes through these; each is held to a plain reading.


def split_by_regex(text: str) -> tuple[str, str]:
    """The frontmatter split as a multi-line regex finds the closing fence."""
    text = text.replace("\r\n", "\n")
    first = text.find("\n")
    if not text.startswith("---") or first < 0 or text[:first].strip() != "---":
        raise codec.CodecError("no frontmatter (the file must start with a '---' line)")
    end = re.compile(r"^---[ \t]*$", re.MULTILINE).search(text, first + 1)
    if end is None:
        raise codec.CodecError("frontmatter is not closed (add a '---' line after it)")
    return text[first + 1 : end.start()], text[end.end() + 1 :] if end.end() < len(text) else ""


fence_lines = st.lists(
    st.sampled_from(["---", "--- ", "---\t \t", "----", " ---", "---x", "-- -", "a: b", "", "\r", "x ---", "---\r"])
    | st.text(alphabet="-abc \t\r", max_size=6),
    max_size=8,
)


@settings(max_examples=300)
@given(fence_lines, st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_the_frontmatter_split_finds_the_fence_a_regex_finds(lines: list[str], newline: str, final: bool) -> None:
    text = newline.join(lines) + (newline if final else "")
    try:
        expected: tuple[str, str] | str = split_by_regex(text)
    except codec.CodecError as exc:
        expected = str(exc)
    try:
        got: tuple[str, str] | str = codec.split_frontmatter(text)
    except codec.CodecError as exc:
        got = str(exc)
    assert got == expected


def format_time_by_datetime(value: str) -> str:
    """A canonical instant checked by building its datetime (``format_time`` remembers
    which days are real instead)."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{3}Z$", value)
    if m is None:
        return codec.format_time(value)
    try:
        datetime(*(int(part) for part in m.groups()))
    except ValueError:
        raise codec.CodecError(f"not a timestamp: {value!r} (use e.g. 2026-06-21T10:30:00Z)") from None
    return value


def two_digits(top: int) -> st.SearchStrategy[str]:
    return st.integers(0, top).map(lambda n: f"{n:02d}") | st.just("١٢")  # \d is any decimal digit


canonical_shapes = st.builds(
    "{}-{}-{}T{}:{}:{}.{}Z".format,
    st.sampled_from(["0000", "0001", "1999", "2000", "2024", "2100", "9999", "٢٠٢٤"]),
    two_digits(13), two_digits(32), two_digits(25), two_digits(61), two_digits(61), st.sampled_from(["000", "999", "5٥5"]),
)


@settings(max_examples=400)
@given(st.lists(canonical_shapes | st.sampled_from(["2024-02-29T00:00:00Z", "2023-02-29T10:00:00.000+01:00"]), max_size=6))
def test_canonical_instants_are_checked_as_datetime_checks_them(values: list[str]) -> None:
    for value in [*values, *values]:  # the second time, the days are remembered
        outcomes = []
        for check in (codec.format_time, format_time_by_datetime):
            try:
                outcomes.append(check(value))
            except codec.CodecError as exc:
                outcomes.append(f"error: {exc}")
        assert outcomes[0] == outcomes[1]


def test_a_remembered_line_is_still_read_with_the_lines_around_it() -> None:
    assert yamlio.fast_mapping("kind: fact\nstatus: active\n") == {"kind": "fact", "status": "active"}
    # The same lines again, now remembered, where what follows makes them something else.
    assert yamlio.fast_mapping("kind: fact\n  more: text\n") is None
    assert yamlio.fast_mapping("status: active\n  - item\n") is None
    assert yamlio.fast_mapping("kind: fact\nkind: skill\n") == {"kind": "skill"}
    first = yamlio.fast_mapping("n: 3\nv: 1.50\nt: true\nz: ~\n")
    again = yamlio.fast_mapping("n: 3\nv: 1.50\nt: true\nz: ~\n")
    assert first == again == {"n": "3", "v": "1.50", "t": True, "z": None}
    assert first is not None and again is not None
    assert [type(v) for v in first.values()] == [type(v) for v in again.values()] == [yamlio.Number, yamlio.Number, bool, type(None)]
