"""What a title says a note is about, and when two titles name two subjects.

A title names its note's subject, and often a value too: "Design review is on Thursdays
at 14:00", "Gym membership renews on 14 March", "Use Sentry". Two notes about one
subject with another value contradict each other; two notes about two subjects never do,
however alike their bodies ("Smoke detector batteries — hallway" / "— kitchen", "Redis
cache TTL for carts" / "for tax tables", "Monstera watering" / "Monstera watering in
winter", "Kubernetes version (prod cluster)" / "(staging cluster)").

:func:`subject` splits a title's content words in three: the **subject**; the
**qualifiers**, in a phrase opened by a word that narrows it ("in winter", "for tax
tables", a parenthesis); and the **value**, everything after a word that introduces one
(a copula, a verb that takes one value — signals' EXCLUSIVE —, "now", "due", or "on",
"at", "by", "to", "every", "since" before a number or a date). :func:`apart` says two
titles name two subjects when each subject holds a word the other lacks (a word
swapped, not one added: "Parental leave" / "Parental leave policy" is one subject) or
one has a qualifier the other title does not say at all ("Banana bread (Grandma's)" and
"Grandma's banana bread" are one subject). Values never count: they are what may change.

Used by :func:`engram.lifecycle.classify.compare` when both lessons have titles: then a
conflict between two subjects is no contradiction and no warning — unless the two texts
hold each other's words and neither names its own title's words ("Jury duty leave" and
"Jury service — pay" over one text are one piece of knowledge; "HEK293" and "HeLa" over
one template are not). Pure and offline.
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.lifecycle.signals import EXCLUSIVE, analyse, is_content
from engram.store.units import MONTHS

_COPULAS = frozenset({"is", "are", "was", "were", "be", "been", "am"})
#: Words after which the rest of a title is a value.
_VALUE = _COPULAS | EXCLUSIVE | {"now", "due", "=", ":="}
#: Words that open a value only before a number or a date ("on 14 March", "at 9:30",
#: "every 6 months"; not "every dependency").
_VALUE_BEFORE_NUMBER = frozenset({"on", "at", "by", "to", "until", "till", "from", "every", "since"})
#: Words that open a phrase narrowing the subject.
_QUALIFY = frozenset({"in", "for", "during", "per", "with", "without", "inside", "outside", "("})
_WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})


@dataclass(frozen=True, slots=True)
class Subject:
    """A title's content stems: what it is about, what narrows it, what it asserts."""

    words: frozenset[str]
    qualifiers: frozenset[str]
    values: frozenset[str]


def _number_like(word: str) -> bool:
    """A number, a date (one token after spelling's rewrite), a month or a weekday."""
    return any(ch.isdigit() for ch in word) or word in MONTHS or word.rstrip("s") in _WEEKDAYS


def subject(title: str) -> Subject:
    """The parts of ``title`` (see the module docstring)."""
    tokens = analyse(title).tokens
    parts: dict[str, set[str]] = {"words": set(), "qualifiers": set(), "values": set()}
    part = "words"
    for i, tok in enumerate(tokens):
        following = tokens[i + 1].word if i + 1 < len(tokens) else ""
        if part != "values":
            if tok.word in _VALUE or (tok.word in _VALUE_BEFORE_NUMBER and _number_like(following)):
                part = "values"
                continue
            if tok.word in _QUALIFY:
                part = "qualifiers"
                continue
            if tok.word == ")":
                part = "words"
                continue
        if is_content(tok.word):
            parts[part].add(tok.stem)
    return Subject(frozenset(parts["words"]), frozenset(parts["qualifiers"]), frozenset(parts["values"]))


def own_words(title: str, other: str) -> frozenset[str]:
    """The subject and qualifier stems of ``title`` that ``other`` does not say at all."""
    a, b = subject(title), subject(other)
    return (a.words | a.qualifiers) - (b.words | b.qualifiers | b.values)


def apart(title: str, other: str) -> bool:
    """Whether two titles name two subjects (see the module docstring); False when
    either is empty."""
    if not title.strip() or not other.strip():
        return False
    a, b = subject(title), subject(other)
    all_a, all_b = a.words | a.qualifiers | a.values, b.words | b.qualifiers | b.values
    # A qualifier counts where the other title lacks the word altogether: "Banana bread
    # (Grandma's)" and "Grandma's banana bread" are one subject.
    return bool(a.words - all_b and b.words - all_a) or bool(a.qualifiers - all_b or b.qualifiers - all_a)
