"""The merge laws, checked with hypothesis on generated items and synapses.

Deterministic and symmetric (swapping ours and theirs gives the same bytes), identities
(``merge(b, x, b) == merge(b, b, x) == merge(b, x, x) == x``, also when the unchanged
side is spelled differently), every content line either side added survives, and a
structured result always parses.
"""

from __future__ import annotations

import os

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mergedriver import codec
from mergedriver.lines import diff3
from mergedriver.merge import merge_file
from tests.merge_helpers import WORDS, edited_lines, engram_triples, synapse_triples

#: ENGRAM_LAW_EXAMPLES=5000 runs a deeper search (the default keeps the suite fast).
EXAMPLES = int(os.environ.get("ENGRAM_LAW_EXAMPLES", "150"))
LAWS = settings(max_examples=EXAMPLES)
PATH = "engineering/python/copying-a-frozen-dataclass.md"
SYN_PATH = "synapses/extends/syn-1a6b906f8bfcf8f1.yaml"


def added_lines(base: str, side: str) -> set[str]:
    base_lines = set(base.split("\n"))
    return {line for line in side.split("\n") if line.strip() and line not in base_lines}


@LAWS
@given(engram_triples())
def test_engram_merge_is_symmetric_and_deterministic(triple: tuple[bytes, bytes, bytes]) -> None:
    base, ours, theirs = triple
    first = merge_file(base, ours, theirs, PATH)
    assert merge_file(base, theirs, ours, PATH).data == first.data
    assert merge_file(base, ours, theirs, PATH).data == first.data
    assert first.ok


@LAWS
@given(engram_triples())
def test_engram_merge_result_parses_and_keeps_every_added_line(triple: tuple[bytes, bytes, bytes]) -> None:
    base, ours, theirs = triple
    result = merge_file(base, ours, theirs, PATH)
    meta, content, _ = codec.parse_engram(result.data)  # raises if it does not parse
    assert codec.render_engram(meta, content, _split(result.data)) == result.data
    assert meta["contentHash"] == codec.content_hash(content)
    kept = set(content.split("\n"))
    base_content = codec.parse_engram(base)[1]
    for side in (ours, theirs):
        for line in added_lines(base_content, codec.parse_engram(side)[1]):
            assert line in kept or f"> {line}" in kept, line


def _split(data: bytes) -> list[str]:
    derived = codec.parse_engram(data)[2]
    return derived.split("\n") if derived else []


@LAWS
@given(engram_triples())
def test_engram_identities(triple: tuple[bytes, bytes, bytes]) -> None:
    base, ours, _ = triple
    assert merge_file(base, ours, base, PATH).data == ours
    assert merge_file(base, base, ours, PATH).data == ours
    assert merge_file(base, ours, ours, PATH).data == ours


@LAWS
@given(engram_triples())
def test_an_unchanged_side_spelled_differently_still_yields_the_other_side(
    triple: tuple[bytes, bytes, bytes],
) -> None:
    # CRLF line endings: the same item, other bytes, so the structured merge really runs.
    base, ours, _ = triple
    assume(ours != base)
    respelled = base.replace(b"\n", b"\r\n")
    assert merge_file(base, ours, respelled, PATH).data == ours
    assert merge_file(base, respelled, ours, PATH).data == ours


@LAWS
@given(engram_triples())
def test_engram_merge_without_a_base_is_symmetric(triple: tuple[bytes, bytes, bytes]) -> None:
    _, ours, theirs = triple
    result = merge_file(b"", ours, theirs, PATH)
    assert result.data == merge_file(None, theirs, ours, PATH).data
    codec.parse_engram(result.data)


@LAWS
@given(synapse_triples())
def test_synapse_merge_laws(triple: tuple[bytes, bytes, bytes]) -> None:
    base, ours, theirs = triple
    result = merge_file(base, ours, theirs, SYN_PATH)
    assert result.ok
    assert merge_file(base, theirs, ours, SYN_PATH).data == result.data
    merged = codec.parse_synapse(result.data)
    keys = {(e["description"], e["addedBy"]) for e in merged["evidence"]}
    base_keys = {(e["description"], e["addedBy"]) for e in codec.parse_synapse(base)["evidence"]}
    for side in (ours, theirs):
        for entry in codec.parse_synapse(side)["evidence"]:
            if (entry["description"], entry["addedBy"]) not in base_keys:
                assert (entry["description"], entry["addedBy"]) in keys
    assert merge_file(base, ours, base, SYN_PATH).data == ours
    assert merge_file(base, base, ours, SYN_PATH).data == ours


@st.composite
def line_triples(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    base = draw(st.lists(st.sampled_from(WORDS), max_size=15))
    return base, draw(edited_lines(base)), draw(edited_lines(base))


@settings(max_examples=2 * EXAMPLES)
@given(line_triples())
def test_diff3_chunks_cover_every_side_and_swap_exactly(triple: tuple[list[str], list[str], list[str]]) -> None:
    base, ours, theirs = triple
    chunks = diff3(base, ours, theirs)
    assert [line for c in chunks for line in c.base] == base
    assert [line for c in chunks for line in c.ours] == ours
    assert [line for c in chunks for line in c.theirs] == theirs
    swapped = diff3(base, theirs, ours)
    flip = {"ours": "theirs", "theirs": "ours"}
    assert [(flip.get(c.kind, c.kind), c.base, c.theirs, c.ours) for c in swapped] == [
        (c.kind, c.base, c.ours, c.theirs) for c in chunks
    ]
