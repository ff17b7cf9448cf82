"""Turning what a person or an agent typed into safe index queries.

User text is never FTS5 syntax. :func:`parse` splits it into :class:`Term` values and
:func:`quote` wraps each in double quotes (inner quotes doubled), so ``"``, ``*``,
``NEAR(``, ``AND OR``, column filters, 5,000 characters of anything or an emoji can never
raise a syntax error: inside quotes FTS5 only tokenizes. (``raw=True`` in
:func:`engram.recall.search` is the explicit escape hatch for FTS5 syntax.)

Terms come in three kinds, each with its own path through the index:

- ``word`` — a run of letters and digits (``vacuum``, ``k8s``): the Porter-stemmed word
  index, ranked by BM25.
- ``phrase`` — an identifier with inner punctuation or mixed case (``db_url_v2``,
  ``X-Batch``, ``getUser``): the word index as an exact phrase of its parts
  (``db url v2``), and each part as a word too; the trigram index as a substring when
  the word index holds no such phrase (``url_v``). A lower-case hyphenated compound
  (``two-dimensional``, ``re-entry``) is English, not an identifier: its words.
- ``substring`` — a run of CJK (or other unspaced) script, or a punctuation fragment: the
  trigram index when it has at least three characters, else a bounded scan.

English stopwords are dropped unless the query has nothing else (``"to be or not to
be"`` still searches), because they add cost and no ranking signal. A query is cut to
its first :data:`MAX_CHARS` characters and :data:`MAX_TERMS` distinct terms; the parsed
query says when it was cut.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MAX_CHARS = 2_000
MAX_TERMS = 32

TermKind = Literal["word", "phrase", "substring"]

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves s t d ll m re ve also just did does get got
    """.split()  # noqa: SIM905 - a word list reads better as text
)

# Scripts written without spaces between words: searched as substrings.
_UNSPACED = (
    "\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\u0e00-\u0e7f"
)
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")
_WORD = re.compile(rf"[^\W_{_UNSPACED}]+")
_IDENTIFIER = re.compile(r"^[^\W_]+(?:[_\-./:#@+]+[^\W_]+)+$|^[a-z]+[A-Z]\w*$|^[A-Z]+[a-z]+[A-Z]\w*$")
# A hyphenated English compound ("two-dimensional", "re-entry"): its words, not an identifier.
_COMPOUND = re.compile(r"^[a-z]+(?:-[a-z]+)+$")
_EDGE_PUNCT = "\"'`([{<>}])!?,;:.*^~"
_WRAPPERS = "\"'`()[]{},;"


@dataclass(frozen=True, slots=True)
class Term:
    """One searchable unit of a query; ``text`` is lower-cased (as the indexes fold)."""

    text: str
    kind: TermKind

    @property
    def fts(self) -> str:
        """The term as a quoted FTS5 string (safe for any text)."""
        return quote(self.text)


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    terms: tuple[Term, ...]
    stopwords: tuple[str, ...] = ()
    truncated: bool = False

    @property
    def words(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.kind == "word")

    def word_match(self) -> str | None:
        """OR of every word and phrase term, for the word index; None if there are none."""
        parts = [t.fts for t in self.terms if t.kind in ("word", "phrase")]
        return " OR ".join(parts) if parts else None

    def trigram_match(self, found: Callable[[Term], bool] = lambda t: False) -> str | None:
        """OR of the substring terms, and of the phrase terms the word index did not
        ``found``, of three or more characters (an identifier the word index holds is
        ranked there; trigrams are for what it cannot match: ``url_v``, CJK)."""
        parts = [
            t.fts for t in self.terms
            if len(t.text) >= 3 and (t.kind == "substring" or (t.kind == "phrase" and not found(t)))
        ]
        return " OR ".join(parts) if parts else None

    def short_fragments(self) -> tuple[Term, ...]:
        """Non-word terms too short for trigrams (a two-character CJK word, say)."""
        return tuple(t for t in self.terms if t.kind != "word" and len(t.text) < 3)


def quote(text: str) -> str:
    """``text`` as one FTS5 string literal: never syntax, whatever it contains."""
    return '"' + clean(text).replace('"', '""') + '"'


def clean(text: str) -> str:
    """Drop what SQLite or the tokenizers cannot take: NULs and other control characters,
    lone surrogates; normalise to NFC so composed and decomposed accents match."""
    text = text.encode("utf-8", "ignore").decode("utf-8")
    text = "".join(ch if ch.isprintable() or ch in " \t\n" else " " for ch in text)
    return unicodedata.normalize("NFC", text)


def parse(text: str) -> ParsedQuery:
    """Split a query into terms (see the module docstring). Never raises."""
    original = text
    text = clean(text)
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    terms: list[Term] = []
    stop: list[str] = []
    for raw in text.split():
        chunk = raw.strip(_EDGE_PUNCT)
        if not chunk:
            continue
        if _IDENTIFIER.match(chunk) and not _UNSPACED_RUN.search(chunk) and not _COMPOUND.match(chunk):
            terms.append(Term(chunk.lower(), "phrase"))
            # Its parts are words of their own ("two-dimensional" is about "dimensional"
            # too): an item that writes them apart still matches, the exact phrase more.
            parts = [w.lower() for w in _WORD.findall(chunk)]
            if len(parts) > 1:
                terms += [Term(w, "word") for w in parts if w not in STOPWORDS]
            continue
        for run in _UNSPACED_RUN.findall(chunk):
            terms.append(Term(run, "substring"))
        words = _WORD.findall(_UNSPACED_RUN.sub(" ", chunk))
        for word in words:
            lowered = word.lower()
            if lowered in STOPWORDS:
                stop.append(lowered)
            else:
                terms.append(Term(lowered, "word"))
        if not words and not _UNSPACED_RUN.search(chunk):
            # An operator is searched whole ("->>" and "::=" are not "->" and "="): only
            # the quotes, brackets and commas around it are not part of it.
            fragment = raw.strip(_WRAPPERS) if chunk.isascii() else chunk
            if len(fragment) >= 3 or not fragment.isascii():
                terms.append(Term(fragment.lower(), "substring"))  # "::=", "->>", an emoji
    if not terms and stop:
        terms = [Term(w, "word") for w in stop]
        stop = []
    unique = list(dict.fromkeys(terms))
    if len(unique) > MAX_TERMS:
        unique, truncated = unique[:MAX_TERMS], True
    return ParsedQuery(original, tuple(unique), tuple(dict.fromkeys(stop)), truncated)
