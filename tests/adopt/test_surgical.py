"""In-place frontmatter edits: only the keys engram sets change; every other byte stays.

The property: for arbitrary Obsidian-style frontmatter (any key order, quoting styles,
flow and block lists, comments, blank lines, wikilink properties) and any body, adding
an id keeps every original line byte-identical and in order, and the result reads back
with the id and every other property as it was.
"""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.surgical import edit_frontmatter
from mergedriver import codec
from mergedriver.yamlio import load_raw

keys = st.from_regex(r"[a-z][a-zA-Z0-9_ -]{0,12}[a-z0-9]", fullmatch=True).filter(lambda k: k != "id")
words = st.text(alphabet=st.characters(whitelist_categories=("L", "N"), max_codepoint=0x2FFF), min_size=1, max_size=12)


@st.composite
def entry(draw: st.DrawFn, key: str) -> list[str]:
    """One property in one of the styles people and Obsidian write."""
    style = draw(st.sampled_from(["plain", "double", "single", "link", "block", "block0", "flow", "number", "date", "empty"]))
    word = draw(words)
    if style == "plain":
        return [f"{key}: {word}x"]
    if style == "double":
        return [f'{key}: "{word} # not a comment"']
    if style == "single":
        return [f"{key}: '{word}'"]
    if style == "link":
        return [f'{key}: "[[{word}]]"']
    if style == "number":
        return [f"{key}: {draw(st.integers(-5, 10**6))}"]
    if style == "date":
        return [f"{key}: 2023-09-{draw(st.integers(10, 28))}"]
    if style == "empty":
        return [f"{key}:"]
    items = draw(st.lists(words, min_size=1, max_size=3))
    if style == "flow":
        return [f"{key}: [{', '.join(repr(i) for i in items)}]"]
    indent = "" if style == "block0" else "  "
    return [f"{key}:"] + [f'{indent}- "[[{i}]]"' for i in items]


@st.composite
def notes(draw: st.DrawFn) -> bytes:
    names = draw(st.lists(keys, min_size=0, max_size=6, unique_by=str.casefold))
    lines: list[str] = []
    for name in names:
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append("# " + draw(words))
        if draw(st.integers(0, 4)) == 0:
            lines.append("")
        lines += draw(entry(name))
    body = draw(st.text(alphabet=st.sampled_from(list("ab #-*\t [|]\n")), max_size=80))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    if not names and draw(st.booleans()):
        return body.replace("\n", newline).encode()  # a note without frontmatter
    text = "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body
    return text.replace("\n", newline).encode()


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _is_subsequence(small: list[bytes], big: list[bytes]) -> bool:
    it = iter(big)
    return all(line in it for line in small)


@settings(max_examples=300)
@given(notes())
def test_adding_an_id_keeps_every_original_line(data: bytes) -> None:
    try:
        front, _ = codec.split_frontmatter(codec.decode(data))
        before = load_raw(front) if front.strip() else {}
        fenced = True
    except codec.CodecError:
        before, fenced = {}, False  # a bare note, or a '---' that never closes
    out = edit_frontmatter(data, {"id": "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"})
    assert _is_subsequence(_lines(data), _lines(out))
    added = len(_lines(out)) - len(_lines(data))
    assert added == (1 if fenced else 3)  # the id line (and fences for a bare note)
    front, _ = codec.split_frontmatter(codec.decode(out))
    after = load_raw(front)
    assert after.pop("id") == "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"
    assert after == before


@settings(max_examples=100)
@given(notes(), st.integers(1, 10**6))
def test_changing_a_key_twice_is_the_same_as_once(data: bytes, version: int) -> None:
    once = edit_frontmatter(data, {"version": version, "updatedAt": "2026-01-01T00:00:00.000Z"})
    twice = edit_frontmatter(once, {"version": version, "updatedAt": "2026-01-01T00:00:00.000Z"})
    assert once == twice


def test_a_changed_key_keeps_its_place_and_removals_take_their_lines() -> None:
    data = b'---\ncategories:\n  - "[[Trips]]"\n# where\nloc:\n- "[[Kyoto]]"\nyear: 2020\n---\nbody  \n'
    out = edit_frontmatter(data, {"loc": ["[[Osaka]]"]}, removals=["year"])
    assert out == b'---\ncategories:\n  - "[[Trips]]"\n# where\nloc:\n  - \'[[Osaka]]\'\n---\nbody  \n'


def test_line_endings_and_a_byte_order_mark_are_kept() -> None:
    data = b"\xef\xbb\xbf---\r\ntitle: x\r\n---\r\nbody\r\n"
    out = edit_frontmatter(data, {"id": "abc"})
    assert out == b"\xef\xbb\xbf---\r\ntitle: x\r\nid: abc\r\n---\r\nbody\r\n"


def test_a_body_is_replaced_only_when_given() -> None:
    data = b"---\na: 1\n---\nold  \n"
    assert edit_frontmatter(data, {}, body="new\t\n") == b"---\na: 1\n---\nnew\t\n"
    assert edit_frontmatter(data, {}) == data


@pytest.mark.parametrize(
    "data",
    [
        b"---\ncreated: {{date}}\n---\nA template\n",  # not YAML: cannot be edited in place
        b"---\n- a list\n- not a mapping\n---\n",
    ],
)
def test_frontmatter_that_is_not_a_mapping_is_refused_untouched(data: bytes) -> None:
    with pytest.raises(codec.CodecError):
        edit_frontmatter(data, {"id": "x"})


def test_the_strategy_makes_real_yaml() -> None:
    # The generated notes are YAML PyYAML itself accepts (so the property tests real input).
    sample = b'---\nk: "[[a]]"\nl:\n- "[[b]]"\n---\n'
    assert yaml.safe_load(codec.split_frontmatter(sample.decode())[0]) == {"k": "[[a]]", "l": ["[[b]]"]}
