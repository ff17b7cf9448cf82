"""Titles that name two notes of one series: "Sprint 12 retro" and "Sprint 13 retro".

People keep series of notes written from one template: a daily note or a stand-up a
day, a retro a sprint, a report a week, a postmortem an incident, a checklist a
release. Their bodies share most of their words and differ in a number or a date, which
is what a near duplicate looks like to :mod:`engram.store.dedup` and a changed value to
the lifecycle's rules — so without this, the next retro of a re-run import was left
unwritten as a near duplicate of the last, and a new note superseded the one before it.

What tells the two apart is the title. A number that *names* a note stands in the title
as a name does: after a noun ("Sprint 12", "Room 101", "iOS 17 support", "Cohort A"),
first ("2026-12-01", "Q3 OKRs"), as an identifier ("INC-4411"), or as a date in any
spelling ("Nov 2026", "30 November 2026"). A number the title *asserts* is a value: it carries a
unit ("Retention: 30 days", "timeout 60s") or follows a word that introduces one ("Pool
size is 20", "Deadline moved to 2026-03-01", "VAT return due 2027-01-31", "max: 100").
:func:`series` says two titles name two members of a series when they are the same
words except for naming numbers, one or more, that differ.

Safety decides the doubtful cases: a bare number after a noun ("Rate limit 100") reads
as a name, so the worst a wrong reading does is keep two items side by side, linked,
instead of hiding one. Pure and offline.
"""

from __future__ import annotations

import re
import unicodedata

from engram.store.units import MONTHS, UNITS

#: Words, numbers with what they hold together ("2026-12-01", "INC-4411", "4.2", "1:1",
#: "60s"), and single marks (":", "=").
_TOKEN = re.compile(r"\w+(?:[-./:]\w+)*|[^\w\s]")
#: Words after which a number is a value the title asserts, not a name: the copulas and
#: verbs of a setting, the prepositions of a bound, a target or a time, and the words
#: that make a date a deadline. Not the verbs a title also uses as nouns ("Load test run
#: 7", "Use case 3"), and not "on": "Notes on 2026-12-01" names a day.
_VALUE_LEAD = frozenset({
    "is", "are", "was", "were", "be", "equals", "equal", "set", "sets", "default", "defaults", "becomes",
    "to", "at", "by", "until", "till", "from", "after", "before", "within", "under", "over", "above",
    "below", "than", "most", "least", "max", "min", "maximum", "minimum", "now", "every", "due",
    "deadline", "expires", "effective", "=", ":", "<", ">", "~",
})
_DATE = re.compile(r"^\d{1,4}[-/.]\d{1,2}(?:[-/.]\d{1,4})?$")


def _tokens(title: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", title).casefold())


def _numeric(word: str) -> bool:
    """A number, a date or a part of one ("12", "v2", "Q3", "2026-12-01", "Nov"), or a
    letter that labels like one ("Cohort A", "Plan B", "Building C")."""
    return any(ch.isdigit() for ch in word) or word in MONTHS or (len(word) == 1 and word.isalpha())


def _names(words: list[str], at: int) -> bool:
    """Whether the number at ``words[at]`` names the note rather than states a value."""
    word = words[at]
    if at and words[at - 1] in _VALUE_LEAD:
        return False
    if _DATE.match(word) or word in MONTHS:  # a date is no amount: "2026-09-18 minutes"
        return True
    suffix = word.lstrip("#v").lstrip("0123456789.,")
    if word[:1].isdigit() and suffix in UNITS:  # "60s", "512mb"
        return False
    after = words[at + 1] if at + 1 < len(words) else ""
    return after not in UNITS and after != "%"


def series(title: str, other: str) -> bool:
    """Whether ``title`` and ``other`` name two notes of one series: the same words but
    for naming numbers that differ (see the module docstring)."""
    mine, theirs = _tokens(title), _tokens(other)
    if len(mine) != len(theirs) or mine == theirs:
        return False
    differ = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]
    return all(_numeric(mine[i]) and _numeric(theirs[i]) and _names(mine, i) and _names(theirs, i) for i in differ)
