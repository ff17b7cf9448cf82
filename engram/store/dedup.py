"""Deciding whether new knowledge is new: fingerprints and near-duplicate similarity.

``create`` classifies an incoming item against what the vault holds:

- ``DUPLICATE`` — the same title and content once case, punctuation and whitespace are
  ignored (equal :func:`fingerprint`). The original is reinforced; nothing new is written.
- ``UPDATE`` — a candidate whose text is at least ``nearThreshold`` similar (see
  :func:`similarity`). Nothing is written here; the vault's ``create``
  (:func:`engram.lifecycle.learning.create`) turns it into a learn decision, so a near
  match never steers a caller into overwriting it.
- ``NEW`` — otherwise.

Similarity is a blend of word-shingle overlap (robust to reordering) and word and
character sequence similarity (robust to small edits), of title and content together or
of the contents alone when both are substantial. It is computed only on a handful of
candidates: items with the same title, and items holding two of the new item's rarest
words (:func:`candidate_match`) — short posting lists, so the cost does not grow with the
vault.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class DedupSettings:
    """``dedup`` section of ``engram.yaml``."""

    enabled: bool = True
    near_threshold: float = 0.9
    candidates: int = 8


def candidate_match(words: list[str], df: dict[str, int], rarest: int = 4) -> str | None:
    """An FTS5 query for items that may duplicate one with these ``words``.

    A near-duplicate shares almost every word, so it contains the new item's rarest
    words; asking for any two of the ``rarest`` words the vault already holds finds it
    even when one of them was edited, and touches only short posting lists — the cost
    no longer grows with the vault. Words no item holds cannot match and are skipped.
    Returns None when fewer than two words are known (then only the title is checked).
    """
    known = sorted((w for w in words if df.get(w, 0) > 0), key=lambda w: (df[w], w))[:rarest]
    if len(known) < 2:
        return None
    quoted = ['"' + w.replace('"', '""') + '"' for w in known]
    return " OR ".join(
        f"({a} AND {b})" for i, a in enumerate(quoted) for b in quoted[i + 1 :]
    )


def normalize_text(text: str) -> str:
    """Case-folded words joined by single spaces (punctuation and layout ignored)."""
    if not text.isascii():  # NFKC changes nothing in ASCII; skip its cost
        text = unicodedata.normalize("NFKC", text)
    return " ".join(_WORD.findall(text.casefold()))


def fingerprint(title: str, content: str) -> str:
    """Identity of an item's knowledge, independent of formatting."""
    basis = normalize_text(title) + "\n" + normalize_text(content)
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


def _shingles(words: list[str], size: int = 3) -> set[tuple[str, ...]]:
    if len(words) < size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


#: Contents at least this long are compared on their own too: the same text under a
#: reworded title is still the same knowledge.
CONTENT_ALONE_WORDS = 20


def similarity(title_a: str, content_a: str, title_b: str, content_b: str, floor: float = 0.0) -> float:
    """0..1 similarity of two items: of title and content together, or of the contents
    alone when both are substantial (a reworded title does not make new knowledge).

    Exact when the result is at least ``floor``; below it, any value under ``floor``
    may be returned (the caller only needs to know it is too low). An upper bound from
    the words both texts share decides most pairs; only pairs that could still reach
    ``floor`` pay for shingles and sequence matching.
    """
    whole = _similarity(normalize_text(title_a + " " + content_a), normalize_text(title_b + " " + content_b), floor)
    body_a, body_b = normalize_text(content_a), normalize_text(content_b)
    if min(body_a.count(" "), body_b.count(" ")) + 1 < CONTENT_ALONE_WORDS:
        return whole
    return max(whole, _similarity(body_a, body_b, max(floor, whole)))


def _similarity(a: str, b: str, floor: float) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    words_a, words_b = a.split(), b.split()
    shared = sum((Counter(words_a) & Counter(words_b)).values())
    bound = 2 * shared / (len(words_a) + len(words_b))  # ≥ the word-level ratio and Jaccard
    if bound < floor:
        return bound
    sa, sb = _shingles(words_a), _shingles(words_b)
    jaccard = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
    by_words = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio()
    best = max(jaccard, by_words)
    if best < max(floor, 0.7) - 0.2:
        return best
    chars = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if chars.real_quick_ratio() <= best or chars.quick_ratio() <= best:
        return best
    return max(best, chars.ratio())
