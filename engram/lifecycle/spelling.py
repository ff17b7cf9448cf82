"""Spellings that say the same thing, rewritten to one form before a lesson is read.

:mod:`engram.lifecycle.signals` compares lessons word by word; these rewrites keep it
from taking a second spelling for a second claim: irregular past forms ("kept" →
"keep"), a defined acronym ("personally identifiable information (PII)" → "PII"), dates
and clock times ("1 March 2025", "March 1st, 2025", "2025-03-01" → one token; "2 pm",
"14:00" → another), amounts with a currency sign ("$500" → "500 usd"), the spellings of
a bound before a number ("up to", "as long as", "at most" → "maximum"; "over", "more
than" → "above"), an obligation ("has to" → "must"), and a cessation ("stopped posting"
→ "no longer posting"). General English, pure and offline; nothing here is tuned to a
data set.
"""

from __future__ import annotations

import re
from typing import Any

from engram.store.units import MONTHS

#: Irregular past forms the stemmer leaves alone ("kept" is not "keep"), to their base.
#: General English; forms that are also common nouns ("left", "bit", "bound") are left out.
_IRREGULAR_FORMS = (
    "arise arose arisen", "begin began begun", "bend bent", "bleed bled",
    "blow blew blown", "break broke broken", "breed bred", "bring brought", "build built",
    "burn burnt", "buy bought", "catch caught", "choose chose chosen", "come came",
    "deal dealt", "dig dug", "draw drew drawn", "drive drove driven", "eat ate eaten",
    "fall fell fallen", "feed fed", "feel felt", "fight fought", "find found", "flee fled",
    "fly flew flown", "forbid forbade forbidden", "forget forgot forgotten",
    "forgive forgave forgiven", "freeze froze frozen", "give gave given", "go went gone",
    "grow grew grown", "hang hung", "hear heard", "hide hid hidden", "hold held",
    "keep kept", "know knew known", "lay laid", "lead led", "learn learnt", "lend lent",
    "lose lost", "mean meant", "meet met", "overwrite overwrote overwritten",
    "override overrode overridden", "pay paid", "rebuild rebuilt", "rerun reran",
    "rewrite rewrote rewritten", "ride rode ridden", "rise rose risen", "say said",
    "see saw seen", "seek sought", "sell sold", "send sent", "shake shook shaken",
    "shoot shot", "show shown", "shrink shrank shrunk", "sink sank sunk", "sit sat",
    "sleep slept", "slide slid", "speak spoke spoken", "speed sped", "spend spent",
    "spin spun", "stand stood", "steal stole stolen", "stick stuck", "strike struck",
    "swear swore sworn", "sweep swept", "swing swung", "take took taken", "teach taught",
    "tear tore torn", "tell told", "think thought", "throw threw thrown",
    "understand understood", "undo undid undone", "wake woke woken", "wear wore worn",
    "win won", "withdraw withdrew withdrawn", "withhold withheld", "write wrote written",
)
IRREGULAR: dict[str, str] = {
    form: group.split()[0] for group in _IRREGULAR_FORMS for form in group.split()[1:]
}

_MONTH_NUMBER = {**MONTHS, "sept": 9}  # recall's month names, and one more abbreviation
_MONTH = "(" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
#: Dates and clock times in their common spellings, rewritten to one token each
#: ("1 March 2025", "March 1st, 2025" and "2025-03-01" → ``ymd20250301``; a date without
#: a year → ``md0301``; "2 am", "2am" and "02:00" → ``hm0200``), read back as quantities.
_DATE_ISO = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")
_DATE_DAY_FIRST = re.compile(rf"\b(\d{{1,2}}){_ORDINAL}(?:\s+of)?\s+{_MONTH}(?:,?\s+(\d{{4}})\b)?(?![\w-])")
_DATE_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}}){_ORDINAL}\b(?![.:]\d)(?:,?\s+(\d{{4}})\b)?")
_CLOCK_12 = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])(?:m\b|\.m\.)")
_CLOCK_24 = re.compile(r"\b(\d{1,2}):(\d{2})\b(?!:\d|\.\d)")
#: A token :func:`stamps` wrote (never a content word; a quantity).
STAMP = re.compile(r"^(ymd\d{8}|md\d{4}|hm\d{4})$")


def _date(day: str, month: str, year: str | None) -> str | None:
    m, d = int(month) if month.isdigit() else _MONTH_NUMBER[month], int(day)
    if not (1 <= m <= 12 and 1 <= d <= 31):
        return None
    return f" ymd{year}{m:02d}{d:02d} " if year else f" md{m:02d}{d:02d} "


def stamps(low: str) -> str:
    """``low`` (lower case) with every date and clock time rewritten to its token."""
    def iso(m: re.Match[str]) -> str:
        return _date(m.group(3), m.group(2), m.group(1)) or m.group(0)

    def day_first(m: re.Match[str]) -> str:
        if m.group(2) == "may" and not m.group(3) and re.match(r"\s+\w", low[m.end():]):
            return m.group(0)  # "5 may fail": the verb, not the month
        return _date(m.group(1), m.group(2), m.group(3)) or m.group(0)

    def month_first(m: re.Match[str]) -> str:
        if m.group(1) == "may" and not m.group(3):
            return m.group(0)  # "may 2" without a year is too often the verb
        return _date(m.group(2), m.group(1), m.group(3)) or m.group(0)

    def clock(m: re.Match[str], half: str | None = None) -> str:
        hour, minute = int(m.group(1)), int(m.group(2) or 0)
        if half:
            if not 1 <= hour <= 12:
                return m.group(0)
            hour = hour % 12 + (12 if half == "p" else 0)
        if hour > 23 or minute > 59:
            return m.group(0)
        return f" hm{hour:02d}{minute:02d} "

    low = _DATE_ISO.sub(iso, low)
    low = _DATE_DAY_FIRST.sub(day_first, low)
    low = _DATE_MONTH_FIRST.sub(month_first, low)
    low = re.sub(r"\bnoon\b", " hm1200 ", re.sub(r"\bmidnight\b", " hm0000 ", low))
    return _CLOCK_24.sub(clock, _CLOCK_12.sub(lambda m: clock(m, m.group(3)), low))


def stamp_value(word: str) -> tuple[str, str]:
    """The unit and value of a token :func:`stamps` wrote: ``clock`` ``"02:00"``, or
    ``date`` ``"2025-03-01"`` (``"--03-01"`` without a year)."""
    digits = word.lstrip("ymdh")
    if word.startswith("hm"):
        return "clock", f"{digits[:2]}:{digits[2:]}"
    if word.startswith("ymd"):
        return "date", f"{digits[:4]}-{digits[4:6]}-{digits[6:]}"
    return "date", f"--{digits[:2]}-{digits[2:]}"


_DEFINED_AFTER = re.compile(r"\(([A-Za-z]{2,8})\)")
_DEFINED_BEFORE = re.compile(r"\b([A-Z][A-Za-z]{1,7})\s+\(([^()]{3,80})\)")


def acronyms(text: str) -> str:
    """A defined acronym stands for its words: "personally identifiable information (PII)"
    and "PII (personally identifiable information)" both read "PII"."""
    def initials(words: list[str]) -> str:
        return "".join(w[0] for w in words).lower()

    def parts(words: str) -> list[str]:
        return [w for w in re.split(r"[^\w]+", words) if w]

    out, last = [], 0
    for m in _DEFINED_AFTER.finditer(text):
        before = text[last:m.start()].rstrip()
        words = parts(before)[-len(m.group(1)):]
        if len(words) == len(m.group(1)) and initials(words) == m.group(1).lower():
            cut = re.search(r"(?:[^\w]*" + r"[^\w]+".join(map(re.escape, words)) + r")$", before)
            if cut:
                out.append(before[:cut.start()] + " " + m.group(1))
                last = m.end()
    text = "".join(out) + text[last:]

    def before_words(m: re.Match[str]) -> str:
        short = m.group(1)
        if sum(c.isupper() for c in short) >= 2 and initials(parts(m.group(2))) == short.lower():
            return short
        return m.group(0)

    return _DEFINED_BEFORE.sub(before_words, text)


#: Applied after the number words are digits ("three days" → "3 days").
REWRITES: tuple[tuple[re.Pattern[str], Any], ...] = (
    # "we stopped posting X" says "we no longer post X" (a gerund only: "stop the worker"
    # is an order, and "stop" keeps its antonym "start")
    (re.compile(r"\b(?:stop|stops|stopped|stopping|cease|ceases|ceased|quit|quits|discontinued)\s+"
                r"(?=\w{2,}ing\b)(?!(?:str|spr|r|th|k|w|ceil|morn|even|dur)ing\b)"), " no-longer "),
    # Bounds before a number in their common spellings: "up to 3 days" = "as long as 3
    # days" (a maximum), "over $500" = "more than 500 USD" (above), "at least" (a minimum).
    (re.compile(r"([$€£])\s?(?=\d)"), lambda m: {"$": " usd ", "€": " eur ", "£": " gbp "}[m.group(1)]),
    (re.compile(r"\b(usd|eur|gbp) (\d[\d,]*(?:\.\d+)?)"), r" \2 \1 "),
    (re.compile(r"\b(?:up to|as (?:long|much|many|high|late) as|at (?:the )?most|no more than|"
                r"(?:a )?max(?:imum)?(?: of)?)\s+(?=\d)"), " maximum "),
    (re.compile(r"\b(?:at (?:the )?least|no (?:less|fewer) than|(?:a )?min(?:imum)? of|minimum)\s+(?=\d)"), " minimum "),
    (re.compile(r"\b(?:over|more than|greater than|in excess of|exceeding)\s+(?=\d)"), " above "),
    (re.compile(r"\b(?:under|less than|fewer than)\s+(?=\d)"), " below "),
    # "has to approve" = "must approve": an obligation, not a requirement on a thing.
    (re.compile(r"\b(?:has|have|had|needs?) to\b(?= [a-z])"), " must "),
)
