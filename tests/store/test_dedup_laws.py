"""Dedup measures: formatting never makes new knowledge, similarity is a fair measure.

Laws of :mod:`engram.store.dedup`: a fingerprint ignores case, punctuation and layout;
similarity is in [0, 1], 1 for a text and itself, the same whichever side each text is
on; boilerplate lines leave the comparison; the candidate query is valid FTS5 that asks
for any two of the rarest words, and only words held by few items.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.dedup import (
    BOILERPLATE_HOLDERS,
    SAME_SUBJECT,
    LineCounts,
    boilerplate,
    candidate_match,
    fingerprint,
    line_keys,
    normalize_text,
    prepare,
    same_subject,
    similarity,
)

vocabulary = st.sampled_from(
    ["postgres", "vacuum", "bloat", "autovacuum", "harbour", "harbor", "colour", "color", "lights", "ferry", "docks", "replica", "lag", "budget", "retry", "queue", "tenant", "shard", "Ölçek", "数据库", "café", "naïve"]
)
texts = st.lists(vocabulary, max_size=40).map(" ".join)
separators = st.sampled_from([" ", "  ", "\t", "\n", ", ", " - ", "! ", "... ", " * ", "\r\n", " — "])


@st.composite
def reformatted(draw: st.DrawFn) -> tuple[str, str]:
    """A text, and the same words in other case, punctuation and layout."""
    words = draw(st.lists(vocabulary, min_size=1, max_size=30))
    plain = " ".join(words)
    styled = ""
    for word in words:
        styled += draw(st.sampled_from([word, word.upper(), word.title(), f"**{word}**", f"`{word}`"]))
        styled += draw(separators)
    return plain, styled


# ---------------------------------------------------------------------- fingerprints


@settings(max_examples=150)
@given(reformatted(), reformatted())
def test_formatting_never_changes_a_fingerprint(title: tuple[str, str], body: tuple[str, str]) -> None:
    assert fingerprint(title[0], body[0]) == fingerprint(title[1], body[1])
    assert normalize_text(body[1]) == normalize_text(body[0]).casefold()


def normalize_by_regex(text: str) -> str:
    """The words as ``\\w+`` finds them in the NFKC, case-folded text: what
    :func:`normalize_text` must give (it takes a C-level path for ASCII text)."""
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


@settings(max_examples=300)
@given(st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127)), texts))
def test_normalised_text_is_the_words_a_regex_finds(text: str) -> None:
    assert normalize_text(text) == normalize_by_regex(text)


def test_fingerprints_tell_title_and_body_apart() -> None:
    assert fingerprint("a b", "c") != fingerprint("a", "b c")  # the boundary is part of it
    assert fingerprint("Vacuum", "bloat") != fingerprint("Vacuum", "bloats")
    assert len(fingerprint("x", "y")) == 32


def test_normalisation_folds_compatibility_forms_and_case() -> None:
    assert normalize_text("ﬁle ＡＢＣ Straße") == "file abc strasse"
    assert normalize_text("cafe\u0301") == normalize_text("café")  # NFD and NFC alike
    assert normalize_text("  --- !!! ") == ""


# ---------------------------------------------------------------------- similarity


@settings(max_examples=200)
@given(texts, texts, texts, texts)
def test_similarity_is_a_symmetric_measure_in_the_unit_interval(ta: str, a: str, tb: str, b: str) -> None:
    forward = similarity(ta, a, tb, b)
    assert 0.0 <= forward <= 1.0
    assert forward == pytest.approx(similarity(tb, b, ta, a), abs=1e-12)


@settings(max_examples=100)
@given(texts, texts)
def test_a_text_is_wholly_similar_to_itself(title: str, body: str) -> None:
    if normalize_text(title + " " + body):
        assert similarity(title, body, title, body, 0.9) == 1.0


@settings(max_examples=150)
@given(texts, texts, texts, st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_a_result_at_or_above_the_floor_is_exact(title: str, a: str, b: str, floor: float) -> None:
    """Same subject (one title): the floor only lets the measure stop early below it."""
    exact = similarity(title, a, title, b, 0.0)
    quick = similarity(title, a, title, b, floor)
    if quick >= floor:
        assert quick == pytest.approx(exact, abs=1e-12)


def test_a_reworded_title_over_the_same_long_text_is_the_same_knowledge() -> None:
    body = " ".join(f"step{i} runs vacuum on shard{i} before the nightly backup" for i in range(4))
    assert similarity("Nightly vacuum", body, "Vacuuming every night", body, 0.9) >= 0.9


def test_two_pages_from_one_template_about_different_people_are_not_duplicates() -> None:
    template = "Role: engineer\nTeam: storage\nLocation: Berlin\nStarted: 2021\n"
    rosa = "Rosa is our storage lead.\n" + template
    uma = "Uma is our storage lead.\n" + template
    assert similarity("Rosa Diaz", rosa, "Uma Patel", uma, 0.9) < 0.9
    # The same page filed twice under one name still is.
    assert similarity("Rosa Diaz", rosa, "Rosa Diaz", rosa + "\n", 0.9) == 1.0


def test_two_commands_documented_from_one_page_are_not_duplicates() -> None:
    """Dendron's docs page "Go Next Sibling" and "Go Previous Sibling" (0.91 alike, titles
    half alike) were proposed for a merge: a word swapped in a title names another subject,
    so the texts must be all but identical."""
    page = ("## Summary\n\nGo to the {0} sibling of the current note.\n\n## Keybindings\n- key: ctrl+shift+{1}\n\n"
            "## Details\n\nSiblings with numeric names will be sorted numerically, whereas siblings with"
            " alphabetical names are sorted alphabetically. The order wraps around at the end.\n")
    nxt, prev = page.format("next", "]"), page.format("previous", "[")
    assert similarity("Go Next Sibling", nxt, "Go Previous Sibling", prev, 0.9) < 0.9
    # A word added to a title, not swapped, still names the same subject.
    assert similarity("Go Next Sibling", nxt, "Go Next Sibling command", nxt.replace("Details", "More"), 0.9) >= 0.9


def test_boilerplate_lines_leave_the_comparison() -> None:
    shared_lines = "\n".join(f"Field {i}: to be filled in by the owner" for i in range(12))
    a = prepare(shared_lines + "\nWe chose Postgres for billing.\n")
    b = prepare(shared_lines + "\nWe chose Kafka for the event bus.\n")
    third = prepare(shared_lines + "\nSomething else entirely.\n")
    plain = similarity("Decision", a, "Decision", b, 0.0)
    common = boilerplate(a, [b, third])
    assert len(common) == 12
    without = similarity("Decision", a, "Decision", b, 0.0, common)
    assert plain > 0.9 > 0.7 > without  # a duplicate by its template alone; not by what differs


def test_a_line_is_boilerplate_only_when_enough_notes_hold_it() -> None:
    a, b, c = prepare("x line\nmine\n"), prepare("x line\nyours\n"), prepare("x line\nhis\n")
    assert BOILERPLATE_HOLDERS == 3
    assert boilerplate(a, [b]) == frozenset()  # two holders: the new note and one other
    assert boilerplate(a, [b, c]) == line_keys("x line")
    known = line_keys("mine")
    assert boilerplate(a, [], known) == known


def test_line_counts_find_a_batchs_own_template() -> None:
    counts = LineCounts(["Header\nrosa\n", "header!\numa\n", "HEADER\nlee\n", "other\n"])
    assert counts.common() == line_keys("header")
    assert counts.common(holders=1) >= line_keys("rosa\numa\nlee\nother")
    assert line_keys("a\n\n  \nA.\nb") == line_keys("a\nb")  # blank lines and formatting ignored


# ---------------------------------------------------------------------- candidate query


@pytest.fixture
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
    rows = ["alpha beta", "alpha gamma", "beta gamma", "alpha", "delta epsilon", 'say "quoted" words']
    conn.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", list(enumerate(rows, start=1)))
    return conn


def test_the_candidate_query_asks_for_any_two_of_the_rarest_words(fts: sqlite3.Connection) -> None:
    df = {"alpha": 3, "beta": 2, "gamma": 2, "delta": 1, "zeta": 0}
    match = candidate_match(["alpha", "beta", "gamma", "zeta"], df, rarest=3)
    assert match is not None
    found = {r for (r,) in fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))}
    assert found == {1, 2, 3}  # each holds two of alpha/beta/gamma; row 4 only one
    assert "zeta" not in match  # a word no item holds finds nothing


def test_common_words_are_left_out_and_too_few_words_mean_no_query() -> None:
    df = {"alpha": 500, "beta": 2, "gamma": 3}
    match = candidate_match(["alpha", "beta", "gamma"], df, max_postings=256)
    assert match == '("beta" AND "gamma")'
    assert candidate_match(["alpha", "beta"], df, max_postings=256) is None
    assert candidate_match([], {}) is None


@settings(max_examples=100)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=6, unique=True))
def test_any_words_make_a_valid_fts5_query(words: list[str]) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    conn.execute("INSERT INTO t(body) VALUES ('x')")
    cleaned = [w.replace("\x00", "") for w in words]
    cleaned = [w for w in dict.fromkeys(cleaned) if w]
    match = candidate_match(cleaned, dict.fromkeys(cleaned, 1))
    if match is not None:
        try:
            conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()
        except sqlite3.OperationalError as exc:  # pragma: no cover - the failure this guards
            pytest.fail(f"candidate query {match!r} is not valid FTS5: {exc}")


def test_same_subject_is_the_title_test_similarity_applies() -> None:
    assert same_subject("ALB idle timeout is 60 s", "ALB idle timeout is 120 s")
    assert same_subject("Connection pool size", "connection pool size!")  # case, punctuation
    assert not same_subject("Boundary layer over a flat plate in presence of shear flow",
                            "Investigation of the stability of the laminar boundary layer in a compressible fluid")
    assert not same_subject("Release checklist", "Websocket notes")
    assert 0 < SAME_SUBJECT < 1


@given(st.text(max_size=60), st.text(max_size=60))
def test_same_subject_is_symmetric_and_reflexive(a: str, b: str) -> None:
    assert same_subject(a, b) == same_subject(b, a)
    if normalize_text(a):
        assert same_subject(a, a)
