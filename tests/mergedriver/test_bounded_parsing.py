"""Reading is bounded: aliases, deep nesting, oversize and binary input are refused fast.

Files arrive from teammates through git, so the codec (engram's one reader) and the
merge driver must turn any input into a value or a CodecError — never a hang, a
MemoryError or a RecursionError. The fuzz tests below feed them arbitrary bytes and
mutated real files on a bounded hypothesis budget (derandomized in CI).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergedriver import codec, yamlio
from mergedriver.__main__ import MAX_INPUT_BYTES
from mergedriver.merge import merge_file
from tests.hostile_helpers import ALIAS_BOMB, bomb_item, bomb_synapse, nested_item
from tests.merge_helpers import engram, synapse

ALIAS = "YAML aliases \\(\\*name\\) are not allowed"


@pytest.mark.parametrize(
    "text",
    [
        ALIAS_BOMB,
        "a: &x hello\nb: *x\n",  # a scalar alias
        "a: &x [1, 2]\nb: *x\n",  # a list alias
        "base: &b {k: v}\nmerged:\n  <<: *b\n",  # a merge key
        "a: &x [*x]\n",  # a recursive one
    ],
)
def test_yaml_aliases_are_refused_everywhere(text: str) -> None:
    with pytest.raises(codec.CodecError, match=ALIAS):
        codec.load_yaml(text)  # engram.yaml and the user config go through this
    with pytest.raises(codec.CodecError, match=ALIAS):
        codec.parse_engram(f"---\nid: X1\ntitle: t\n{text}\n---\nbody\n".encode())
    with pytest.raises(codec.CodecError, match=ALIAS):
        codec.parse_synapse(f"id: s\nfrom: a\nto: b\nkind: extends\n{text}\n".encode())


def test_an_anchor_nobody_refers_to_is_harmless() -> None:
    assert codec.load_yaml("a: &x hello\nb: 2\n") == {"a": "hello", "b": 2}


def test_nesting_is_capped_below_what_python_can_walk() -> None:
    ok = "v: " + "[" * yamlio.MAX_DEPTH + "]" * yamlio.MAX_DEPTH  # depth 64 inside the mapping
    assert codec.load_yaml(ok.replace("v: [", "v: ", 1).replace("]", "", 1)) is not None
    with pytest.raises(codec.CodecError, match="nested more than 64 levels deep"):
        codec.load_yaml(ok)
    for depth in (100, 990, 5000, 100_000):  # libyaml's own limit is 1,000
        with pytest.raises(codec.CodecError, match="nest"):
            codec.parse_engram(nested_item(depth))


@pytest.mark.parametrize(
    ("data", "problem", "error"),
    [
        (b"---\nid: x\n---\n" + b"a" * codec.MAX_ITEM_BYTES, "the file is 4,194,318 bytes; engram reads at most 4,194,304", codec.TooLarge),
        (b"---\nid: x\nsummary: " + b"s" * codec.MAX_FRONTMATTER_BYTES + b"\n---\n", "the frontmatter is 262,160 characters; engram reads at most 262,144", codec.TooLarge),
        (b"---\nid: x\n---\n" + b"text " * 4000 + b"\x00", "binary data \\(NUL bytes\\)", codec.BinaryData),
    ],
)
def test_size_and_binary_limits(data: bytes, problem: str, error: type[Exception]) -> None:
    with pytest.raises(error, match=problem):
        codec.parse_engram(data)


def test_synapse_limit() -> None:
    big = synapse() + b"note: '" + b"n" * codec.MAX_SYNAPSE_BYTES + b"'\n"
    with pytest.raises(codec.TooLarge, match="engram reads at most 1,048,576"):
        codec.parse_synapse(big)


def test_a_bomb_on_either_side_falls_back_to_a_text_merge_that_keeps_both() -> None:
    base = engram("one\n")
    ours = engram("one\nours line\n", updatedBy="alice", version=2)
    bomb = bomb_item(item_id="01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ")
    for o, t in ((ours, bomb), (bomb, ours)):
        result = merge_file(base, o, t, "engineering/python/item.md")
        assert (result.ok, result.kind) == (False, "fallback")
        assert "aliases" in (result.reason or "")
        assert b"ours line" in result.data and b"*l8" in result.data  # nothing dropped
    syn = synapse()
    result = merge_file(syn, synapse(weight=0.9), bomb_synapse(), "synapses/extends/syn-x.yaml")
    assert (result.ok, result.kind) == (False, "fallback") and "aliases" in (result.reason or "")


def run_driver(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mergedriver", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_driver_refuses_a_bomb_and_an_oversize_side_leaving_a_conflict(tmp_path: Path) -> None:
    (tmp_path / ".engram").mkdir()
    base, ours = tmp_path / "base", tmp_path / "ours"
    base.write_bytes(engram("one\n"))
    ours.write_bytes(engram("one\nours\n", updatedBy="alice", version=2))
    bomb = tmp_path / "bomb"
    bomb.write_bytes(bomb_item(item_id="01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"))
    proc = run_driver([str(base), str(ours), str(bomb), "7", "engineering/python/item.md"], tmp_path)
    assert proc.returncode == 1 and "YAML aliases (*name) are not allowed" in proc.stderr
    assert b"<<<<<<< ours" in ours.read_bytes()

    ours.write_bytes(engram("one\nours\n", updatedBy="alice", version=2))
    before = ours.read_bytes()
    huge = tmp_path / "huge"
    with open(huge, "wb") as fh:  # sparse: the driver must not read it at all
        fh.truncate(MAX_INPUT_BYTES + 1)
    proc = run_driver([str(base), str(ours), str(huge), "7", "engineering/python/item.md"], tmp_path)
    assert proc.returncode == 1
    assert f"theirs is {MAX_INPUT_BYTES + 1:,} bytes, over the {MAX_INPUT_BYTES:,} the driver reads" in proc.stderr
    assert ours.read_bytes() == before


def test_an_anchor_on_a_null_key_found_by_the_fuzzer_reads_as_text() -> None:
    # Was a KeyError (the key None read back as 'None'): any exception but CodecError
    # escaping the codec would stop a refresh.
    data = codec.parse_synapse(b"&id: x\nid: s\nfrom: a\nto: b\nkind: extends\n")
    assert data["null"] == "x"
    assert codec.parse_synapse(codec.render_synapse(data)) == data


# ---------------------------------------------------------------------- fuzzing

VALID_ITEM = engram("first line\nsecond line\n", derived=["- → [[a/b|B · extends]]"], source={"file": "x", "line": 3})
VALID_SYNAPSE = synapse()
# Characters that steer YAML and the frontmatter splitter.
TRICKY = st.sampled_from([*"*&!|>{}[]:,-#'\"%@`?\n\t \\", "---\n", "\r\n", "\x00", "\ufeff", "\u2028", "<<: ", "*a", "&a "])


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few insertions, deletions and byte flips at random places."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(out)))
        op = draw(st.sampled_from(["insert", "delete", "flip"]))
        if op == "insert":
            out[at:at] = draw(st.one_of(TRICKY, st.text(max_size=8))).encode("utf-8", "surrogatepass")
        elif op == "delete":
            del out[at : at + draw(st.integers(1, 40))]
        elif at < len(out):
            out[at] = draw(st.integers(0, 255))
    return bytes(out)


def budget(examples: int) -> settings:
    """A fixed fuzz budget in CI; a bigger profile (``thorough``) raises it."""
    return settings(max_examples=max(examples, settings().max_examples))


def _parse_or_refuse(data: bytes, parse: object) -> None:
    try:
        result = parse(data)  # type: ignore[operator]
    except codec.CodecError:
        return
    # What the reader accepts, the writer can write and the reader reads back the same.
    if parse is codec.parse_engram:
        meta, content, derived = result
        again = codec.parse_engram(codec.render_engram(meta, content, derived.splitlines()))
        assert again[0] == meta
    else:
        assert codec.parse_synapse(codec.render_synapse(result)) == result


@budget(300)
@given(st.one_of(st.binary(max_size=600), mutated(VALID_ITEM)))
def test_fuzz_the_frontmatter_reader(data: bytes) -> None:
    _parse_or_refuse(data, codec.parse_engram)


@budget(200)
@given(st.one_of(st.binary(max_size=400), mutated(VALID_SYNAPSE)))
def test_fuzz_the_synapse_reader(data: bytes) -> None:
    _parse_or_refuse(data, codec.parse_synapse)


@budget(150)
@given(mutated(VALID_ITEM), mutated(VALID_ITEM))
def test_fuzz_the_merge_drivers_parse_path(ours: bytes, theirs: bytes) -> None:
    result = merge_file(VALID_ITEM, ours, theirs, "a/b.md")
    assert isinstance(result.data, bytes)
    if result.ok and result.kind == "engram":
        codec.parse_engram(result.data)  # a structured result always parses
    if not result.ok:
        assert result.kind in ("fallback", "text")
