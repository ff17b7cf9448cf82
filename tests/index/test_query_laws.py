"""User text → terms → FTS5: the parser's promises beyond "never raises".

:mod:`engram.index.query` promises that a quoted term is only ever tokenized (so the
user's own words, quoted, find the text they came from), that terms are lower-cased,
distinct and bounded, that the parse says when it cut the query, and that each kind of
token takes its documented path (word, identifier phrase, substring).
"""

from __future__ import annotations

import sqlite3
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.index.query import MAX_CHARS, MAX_TERMS, STOPWORDS, Term, clean, parse, quote

WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"


@pytest.fixture(scope="module")
def conn() -> sqlite3.Connection:
    c = sqlite3.connect(":memory:")
    c.execute(f"CREATE VIRTUAL TABLE w USING fts5(t, tokenize='{WORD_TOKENIZER}')")
    c.execute("CREATE VIRTUAL TABLE g USING fts5(t, tokenize='trigram')")
    return c


def finds(conn: sqlite3.Connection, table: str, document: str, match: str) -> bool:
    conn.execute(f"DELETE FROM {table}")
    conn.execute(f"INSERT INTO {table}(rowid, t) VALUES (1, ?)", (document,))
    return bool(conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (match,)).fetchall())


def has_token(conn: sqlite3.Connection, text: str) -> bool:
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.probe USING fts5(t)")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.probe_v USING fts5vocab(temp, probe, instance)")
    conn.execute("DELETE FROM temp.probe")
    conn.execute("INSERT INTO temp.probe(t) VALUES (?)", (text,))
    return bool(conn.execute("SELECT 1 FROM temp.probe_v LIMIT 1").fetchall())


@settings(max_examples=200)
@given(st.text(max_size=80))
def test_a_quoted_text_finds_the_text_it_came_from(conn: sqlite3.Connection, text: str) -> None:
    document = clean(text)
    if has_token(conn, document):
        assert finds(conn, "w", document, quote(text)), (text, quote(text))
    if len(document) >= 3:
        assert finds(conn, "g", document, quote(text)), (text, quote(text))


@settings(max_examples=200)
@given(st.text(max_size=3000))
def test_terms_are_lowercase_distinct_bounded_and_cut_only_when_said(text: str) -> None:
    parsed = parse(text)
    assert len(parsed.terms) <= MAX_TERMS
    assert len(set(parsed.terms)) == len(parsed.terms)
    assert all(t.text and t.text == t.text.lower() for t in parsed.terms)
    assert all(unicodedata.is_normalized("NFC", t.text) for t in parsed.terms)
    assert parsed.text == text
    if len(clean(text)) > MAX_CHARS:
        assert parsed.truncated
    if not parsed.truncated:
        assert parse(clean(text)).terms == parsed.terms  # cleaning is idempotent for the parse


def test_a_query_with_too_many_terms_keeps_the_first_and_says_so() -> None:
    parsed = parse(" ".join(f"w{i}x" for i in range(MAX_TERMS + 5)))
    assert parsed.truncated and [t.text for t in parsed.terms] == [f"w{i}x" for i in range(MAX_TERMS)]
    exact = parse(" ".join(f"w{i}x" for i in range(MAX_TERMS)))
    assert not exact.truncated and len(exact.terms) == MAX_TERMS


def test_stopwords_are_dropped_unless_nothing_else_is_left() -> None:
    parsed = parse("How do I vacuum the table?")
    assert [t.text for t in parsed.terms] == ["vacuum", "table"]
    assert set(parsed.stopwords) == {"how", "do", "i", "the"}
    only = parse("to be or not to be")
    assert [t.text for t in only.terms] == ["to", "be", "or", "not"] and only.stopwords == ()
    assert all(w == w.lower() for w in STOPWORDS)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("db_url_v2", [("db_url_v2", "phrase"), ("db", "word"), ("url", "word"), ("v2", "word")]),
        ("X-Batch", [("x-batch", "phrase"), ("x", "word"), ("batch", "word")]),
        ("getUser", [("getuser", "phrase")]),
        ("two-dimensional", [("two", "word"), ("dimensional", "word")]),
        ("re-entry", [("entry", "word")]),  # "re" is a stopword
        ("->>", [("->>", "substring")]),
        ("(`->>`),", [("->>", "substring")]),
        ("数据库连接池", [("数据库连接池", "substring")]),
        ("连接池sizing", [("连接池", "substring"), ("sizing", "word")]),
        ("::=", [("::=", "substring")]),
        ("->", []),
        ("🎉", [("🎉", "substring")]),
        ('"Vacuum"', [("vacuum", "word")]),
        ("(pool*)", [("pool", "word")]),
        ("café CAFÉ cafe\u0301", [("café", "word")]),
        ("x\x00y", [("x", "word"), ("y", "word")]),
        ("(((", []),
        ("...", []),
    ],
)
def test_each_token_takes_its_documented_path(text: str, terms: list[tuple[str, str]]) -> None:
    assert [(t.text, t.kind) for t in parse(text).terms] == terms


def test_the_match_strings_route_terms_to_the_right_index() -> None:
    parsed = parse("url_v 连接 ab 数据库 vacuum")
    assert parsed.word_match() == '"url_v" OR "url" OR "v" OR "ab" OR "vacuum"'
    assert parsed.trigram_match() == '"url_v" OR "数据库"'
    assert parsed.trigram_match(lambda t: t.text == "url_v") == '"数据库"'
    assert [t.text for t in parsed.short_fragments()] == ["连接"]
    assert parse("").word_match() is None and parse("").trigram_match() is None
    assert Term('say "hi"', "phrase").fts == '"say ""hi"""'


def test_clean_drops_what_sqlite_cannot_take_and_composes_accents() -> None:
    assert clean("a\x00b\x07c\u200bd") == "a b c d"
    assert clean("\ud800x") == "x"
    assert clean("cafe\u0301") == "café"
    assert clean("tab\tand\nnewline") == "tab\tand\nnewline"
