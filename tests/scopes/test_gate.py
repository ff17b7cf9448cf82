"""The generalization gate: the tells it finds, what it leaves alone, its restatements."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.scopes.gate import suggest, tells


def kinds(body: str, projects: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tells(body, projects)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Edit dashboard.py and config/app.yaml.", [("file", "dashboard.py"), ("file", "config/app.yaml")]),
        ("Logs land in /var/log/ledger/today.", [("file", "/var/log/ledger/today")]),
        ("Run ./scripts/rebuild first.", [("file", "./scripts/rebuild")]),
        ("See src/api/routes for the handler.", [("file", "src/api/routes")]),
        ("tests/test_x.py::test_y fails.", [("test", "tests/test_x.py::test_y")]),
        ("test_refund_twice covers it; so does TestLedger.", [("test", "test_refund_twice"), ("test", "TestLedger")]),
        ("Tracked in PAY-231 and #482.", [("ticket", "PAY-231"), ("ticket", "#482")]),
        ("Per dec-014 and con-003-a7f3 (ADR-0007).",
         [("decision", "dec-014"), ("decision", "con-003-a7f3"), ("decision", "ADR-0007")]),
    ],
)
def test_the_tells(body: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "Text is UTF-8; hashes are SHA-256; dates are ISO-8601; see RFC-7231 and PEP-8.",
        "Read and/or write the survey/claim flow once per request.",
        "Use https://example.com/docs/page for background.",
        "Retry with exponential backoff and jitter; cap at 30 s.",
        "A version like 1.2.3 or 10.0 is not a file.",
    ],
)
def test_general_prose_passes(body: str) -> None:
    assert tells(body) == ()


def test_project_names_are_whole_words_case_insensitive() -> None:
    assert kinds("In Payments we batch.", ("payments",)) == [("project", "Payments")]
    assert kinds("repayments are batched", ("payments",)) == []
    assert kinds("the payments_ledger table", ("payments",)) == [("project", "payments")]
    assert kinds("ab is short", ("ab",)) == []  # names under three characters are ignored


def test_the_suggestion_prefers_a_general_endorsement_note() -> None:
    body = "Append to dashboard.py (PAY-2)."
    found = tells(body)
    assert suggest(body, found, ["also see PAY-2", "Annotate regime changes."]) == "Annotate regime changes."
    assert suggest(body, found, ["edit dashboard.py"]) == "Append to the file."


@settings(max_examples=100)
@given(st.text(max_size=300))
def test_tells_never_overlap_and_point_at_their_text(body: str) -> None:
    found = tells(body, ("acme",))
    for a, b in itertools.pairwise(found):
        assert a.end <= b.start
    for t in found:
        assert body[t.start : t.end] == t.text
    assert tells(suggest(body, found, (), ("acme",)), ("acme",)) == () or found == ()
