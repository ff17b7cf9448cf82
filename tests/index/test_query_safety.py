"""User query text is never FTS5 syntax: nothing a person types can raise a traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.index.query import MAX_TERMS, parse, quote
from engram.vault import Vault

NASTY = ['"', "*", "NEAR(", "AND OR", "x" * 5000, "🎉", "🔥 deploy", '"unbalanced', "a:b", "title:pool",
         "(((", "-pool", "^start", "pool*", "NOT", "{title}: x", "''", "\x00", "\ud800", "a\u0301", "-->",
         "連接", "ß", " ", "\t\n", "NEAR(a b, 3)", '" OR "', "col:", "+", "a" * 3 + "-" * 3]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    v = Vault.init(tmp_path_factory.mktemp("q") / "vault")
    v.create("Connection pool sizing", "Size pools from the p99; see db_url_v2 and X-Batch.", domain=["eng"])
    v.create("数据库连接池", "连接池的大小。🎉", domain=["zh"])
    yield v
    v.close()


@pytest.mark.parametrize("text", NASTY)
def test_nasty_queries_answer_normally_or_say_clearly_why_not(shared: Vault, text: str) -> None:
    try:
        result = shared.search(text, record=False)
    except InvalidInput as exc:
        assert "no words" in str(exc) and exc.hint
    else:
        assert result.status in ("ok", "no_confident_match")


def test_a_very_long_query_is_cut_and_says_so(shared: Vault) -> None:
    result = shared.search(" ".join(f"word{i}" for i in range(500)) + " pool", record=False)
    assert result.truncated and len(result.terms) == MAX_TERMS


def test_an_emoji_is_searchable_as_a_substring(shared: Vault) -> None:
    assert [h.title for h in shared.search("🎉", record=False).hits] == ["数据库连接池"]


@settings(max_examples=150)
@given(st.text(max_size=300))
def test_any_text_parses_and_quotes_into_valid_fts(text: str) -> None:
    parsed = parse(text)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE w USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE g USING fts5(t, tokenize='trigram')")
    conn.execute("INSERT INTO w(t) VALUES ('pool')")
    for match, table in ((parsed.word_match(), "w"), (parsed.trigram_match(), "g"), (quote(text), "w"),
                         (quote(text), "g")):
        if match:
            conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (match,)).fetchall()


@settings(max_examples=60)
@given(st.text(max_size=120))
def test_any_text_through_search_never_raises_anything_but_invalid_input(shared: Vault, text: str) -> None:
    try:
        result = shared.search(text, record=False)
    except InvalidInput as exc:
        assert exc.hint
    else:
        assert result.status in ("ok", "no_confident_match")
