"""Properties of the offline classifier and its signals (``classify`` and ``signals``).

The module docstrings promise: the verdict depends only on the texts and situations
(never on candidate order, duplicates of a candidate, or the clock); two lessons for
different situations never conflict; ``contradicts`` needs alignment and a named
conflict; a ``novel`` verdict never names a target; units are normalised; and signals
of a text do not depend on its spelling (lower case, NFC/NFD, CRLF, extra spaces; an
upper-case word before a number is an identifier, "ADR 12", so capitals are not spelling).
"""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.lifecycle.classify import ALIGNED, RELATED, Lesson, classify, compare
from engram.lifecycle.signals import analyse, sentences, value_changes

SUBJECTS = ("the staging database", "the build server", "the API gateway", "the nightly backup", "the cache")
VERBS = ("listens on", "runs", "uses", "returns", "keeps")
OBJECTS = ("port 5432", "4 parallel jobs", "JSON", "30 days of logs", "pgbouncer", "port 6432", "XML",
           "8 parallel jobs", "7 days of logs", "Redis")
TAILS = ("", " in production", " during the night", " for every tenant", " behind the load balancer")


@st.composite
def lessons(draw: st.DrawFn) -> str:
    return (f"{draw(st.sampled_from(SUBJECTS)).capitalize()} {draw(st.sampled_from(VERBS))} "
            f"{draw(st.sampled_from(OBJECTS))}{draw(st.sampled_from(TAILS))}.")


SITUATIONS = st.sampled_from((None, "deploying to staging", "deploying to production", "on a cold cache"))
LAWS = settings(max_examples=80)


@LAWS
@given(lessons(), st.lists(st.tuples(lessons(), SITUATIONS), min_size=1, max_size=5), SITUATIONS, st.randoms())
def test_the_verdict_ignores_candidate_order_and_repeats(
    text: str, pool: list[tuple[str, str | None]], situation: str | None, rnd  # type: ignore[no-untyped-def]
) -> None:
    candidates = [Lesson(t, s, f"id{i}") for i, (t, s) in enumerate(pool)]
    lesson = Lesson(text, situation)
    first = classify(lesson, candidates)
    shuffled = list(candidates)
    rnd.shuffle(shuffled)
    again = classify(lesson, shuffled)
    assert (again.relation, again.target, again.related, again.reasons) == (
        first.relation, first.target, first.related, first.reasons)


@LAWS
@given(lessons(), st.lists(lessons(), min_size=1, max_size=5))
def test_verdicts_are_well_formed(text: str, pool: list[str]) -> None:
    verdict = classify(Lesson(text), [Lesson(t, id=f"id{i}") for i, t in enumerate(pool)])
    ids = {f"id{i}" for i in range(len(pool))}
    assert verdict.reasons and 0.0 <= verdict.confidence <= 1.0
    if verdict.relation == "novel":
        assert verdict.target is None
        assert verdict.related is None or verdict.related in ids
        assert not verdict.warn or verdict.related is not None
    else:
        assert verdict.target in ids
        best = next(c for c in verdict.comparisons if c.id == verdict.target)
        assert best.alignment >= RELATED
    if verdict.relation == "contradicts":
        assert any(r.startswith("conflict:") for r in verdict.reasons)
        best = next(c for c in verdict.comparisons if c.id == verdict.target)
        assert best.conflicts and best.alignment >= min(ALIGNED, RELATED + 0.1)
    assert verdict.to_json()["relation"] == verdict.relation


@LAWS
@given(lessons(), lessons())
def test_lessons_for_different_situations_never_conflict(a: str, b: str) -> None:
    c = compare(Lesson(a, "deploying to staging"), Lesson(b, "deploying to production", "x"))
    assert c.situation == "different" and c.relation == "novel"


@LAWS
@given(lessons())
def test_a_lesson_against_itself_is_a_duplicate(text: str) -> None:
    verdict = classify(Lesson(text), [Lesson(text, id="same")])
    assert (verdict.relation, verdict.target) == ("duplicate", "same")


@LAWS
@given(lessons(), st.sampled_from(("lower", "nfd", "crlf", "spaces")))
def test_signals_do_not_depend_on_spelling(text: str, how: str) -> None:
    respelled = {
        "lower": text.lower(), "nfd": unicodedata.normalize("NFD", text.replace("e", "é")),
        "crlf": text.replace(" ", "\r\n", 1), "spaces": "  " + text.replace(" ", "   ") + "\n",
    }[how]
    original = text.replace("e", "é") if how == "nfd" else text
    a, b = analyse(original), analyse(respelled)
    assert (a.stems, a.denied, a.quantities, a.orders) == (b.stems, b.denied, b.quantities, b.orders)


@given(st.sampled_from(("timeout", "interval", "ttl")), st.integers(1, 600))
def test_the_same_duration_in_other_units_is_no_change(key: str, seconds: int) -> None:
    assert value_changes(analyse(f"The {key} is {seconds} s."), analyse(f"The {key} is {seconds * 1000} ms.")) == []
    assert value_changes(analyse(f"The {key} is {seconds} s."), analyse(f"The {key} is {seconds + 1} s."))


@given(st.lists(st.sampled_from(("Restart the worker.", "Check the lock!", "Is it idempotent?",
                                 "- drain the node", "2. cordon it", "plain words without an end")),
                min_size=1, max_size=6))
def test_splitting_into_sentences_keeps_every_word(parts: list[str]) -> None:
    text = "\n".join(parts)
    words = {w for w in text.replace("-", " ").split() if w.isalpha()}
    assert words <= {w for s in sentences(text) for w in s.replace("-", " ").split()}
    assert all(s.strip() == s and s for s in sentences(text))


def test_a_contradiction_needs_the_same_subject() -> None:
    c = compare(Lesson("Staging uses 2 replicas."), Lesson("Production uses 6 replicas.", id="x"))
    assert c.relation != "contradicts"
    c = compare(Lesson("Production uses 2 replicas."), Lesson("Production uses 6 replicas.", id="x"))
    assert c.relation == "contradicts" and any("6" in x and "2" in x for x in c.conflicts)


def test_an_empty_candidate_is_ignored_and_no_candidates_is_novel() -> None:
    assert classify(Lesson("Anything at all."), []).relation == "novel"
    verdict = classify(Lesson("Anything at all."), [Lesson("   ", id="blank")])
    assert verdict.relation == "novel" and verdict.comparisons == ()
