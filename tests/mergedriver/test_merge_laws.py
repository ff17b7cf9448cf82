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
from tests.merge_helpers import (
    PROVENANCE,
    VERIFICATIONS,
    WORDS,
    edited_lines,
    engram,
    engram_triples,
    proposal_triples,
    synapse_triples,
)

#: ENGRAM_LAW_EXAMPLES=5000 runs a deeper search (the default keeps the suite fast).
EXAMPLES = int(os.environ.get("ENGRAM_LAW_EXAMPLES", "150"))
LAWS = settings(max_examples=EXAMPLES)
PATH = "engineering/python/copying-a-frozen-dataclass.md"
SYN_PATH = "synapses/extends/syn-1a6b906f8bfcf8f1.yaml"
PROP_PATH = "proposals/archive/prop-3f9a0c1d2e4b5a6c.yaml"


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


# --------------------------------------------------------------------------- lifecycle fields


def _records(data: bytes, key: str) -> list[str]:
    return [codec.dump_yaml(r) for r in codec.parse_engram(data)[0].get(key) or []]


@LAWS
@given(engram_triples())
def test_lifecycle_records_from_either_side_survive(triple: tuple[bytes, bytes, bytes]) -> None:
    """provenance and verification events only grow; preconditions merge as a set; a
    skill's steps stay one side's whole list; failure counts add."""
    base, ours, theirs = triple
    merged = merge_file(base, ours, theirs, PATH).data
    meta = codec.parse_engram(merged)[0]
    for key in ("provenance", "verifications"):
        kept = set(_records(merged, key))
        base_records = set(_records(base, key))
        for side in (ours, theirs):
            for record in set(_records(side, key)) - base_records:
                assert record in kept, (key, record)
    sides = [codec.parse_engram(s)[0] for s in (ours, theirs)]
    if "steps" in meta:
        assert meta["steps"] in [s.get("steps") for s in sides]
    b = codec.parse_engram(base)[0]
    if ours == theirs:  # byte-identical sides are one edit (docs/merge.md)
        sides = sides[:1]
    grown = sum(s.get("failedUses", 0) - b.get("failedUses", 0) for s in sides)
    assert meta.get("failedUses", 0) == b.get("failedUses", 0) + grown
    for when in ("lastFailedAt", "lastVerifiedAt", "deactivatedAt"):
        stamps = [s[when] for s in sides if when in s]
        if stamps:
            assert meta[when] == max(stamps)


def test_provenance_and_verifications_union_in_a_concrete_merge() -> None:
    base = engram()
    ours = engram(provenance=[PROVENANCE[0]], verifications=[VERIFICATIONS[0]], updatedAt="2026-06-22T10:00:00.000Z")
    theirs = engram(provenance=[PROVENANCE[1]], verifications=[VERIFICATIONS[1]], updatedAt="2026-06-22T11:00:00.000Z")
    meta = codec.parse_engram(merge_file(base, ours, theirs, PATH).data)[0]
    assert {codec.dump_yaml(p) for p in meta["provenance"]} == {
        codec.dump_yaml(PROVENANCE[0]), codec.dump_yaml(PROVENANCE[1])
    }
    assert len(meta["verifications"]) == 2


def test_two_edits_of_a_skills_steps_keep_one_whole_procedure_and_flag_it() -> None:
    base = engram(steps=["a", "b"])
    ours = engram(steps=["a", "b", "c"], updatedAt="2026-06-22T10:00:00.000Z", updatedBy="alice")
    theirs = engram(steps=["b", "a"], updatedAt="2026-06-22T11:00:00.000Z", updatedBy="bob")
    result = merge_file(base, ours, theirs, PATH)
    meta = codec.parse_engram(result.data)[0]
    assert meta["steps"] == ["b", "a"]  # the later edit, whole
    assert any(note.startswith("steps:") for note in meta["mergeConflicts"])
    assert merge_file(base, theirs, ours, PATH).data == result.data


# --------------------------------------------------------------------------- proposals


@LAWS
@given(proposal_triples())
def test_proposal_merge_laws(triple: tuple[bytes, bytes, bytes]) -> None:
    base, ours, theirs = triple
    result = merge_file(base, ours, theirs, PROP_PATH)
    assert result.ok and result.kind in ("proposal", "trivial")
    assert merge_file(base, theirs, ours, PROP_PATH).data == result.data
    merged = codec.parse_proposal(result.data)
    assert codec.render_proposal(merged) == result.data
    sides = [codec.parse_proposal(s) for s in (ours, theirs)]
    rank = {"open": 0, "dismissed": 1, "accepted": 2}
    assert rank[merged["status"]] == max(rank[s["status"]] for s in sides)
    decider = next(s for s in sides if s["status"] == merged["status"])
    if merged["status"] != "open" and sides[0]["status"] != sides[1]["status"]:
        assert merged.get("decidedBy") == decider.get("decidedBy")
    for side in sides:
        assert set(side["targets"]) - set(codec.parse_proposal(base)["targets"]) <= set(merged["targets"])
    assert merge_file(base, ours, base, PROP_PATH).data == ours
    assert merge_file(base, base, ours, PROP_PATH).data == ours
    assert merge_file(base, ours, ours, PROP_PATH).data == ours


def test_two_successors_merge_quietly_and_symmetrically_for_sync_to_settle() -> None:
    base = engram()
    ours = engram(status="superseded", supersededBy="01J8ZQ7TRY9F8G7H6J5K4L3M2N",
                  deactivatedAt="2026-06-22T10:00:00.000Z", updatedAt="2026-06-22T10:00:00.000Z")
    theirs = engram(status="superseded", supersededBy="01J8ZQ7TRY9F8G7H6J5K4L3M2P",
                    deactivatedAt="2026-06-22T11:00:00.000Z", updatedAt="2026-06-22T11:00:00.000Z")
    result = merge_file(base, ours, theirs, PATH)
    assert result.data == merge_file(base, theirs, ours, PATH).data
    meta = codec.parse_engram(result.data)[0]
    assert meta["supersededBy"] == "01J8ZQ7TRY9F8G7H6J5K4L3M2P" and meta["status"] == "superseded"
    assert meta["deactivatedAt"] == "2026-06-22T11:00:00.000Z"
    assert not any(n.startswith("supersededBy") for n in meta.get("mergeConflicts", []))
