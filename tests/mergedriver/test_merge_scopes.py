"""Merge laws for the scope fields: recall evidence, endorsements, promotions, example.

Two machines recalling, endorsing and promoting the same item converge: the sets are
unions of both sides' additions (minus what a side removed), the result is the same
bytes whichever side is "ours", and nothing either side added is lost.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mergedriver.merge import merge_file
from tests.merge_helpers import AUTHORS, TIMES, engram, meta, parsed

PATH = "engineering/http/retries-need-idempotency-keys.md"
DAYS = ("2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04")
ENDORSEMENTS = tuple({"by": by, "at": at, "note": note} for by in AUTHORS for at in TIMES[:2] for note in ("", "exact"))
PROMOTIONS = tuple(
    {"from": src, "to": to, "team": team, "by": by, "at": TIMES[0]}
    for src, to in (("private", "team"), ("team", "org")) for team in ("payments", "search") for by in AUTHORS[:2]
)
SET_FIELDS = {"recalledBy": AUTHORS, "recallDays": DAYS, "endorsements": ENDORSEMENTS, "promotions": PROMOTIONS}


@st.composite
def scoped(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    base = {k: draw(st.lists(st.sampled_from(v), unique_by=repr, max_size=3)) for k, v in SET_FIELDS.items()}

    def side() -> dict[str, Any]:
        out = {k: [x for x in base[k] if draw(st.booleans())] + draw(st.lists(st.sampled_from(v), max_size=2))
               for k, v in SET_FIELDS.items()}
        out = {k: list({repr(x): x for x in xs}.values()) for k, xs in out.items()}
        out["updatedAt"] = draw(st.sampled_from(TIMES))
        if draw(st.booleans()):
            out["example"] = draw(st.sampled_from(("In payments, edit ledger.py.", "See PAY-231.")))
        return out

    return base, side(), side()


def render(fields: dict[str, Any]) -> bytes:
    return engram(**meta(**{k: v for k, v in fields.items() if v != []}))


@settings(max_examples=150)
@given(scoped())
def test_scope_fields_merge_symmetrically_and_keep_every_addition(triple: tuple[dict, dict, dict]) -> None:
    base, ours, theirs = triple
    b, o, t = render(base), render(ours), render(theirs)
    merged = merge_file(b, o, t, PATH)
    assert merged.ok
    assert merge_file(b, t, o, PATH).data == merged.data
    result = parsed(merged.data)[0]
    for key in SET_FIELDS:
        got = [repr(x) for x in result.get(key, [])]
        assert len(got) == len(set(got)), key  # a set: no entry twice
        for side in (ours, theirs):
            for entry in side[key]:
                if entry not in base[key]:
                    assert repr(entry) in got, (key, entry)  # an addition is never lost
        for entry in base[key]:
            kept = entry in ours[key] and entry in theirs[key]
            assert (repr(entry) in got) == kept, (key, entry)  # a removal on either side holds
    if "example" in ours or "example" in theirs:
        assert result.get("example") in (ours.get("example"), theirs.get("example"))


def test_two_machines_recalling_on_different_days_add_up() -> None:
    base = render({"recalledBy": ["alice"], "recallDays": ["2026-03-01"]})
    ours = render({"recalledBy": ["alice"], "recallDays": ["2026-03-01", "2026-03-02"], "updatedAt": TIMES[1]})
    theirs = render({"recalledBy": ["alice", "bob"], "recallDays": ["2026-03-01", "2026-03-03"],
                     "endorsements": [ENDORSEMENTS[0]], "updatedAt": TIMES[2]})
    result = parsed(merge_file(base, ours, theirs, PATH).data)[0]
    assert result["recalledBy"] == ["alice", "bob"]
    assert result["recallDays"] == ["2026-03-01", "2026-03-02", "2026-03-03"]
    assert result["endorsements"] == [ENDORSEMENTS[0]]
