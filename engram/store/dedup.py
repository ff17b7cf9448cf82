"""Deciding whether new knowledge is new: fingerprints, boilerplate, near-duplicate similarity.

``create`` classifies an incoming item against what the vault holds:

- ``DUPLICATE`` — the same title and content once case, punctuation and whitespace are
  ignored (equal :func:`fingerprint`).
- ``UPDATE`` — a candidate at least ``nearThreshold`` similar (see :func:`similarity`).
  Nothing is written here; the vault's ``create`` (:func:`engram.lifecycle.creating.create`)
  turns it into a learn decision, so a near match never steers a caller into overwriting
  it. Imports leave it unwritten and report it.
- ``NEW`` — otherwise.

Two things keep this right and cheap at any vault size:

**Boilerplate does not count.** Notes filled in from one template (fifty person pages, a
meeting note a day) share most of their lines; what tells them apart is the part that
was filled in. A line held by at least :data:`BOILERPLATE_HOLDERS` notes — the new one
and two others, seen among its candidates or in the batch being imported — is
boilerplate (:func:`boilerplate`), and similarity is measured on the remaining lines
(:class:`Text`). Two copies of one note share lines with each other only, so they
still match; two template pages with different fills do not.

**A bounded number of bounded lookups.** Candidates are the items with the same title
and those holding two of the new item's rarest words (:func:`candidate_match`), using
only words held by at most ``maxPostings`` items, so every posting list read is short
whatever the vault's size: a check costs about the same at 100k items as at 1k. A near
duplicate contains nearly every word of the new item, its rare ones included, so it is
found through them; a word most of the vault holds says nothing about which item.
Similarity itself is computed only on those few candidates, with an upper bound from the
shared words deciding most pairs before any sequence matching.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass

_WORD = re.compile(r"\w+", re.UNICODE)
# ASCII text takes a C-level path: every ASCII character \w does not match becomes a
# space, then split and join. Same words as ``_WORD`` finds, 2-3x faster (a cold index
# fingerprints every item).
_ASCII_NON_WORD = bytes(c for c in range(128) if not _WORD.match(chr(c)))
_ASCII_SPACES = bytes.maketrans(_ASCII_NON_WORD, b" " * len(_ASCII_NON_WORD))

#: A line held by this many notes (the new one included) is boilerplate.
BOILERPLATE_HOLDERS = 3
#: Word sequences longer than this are compared by shingles only (sequence matching is
#: quadratic in the worst case; a long text with one edit keeps nearly all its shingles).
SEQUENCE_WORDS = 600
#: Texts up to this many characters are also compared character by character (a unit
#: spelled out, a typo fixed: small edits that change whole words of a short text).
SEQUENCE_CHARS = 600


@dataclass(frozen=True, slots=True)
class DedupSettings:
    """``dedup`` section of ``engram.yaml``."""

    enabled: bool = True
    near_threshold: float = 0.9
    candidates: int = 8
    max_postings: int = 256


def candidate_match(
    words: list[str], df: dict[str, int], rarest: int = 4, max_postings: int | None = None
) -> str | None:
    """An FTS5 query for items that may duplicate one with these ``words``.

    Asks for any two of the ``rarest`` words the vault holds (a near duplicate holds
    them too, even when one of them was edited), skipping words held by more than
    ``max_postings`` items, so the lists read stay short. Returns None when fewer than
    two words qualify (then only the title is checked).
    """
    cap = max_postings if max_postings is not None else float("inf")
    known = sorted((w for w in words if 0 < df.get(w, 0) <= cap), key=lambda w: (df[w], w))[:rarest]
    if len(known) < 2:
        return None
    quoted = ['"' + w.replace('"', '""') + '"' for w in known]
    return " OR ".join(f"({a} AND {b})" for i, a in enumerate(quoted) for b in quoted[i + 1 :])


def normalize_text(text: str) -> str:
    """Case-folded words joined by single spaces (punctuation and layout ignored)."""
    if text.isascii():  # NFKC changes nothing in ASCII, and casefold is lower
        return b" ".join(text.encode().lower().translate(_ASCII_SPACES).split()).decode()
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


@functools.lru_cache(maxsize=64)
def fingerprint(title: str, content: str) -> str:
    """Identity of an item's knowledge, independent of formatting (cached: a create
    computes it for the duplicate check and again for the index row)."""
    basis = normalize_text(title) + "\n" + normalize_text(content)
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


# ---------------------------------------------------------------------- boilerplate


@dataclass(frozen=True, slots=True)
class Text:
    """A content split into normalised lines once, for the checks below."""

    lines: tuple[tuple[int, str], ...]  # (line key, normalised line), non-empty lines in order

    @property
    def keys(self) -> frozenset[int]:
        return frozenset(k for k, _ in self.lines)

    def without(self, keys: Collection[int]) -> str:
        """The normalised text of the lines whose keys are not in ``keys``."""
        return " ".join(norm for k, norm in self.lines if k not in keys)


#: Contents up to this many characters are cached by :func:`prepare` (at most
#: :data:`_PREPARED` of them, so the cache stays a few tens of megabytes at worst).
_CACHED_CHARS = 16_384
_PREPARED = 1024


def prepare(content: str) -> Text:
    """``content`` split into normalised lines. A pure function of the text and a
    :class:`Text` is immutable, so it is cached: the same candidates come back to one
    write after another (three in four calls of 1,000 Cranfield creates)."""
    return _prepare_cached(content) if len(content) <= _CACHED_CHARS else _prepare(content)


@functools.lru_cache(maxsize=_PREPARED)
def _prepare_cached(content: str) -> Text:
    return _prepare(content)


def _prepare(content: str) -> Text:
    lines = []
    for line in content.splitlines():
        norm = normalize_text(line)
        if norm:
            lines.append((_key(norm), norm))
    return Text(tuple(lines))


def line_keys(content: str) -> frozenset[int]:
    """Keys of the distinct non-empty lines of ``content``, formatting ignored."""
    return prepare(content).keys


def _key(norm: str) -> int:
    return int.from_bytes(hashlib.blake2b(norm.encode("utf-8"), digest_size=8).digest(), "big")


def boilerplate(text: Text, others: Iterable[Text], known: Collection[int] = ()) -> frozenset[int]:
    """The lines of ``text`` that are boilerplate: in ``known`` (lines many records of an
    import share), or held by at least two of ``others`` (its candidates)."""
    mine = text.keys
    held: Counter[int] = Counter()
    for other in others:
        held.update(mine & other.keys)
    return frozenset(k for k in mine if k in known or held[k] >= BOILERPLATE_HOLDERS - 1)


class LineCounts:
    """How many records of a batch hold each line: a batch's own boilerplate is known
    before its first record is written, so the first template pages are not compared
    with their template alone."""

    def __init__(self, contents: Iterable[str] = ()) -> None:
        self.counts: Counter[int] = Counter()
        for content in contents:
            self.counts.update(line_keys(content))

    def common(self, holders: int = BOILERPLATE_HOLDERS) -> frozenset[int]:
        return frozenset(k for k, n in self.counts.items() if n >= holders)


# ---------------------------------------------------------------------- similarity


def _shingles(words: list[str], size: int = 3) -> set[tuple[str, ...]]:
    if len(words) < size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


#: Titles less alike than this name different subjects (so do two that each hold a word
#: the other lacks); then the text must clear
#: ``floor + (1 - floor) * DIFFERENT_SUBJECT_MARGIN`` (0.96 at the default 0.9): the
#: second page ever filled from a template has no third to show what is boilerplate.
SAME_SUBJECT = 0.5
DIFFERENT_SUBJECT_MARGIN = 0.6

#: Contents at least this long are compared on their own too: the same text under a
#: reworded title is still the same knowledge.
CONTENT_ALONE_WORDS = 20


def similarity(
    title_a: str,
    content_a: str | Text,
    title_b: str,
    content_b: str | Text,
    floor: float = 0.0,
    boilerplate: Collection[int] = (),
) -> float:
    """0..1 similarity of two items: of title and content together, or of the contents
    alone when both are substantial (a reworded title does not make new knowledge).
    Lines in ``boilerplate`` (see :func:`boilerplate`) are left out of both contents;
    contents may be :func:`prepare`-d already.

    Exact when the result is at least ``floor``; below it, any value under ``floor``
    may be returned (the caller only needs to know it is too low).
    """
    text_a = content_a if isinstance(content_a, Text) else prepare(content_a)
    text_b = content_b if isinstance(content_b, Text) else prepare(content_b)
    body_a, body_b = text_a.without(boilerplate), text_b.without(boilerplate)
    whole = _similarity(
        _join(normalize_text(title_a), body_a), _join(normalize_text(title_b), body_b), floor
    )
    score = whole
    if min(body_a.count(" "), body_b.count(" ")) + 1 >= CONTENT_ALONE_WORDS:
        score = max(whole, _similarity(body_a, body_b, max(floor, whole)))
    names_a, names_b = normalize_text(title_a), normalize_text(title_b)
    if score >= floor and (_similarity(names_a, names_b, 0.0) < SAME_SUBJECT or _each_own(names_a, names_b)):
        # Different subjects (two people's pages from one template, a little filled in;
        # "Go Next Sibling" / "Go Previous Sibling", two commands documented from one
        # page) are one piece of knowledge only when the text is all but identical, and
        # not when each text names its own subject ("Rosa is …" / "Uma is …").
        bar = floor + (1.0 - floor) * DIFFERENT_SUBJECT_MARGIN
        if score < bar or _names_own_subject(names_a, body_a, names_b, body_b):
            return min(score, bar) / bar * floor * 0.99  # under floor, as promised
    return score


def same_subject(title_a: str, title_b: str) -> bool:
    """Whether two titles name one subject (at least :data:`SAME_SUBJECT` alike): the
    first test :func:`similarity` applies before it lets two texts be one piece of
    knowledge (the second: neither title holds a word the other lacks)."""
    return _similarity(normalize_text(title_a), normalize_text(title_b), SAME_SUBJECT) >= SAME_SUBJECT


def _each_own(title_a: str, title_b: str) -> bool:
    """Whether each title holds a word the other lacks: a word swapped, not one added."""
    words_a, words_b = set(title_a.split()), set(title_b.split())
    return bool(words_a - words_b) and bool(words_b - words_a)


def _names_own_subject(title_a: str, body_a: str, title_b: str, body_b: str) -> bool:
    words_a, words_b = set(body_a.split()), set(body_b.split())
    own_a = set(title_a.split()) - set(title_b.split())
    own_b = set(title_b.split()) - set(title_a.split())
    return any(w in words_a and w not in words_b for w in own_a) or any(
        w in words_b and w not in words_a for w in own_b
    )


def _join(title: str, body: str) -> str:
    return f"{title} {body}" if title and body else title or body


def _similarity(a: str, b: str, floor: float) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    if a > b:  # one order for both directions: difflib's ratios are not symmetric
        a, b = b, a
    words_a, words_b = a.split(), b.split()
    count_a, count_b = Counter(words_a), Counter(words_b)
    if len(count_a) > len(count_b):
        count_a, count_b = count_b, count_a
    # The size of the multiset intersection (Counter's & builds it in Python; only its
    # size is needed).
    shared = sum(min(n, count_b[w]) for w, n in count_a.items() if w in count_b)
    bound = 2 * shared / (len(words_a) + len(words_b))  # ≥ the word-level ratio and Jaccard
    if bound < floor:
        return bound
    sa, sb = _shingles(words_a), _shingles(words_b)
    best = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
    if max(len(words_a), len(words_b)) <= SEQUENCE_WORDS:
        best = max(best, difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio())
    if best < max(floor, 0.7) - 0.2 or max(len(a), len(b)) > SEQUENCE_CHARS:
        return best
    chars = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if chars.real_quick_ratio() <= best or chars.quick_ratio() <= best:
        return best
    return max(best, chars.ratio())
