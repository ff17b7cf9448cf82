"""Each merge rule, on hand-made items: one test per field rule, both argument orders."""

from __future__ import annotations

from typing import Any

import pytest

from mergedriver import codec
from mergedriver.merge import CONFLICTS_KEY, flag_engram, kind_of, merge_file
from tests.merge_helpers import ITEM_ID, T0, engram, evidence, synapse

PATH = "engineering/python/copying-a-frozen-dataclass.md"
SYN = "synapses/extends/syn-1a6b906f8bfcf8f1.yaml"
ALICE = {"updatedBy": "alice", "updatedAt": "2026-06-22T09:00:00.000Z", "version": 2}
BOB = {"updatedBy": "bob", "updatedAt": "2026-06-22T10:00:00.000Z", "version": 2}


def both_orders(base: bytes | None, ours: bytes, theirs: bytes, path: str = PATH) -> bytes:
    """Merge in both orders, assert the bytes agree, return them."""
    one = merge_file(base, ours, theirs, path)
    two = merge_file(base, theirs, ours, path)
    assert one.data == two.data
    return one.data


def merged_meta(base: bytes | None, ours: bytes, theirs: bytes) -> dict[str, Any]:
    return codec.parse_engram(both_orders(base, ours, theirs))[0]


def test_counters_add_both_sides_increments() -> None:
    base = engram(retrievalCount=10, effectiveRetrievals=4, failedUses=1)
    ours = engram(retrievalCount=13, effectiveRetrievals=5, failedUses=1, **ALICE)
    theirs = engram(retrievalCount=12, effectiveRetrievals=4, failedUses=3, **BOB)
    meta = merged_meta(base, ours, theirs)
    assert (meta["retrievalCount"], meta["effectiveRetrievals"], meta["failedUses"]) == (15, 5, 3)


def test_counters_never_go_below_zero_and_scores_add_as_floats() -> None:
    base = engram(retrievalCount=10, reinforcementScore=1.5)
    ours = engram(retrievalCount=0, reinforcementScore=2.25, **ALICE)
    theirs = engram(retrievalCount=1, reinforcementScore=0.5, **BOB)
    meta = merged_meta(base, ours, theirs)
    assert meta["retrievalCount"] == 0
    assert meta["reinforcementScore"] == pytest.approx(1.25)


def test_importance_and_confidence_add_both_deltas_clamped() -> None:
    base = engram(importance=0.5, confidence=0.5)
    ours = engram(importance=0.9, confidence=0.4, **ALICE)
    theirs = engram(importance=0.8, confidence=0.3, **BOB)
    meta = merged_meta(base, ours, theirs)
    assert meta["importance"] == 1.0  # 0.5 + 0.4 + 0.3, clamped
    assert meta["confidence"] == pytest.approx(0.2)


def test_timestamps_take_the_later_instant_not_the_larger_string() -> None:
    base = engram()
    # 10:00+02:00 is 08:00Z: earlier than 09:00Z although its text sorts later.
    ours = engram(lastRetrievedAt="2026-06-22T10:00:00+02:00", **ALICE)
    theirs = engram(lastRetrievedAt="2026-06-22T09:00:00Z", **BOB)
    meta = merged_meta(base, ours, theirs)
    assert meta["lastRetrievedAt"] == "2026-06-22T09:00:00.000Z"
    assert meta["updatedAt"] == BOB["updatedAt"]


def test_unknown_timestamps_compare_as_instants_and_equal_instants_agree() -> None:
    base = engram(reviewedAt="2026-01-01T00:00:00Z")
    ours = engram(reviewedAt="2026-06-22T10:00:00.000+00:00", **ALICE)
    theirs = engram(reviewedAt="2026-06-22T10:00:00Z", **BOB)
    meta = merged_meta(base, ours, theirs)
    assert codec.parse_time(meta["reviewedAt"]) == codec.parse_time("2026-06-22T10:00:00Z")
    assert CONFLICTS_KEY not in meta


def test_tags_merge_as_sets_with_additions_and_removals_from_both_sides() -> None:
    base = engram(tags=["gotcha", "python", "perf"])
    ours = engram(tags=["python", "perf", "sql"], **ALICE)  # removed gotcha, added sql
    theirs = engram(tags=["gotcha", "python", "cli", "docs"], **BOB)  # removed perf, added two
    meta = merged_meta(base, ours, theirs)
    assert meta["tags"] == ["python", "cli", "docs", "sql"]  # survivors first, then sorted
    assert CONFLICTS_KEY not in meta


def test_a_scalar_changed_on_one_side_wins() -> None:
    base = engram(status="active", kind="pattern")
    ours = engram(status="archived", kind="pattern", **ALICE)
    theirs = engram(status="active", kind="fact", **BOB)
    meta = merged_meta(base, ours, theirs)
    assert (meta["status"], meta["kind"]) == ("archived", "fact")
    assert CONFLICTS_KEY not in meta


def test_a_scalar_both_sides_changed_goes_to_the_later_update_and_is_flagged() -> None:
    base = engram(status="active", title="Old")
    ours = engram(status="archived", title="Ours title", **ALICE)
    theirs = engram(status="draft", title="Theirs title", **BOB)
    meta = merged_meta(base, ours, theirs)
    assert (meta["status"], meta["title"], meta["updatedBy"]) == ("draft", "Theirs title", "bob")
    notes = meta[CONFLICTS_KEY]
    assert any(n.startswith('status: both sides changed it; kept "draft"') and '"archived"' in n for n in notes)
    assert any('"Ours title"' in n for n in notes)  # the losing text stays visible


def test_a_scalar_tie_at_the_same_instant_is_decided_by_the_documents_not_the_roles() -> None:
    same = {"updatedBy": "carol", "updatedAt": "2026-06-22T09:00:00.000Z", "version": 2}
    base = engram(status="active")
    ours = engram(status="archived", **same)
    theirs = engram(status="draft", **same)
    status = merged_meta(base, ours, theirs)["status"]
    assert status in ("archived", "draft")


def test_the_domain_is_one_value_not_a_set() -> None:
    base = engram(domainTags=["engineering", "python"])
    ours = engram(domainTags=["engineering", "rust"], **ALICE)
    theirs = engram(domainTags=["ops", "python"], **BOB)
    meta = merged_meta(base, ours, theirs)
    assert meta["domainTags"] == ["ops", "python"]
    assert any(n.startswith("domainTags:") for n in meta[CONFLICTS_KEY])


def test_version_is_max_plus_one_and_content_hash_is_recomputed() -> None:
    base = engram("a\nb\nc\n", version=4)
    ours = engram("a changed\nb\nc\n", **{**ALICE, "version": 5})
    theirs = engram("a\nb\nc changed\n", **{**BOB, "version": 7})
    meta, content, _ = codec.parse_engram(both_orders(base, ours, theirs))
    assert content == "a changed\nb\nc changed\n"
    assert meta["version"] == 8
    assert meta["contentHash"] == codec.content_hash(content)
    assert meta["contentSize"] == len(content.encode())


def test_version_stays_when_the_result_is_the_newer_side() -> None:
    # Theirs only re-spells the base (CRLF): the result is ours, at ours' version.
    base = engram(version=4)
    ours = engram(tags=["new"], **{**ALICE, "version": 5})
    theirs = base.replace(b"\n", b"\r\n")
    assert both_orders(base, ours, theirs) == ours


def test_id_created_at_and_created_by_never_change() -> None:
    base = engram()
    ours = engram(createdAt="2020-01-01T00:00:00.000Z", **ALICE)
    theirs = engram(tags=["x"], **BOB)
    result = merge_file(base, ours, theirs, PATH)
    meta = codec.parse_engram(result.data)[0]
    assert meta["createdAt"] == T0
    assert any(n.startswith("createdAt: must not change") for n in meta[CONFLICTS_KEY])
    assert result.ok and not result.clean


def test_unknown_keys_follow_the_same_rules() -> None:
    base = engram(source={"system": "jira", "ref": "A-1"}, contextTags=["x", "y"])
    ours = engram(source={"system": "jira", "ref": "A-2"}, contextTags=["x", "y", "z"], addedOurs=1, **ALICE)
    theirs = engram(source={"system": "jira", "ref": "A-1", "url": "u"}, contextTags=["y"], **BOB)
    meta = merged_meta(base, ours, theirs)
    assert meta["source"] == {"system": "jira", "ref": "A-2", "url": "u"}
    assert meta["contextTags"] == ["y", "z"]
    assert meta["addedOurs"] == 1


def test_a_key_removed_on_one_side_and_untouched_on_the_other_is_removed() -> None:
    base = engram(supersededBy="01OTHER", tags=["a"])
    ours = engram(supersededBy=None, tags=["a"], **ALICE)
    theirs = engram(supersededBy="01OTHER", tags=["a", "b"], **BOB)
    meta = merged_meta(base, ours, theirs)
    assert "supersededBy" not in meta
    assert meta["tags"] == ["a", "b"]


def test_bodies_changed_in_different_places_merge_cleanly() -> None:
    base = engram("one\ntwo\nthree\nfour\nfive\n")
    ours = engram("one changed\ntwo\nthree\nfour\nfive\n", **ALICE)
    theirs = engram("one\ntwo\nthree\nfour\nfive changed\nsix\n", **BOB)
    result = merge_file(base, ours, theirs, PATH)
    assert codec.parse_engram(result.data)[1] == "one changed\ntwo\nthree\nfour\nfive changed\nsix\n"
    assert result.clean


def test_body_whitespace_survives_a_merge_byte_for_byte() -> None:
    # A hard line break (two trailing spaces), a tab-indented code block, trailing
    # spaces and blank lines: neither side touched them, so the merge keeps every byte.
    kept = "hard break  \nnext line\n\n\tcode(1)\n\tcode(2)\n\ntrailing   \n\n\n"
    base = engram("top\n" + kept + "end\n")
    ours = engram("top changed\n" + kept + "end\n", **ALICE)
    theirs = engram("top\n" + kept + "end changed  \n", **BOB)
    content = codec.parse_engram(both_orders(base, ours, theirs))[1]
    assert content == "top changed\n" + kept + "end changed  \n"


def test_two_insertions_at_the_same_place_are_both_kept_earlier_edit_first() -> None:
    base = engram("intro\n")
    ours = engram("intro\n- alice learned this\n", **ALICE)
    theirs = engram("intro\n- bob learned that\n", **BOB)
    meta, content, _ = codec.parse_engram(both_orders(base, ours, theirs))
    assert content == "intro\n- alice learned this\n- bob learned that\n"
    assert CONFLICTS_KEY not in meta


def test_the_same_lines_changed_on_both_sides_are_kept_in_a_callout_and_flagged() -> None:
    base = engram("intro\nthe answer is 41\noutro\n")
    ours = engram("intro\nthe answer is 42\noutro\n", **ALICE)
    theirs = engram("intro\nthe answer is 43\noutro\n", **BOB)
    result = merge_file(base, theirs, ours, PATH)
    meta, content, _ = codec.parse_engram(result.data)
    assert content == (
        "intro\n\n"
        f"> [!conflict] Merge conflict: both sides changed these lines. Keep what is right, "
        f"delete this block, then run `engram conflicts --resolve {ITEM_ID}`.\n"
        "> **alice · 2026-06-22T09:00:00.000Z**\n"
        "> the answer is 42\n"
        ">\n"
        "> **bob · 2026-06-22T10:00:00.000Z**\n"
        "> the answer is 43\n"
        "\noutro\n"
    )
    assert any(n.startswith("content: both sides changed the same lines") for n in meta[CONFLICTS_KEY])
    assert result.ok and not result.clean
    assert merge_file(base, ours, theirs, PATH).data == result.data


def test_lines_deleted_on_one_side_and_edited_on_the_other_keep_the_edit() -> None:
    base = engram("keep\ndrop me\nkeep too\n")
    ours = engram("keep\nkeep too\n", **ALICE)
    theirs = engram("keep\ndrop me, edited\nkeep too\n", **BOB)
    content = codec.parse_engram(both_orders(base, ours, theirs))[1]
    assert "> drop me, edited" in content
    assert "> *(deleted these lines)*" in content


def test_the_derived_section_merges_as_a_set_and_stays_out_of_the_hash() -> None:
    a = "- → [[eng/a|A · extends]]"
    b = "- ← [[eng/b|B · causes]]"
    c = "- → [[eng/c|C · similar_to]]"
    base = engram("text\n", [a, b])
    ours = engram("text\n", [a, b, c], **ALICE)  # linked C
    theirs = engram("text changed\n", [a], **BOB)  # unlinked B
    meta, content, derived = codec.parse_engram(both_orders(base, ours, theirs))
    assert derived.split("\n") == [a, c]
    assert meta["contentHash"] == codec.content_hash(content)


def test_items_created_on_both_sides_with_the_same_id_merge_without_a_base() -> None:
    ours = engram("shared line\nours only\n", createdAt="2026-06-20T00:00:00.000Z", createdBy="alice",
                  retrievalCount=3, **ALICE)
    theirs = engram("shared line\ntheirs only\n", createdAt="2026-06-21T00:00:00.000Z", createdBy="bob",
                    retrievalCount=5, **BOB)
    meta, content, _ = codec.parse_engram(both_orders(None, ours, theirs))
    assert (meta["createdAt"], meta["createdBy"]) == ("2026-06-20T00:00:00.000Z", "alice")
    assert meta["retrievalCount"] == 5  # no base to subtract: the larger count
    assert content == "shared line\nours only\ntheirs only\n"


def test_two_different_items_at_one_path_fall_back_to_a_text_conflict() -> None:
    ours = engram("ours\n")
    theirs = engram("theirs\n", id="01J8ZQ7TRY9F8G7H6J5K4L3M2N")
    result = merge_file(b"", ours, theirs, PATH)
    assert not result.ok and result.kind == "fallback"
    assert "different items" in (result.reason or "")
    assert b"<<<<<<<" in result.data and b"ours\n" in result.data and b"theirs\n" in result.data


def test_a_side_that_does_not_parse_falls_back_to_markers_keeping_both_sides() -> None:
    base = engram("one\n")
    ours = engram("one\ntwo\n", **ALICE)
    theirs = base.replace(b"title: ", b"title: [unclosed ").replace(b"one\n", b"one\nthree\n")
    result = merge_file(base, ours, theirs, PATH)
    assert not result.ok and result.kind == "fallback"
    assert "theirs is not a valid engram file" in (result.reason or "")
    assert b"two" in result.data and b"three" in result.data and b"=======" in result.data


def test_binary_input_keeps_ours_and_reports_a_conflict() -> None:
    result = merge_file(b"base", b"ours\x00bin", b"theirs\x00bin", "notes/blob.md")
    assert (result.data, result.ok) == (b"ours\x00bin", False)


def test_plain_markdown_uses_the_text_merge() -> None:
    base = b"# Readme\n\na\nb\nc\n"
    result = merge_file(base, b"# Readme\n\na2\nb\nc\n", b"# Readme\n\na\nb\nc2\n", "README.md")
    assert (result.kind, result.ok, result.data) == ("text", True, b"# Readme\n\na2\nb\nc2\n")


def test_synapse_weight_takes_both_deltas_and_evidence_merges_as_a_set() -> None:
    kept, dropped, edited = evidence("kept"), evidence("dropped"), evidence("edited", confidence=0.5)
    base = synapse([kept, dropped, edited], weight=0.5)
    ours = synapse(
        [kept, {**edited, "confidence": 0.9}, evidence("ours", "alice")],  # dropped one, edited one
        weight=0.7, updatedAt="2026-06-22T09:00:00.000Z", updatedBy="alice",
    )
    theirs = synapse(
        [kept, dropped, evidence("theirs", "bob")],  # removed the one ours edited
        weight=0.6, updatedAt="2026-06-22T10:00:00.000Z", updatedBy="bob",
    )
    data = codec.parse_synapse(both_orders(base, ours, theirs, SYN))
    assert data["weight"] == pytest.approx(0.8)
    got = {e["description"]: e for e in data["evidence"]}
    assert set(got) == {"kept", "edited", "ours", "theirs"}
    assert got["edited"]["confidence"] == 0.9  # an edit beats a removal
    assert data["updatedAt"] == "2026-06-22T10:00:00.000Z"


def test_synapses_with_different_endpoints_are_not_merged() -> None:
    base = synapse()
    ours = synapse(weight=0.9)
    theirs = synapse(to="01J8ZQ7TRY9F8G7H6J5K4L3M2X", weight=0.1)
    result = merge_file(base, ours, theirs, SYN)
    assert not result.ok and "different edges" in (result.reason or "")


def test_flag_engram_adds_a_note_and_bumps_the_version() -> None:
    data = flag_engram(engram(version=3), "deleted on one side and edited on the other")
    meta = codec.parse_engram(data)[0]
    assert meta["version"] == 4
    assert meta[CONFLICTS_KEY] == ["deleted on one side and edited on the other"]


def test_existing_flags_merge_as_a_set_so_a_resolution_on_one_side_sticks() -> None:
    base = engram(**{CONFLICTS_KEY: ["content: old conflict"]})
    ours = engram(**{CONFLICTS_KEY: None}, **ALICE)  # resolved
    theirs = engram(tags=["x"], **{CONFLICTS_KEY: ["content: old conflict"]}, **BOB)
    assert CONFLICTS_KEY not in merged_meta(base, ours, theirs)


def test_equal_counts_reached_independently_still_add() -> None:
    base = engram(retrievalCount=0, importance=0.5)
    ours = engram(retrievalCount=3, importance=0.6, **ALICE)
    theirs = engram(retrievalCount=3, importance=0.6, tags=["x"], **BOB)
    meta = merged_meta(base, ours, theirs)
    assert (meta["retrievalCount"], meta["importance"]) == (6, pytest.approx(0.7))


def test_only_files_in_the_synapse_layout_are_merged_as_synapses() -> None:
    assert kind_of("synapses/extends/syn-1.yaml", None, b"", b"") == "synapse"
    assert kind_of("memory/private/synapses/causes/syn-2.yaml", None, b"", b"") == "synapse"
    assert kind_of("config/synapses.yaml", None, b"", b"") == "text"
    assert kind_of("notes/synapses/list.yaml", None, b"", b"") == "text"
    assert kind_of("notes/plain.md", None, b"# no frontmatter\n", b"") == "text"
    assert kind_of("notes/item.md", None, engram(), b"") == "engram"
