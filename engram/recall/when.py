"""Dates in a query, matched against when items were written.

"What did Maria donate in December 2023?", "who did she meet on May 3, 2023?", "when
did he go camping in June?": a question that names a time is about knowledge recorded
then. :func:`periods` finds the dates a query names — a day (``May 3, 2023``,
``3 May 2023``, ``2023-05-03``), a month (``December 2023``, or ``June`` of any year), a
year (``2023``) — and :func:`dated_in` says whether an item's ``createdAt`` falls in one
of them or in the :data:`SLACK_DAYS` after it: notes are written after what they record.
Recall adds the ``time`` weight to such items (a tie-breaker among lexical matches; it
never brings in an item the query's words do not find), and the words naming the date
(:func:`date_words`) are held by the items written then and by no others: the
timestamp, not the text, answers for them (:func:`engram.recall.lexical.judge`).

English month names only; a bare number is a year only from 1900 to 2099. Nothing here
is tied to one data set: it reads the same frontmatter timestamp every item has.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from engram.store.units import MONTHS

SLACK_DAYS = 14

_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), "iso"),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I), "mdy"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I), "dmy"),
    (re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I), "my"),
    (re.compile(rf"\b(?:in|during|since|until|before|after|of|last|this|early|late|mid)\s+{_MONTH}\b(?!\s*\d)", re.I), "m"),
    (re.compile(rf"\b(?:in|during|since|until|before|after|of)\s+{_YEAR}\b"), "y"),
)


@dataclass(frozen=True, slots=True)
class Period:
    """[start, end) in epoch seconds, or a month of any year (``start`` None)."""

    start: float | None
    end: float | None
    month: int | None = None


def _span(year: int, month: int | None = None, day: int | None = None) -> Period | None:
    try:
        if day is not None and month is not None:
            start = datetime(year, month, day, tzinfo=UTC)
            return Period(start.timestamp(), (start + timedelta(days=1)).timestamp())
        if month is not None:
            start = datetime(year, month, 1, tzinfo=UTC)
            last = calendar.monthrange(year, month)[1]
            return Period(start.timestamp(), (start + timedelta(days=last)).timestamp())
        return Period(datetime(year, 1, 1, tzinfo=UTC).timestamp(), datetime(year + 1, 1, 1, tzinfo=UTC).timestamp())
    except ValueError:  # 31 February: not a date
        return None


def periods(text: str) -> tuple[Period, ...]:
    """The periods ``text`` names, each once, the most specific reading of each span."""
    return _read(text)[0]


def date_words(text: str) -> frozenset[str]:
    """The words of ``text`` that name its periods (lower-cased: ``june``, ``2023``, ``3``):
    an item's timestamp answers for them, so relevance does not ask its text to."""
    spans = _read(text)[1]
    return frozenset(
        w.lower() for a, b in spans for w in re.findall(r"[^\W_]+", text[a:b])
        if w.lower() in MONTHS or w.isdigit()
    )


def _read(text: str) -> tuple[tuple[Period, ...], list[tuple[int, int]]]:
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    for pattern, form in _PATTERNS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # inside a more specific date already read
            g = m.groups()
            period: Period | None
            if form == "iso":
                period = _span(int(g[0]), int(g[1]), int(g[2]))
            elif form == "mdy":
                period = _span(int(g[2]), MONTHS[g[0].lower()], int(g[1]))
            elif form == "dmy":
                period = _span(int(g[2]), MONTHS[g[1].lower()], int(g[0]))
            elif form == "my":
                period = _span(int(g[1]), MONTHS[g[0].lower()])
            elif form == "m":
                period = Period(None, None, MONTHS[g[0].lower()])
            else:
                period = _span(int(g[0]))
            if period is not None and period not in found:
                found.append(period)
                taken.append((m.start(), m.end()))
    return tuple(found), taken


def dated_in(stamp: float | None, wanted: tuple[Period, ...]) -> bool:
    """Whether an item written at ``stamp`` (epoch seconds) falls in one of ``wanted``,
    or within :data:`SLACK_DAYS` after it."""
    if stamp is None or not wanted:
        return False
    slack = SLACK_DAYS * 86_400.0
    for p in wanted:
        if p.start is not None and p.end is not None:
            if p.start <= stamp < p.end + slack:
                return True
        elif p.month is not None:
            moment = datetime.fromtimestamp(stamp, UTC)
            earlier = datetime.fromtimestamp(stamp - slack, UTC)
            if p.month in (moment.month, earlier.month):
                return True
    return False
