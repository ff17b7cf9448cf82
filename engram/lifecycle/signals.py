"""Lexical and structural signals for comparing two lessons, offline and deterministic.

A lesson is reduced to a :class:`Text`: its content words (lower-cased, stemmed with the
Snowball English stemmer, irregular past forms and a few common synonyms folded
together), the quantities it states (a number, its unit normalised — ``30 s`` and
``30000 ms`` are one value, ``512 MB`` and ``0.5 GB`` too; an amount with its currency;
a date or a clock time in any common spelling — the word it is attached to: ``port
5432``, and the noun it names when it stands before one: ``the v1 API``), the words it
negates, the orderings and preferences it asserts (``lint before commit``, ``pg_repack
over VACUUM FULL``), and the words it rejects (``no longer``, ``instead of``, ``avoid``,
``stopped posting``, ``switched from``, ``replaced … with``, ``retired``).
:func:`conflicts` compares two texts on those and names every disagreement in words a
person can check.

Nothing here looks at a vault or a model: the same two strings always give the same
signals. Word lists are general English (negations, antonym pairs, change markers), not
tuned to any data set.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import snowballstemmer

from engram.lifecycle.spelling import IRREGULAR, REWRITES, STAMP, acronyms, stamp_value, stamps
from engram.store.units import UNITS

# ---------------------------------------------------------------------- vocabulary


def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _vocabulary(
    """a an the and or but if of to in on at by for from with as into onto than that this
    these those it its it's is are was were be been being am do does did doing have has
    had having i we you he she they them us our your their my me him her there here which
    who whom whose what when where why how all any both each few some such own same so
    very can could will would shall should may might must just also only about
    again further once per via vs etc e.g i.e get gets got let lets make makes one ones
    thing things way ways like use used using uses every then
    against through throughout within during across along among amongst upon toward
    towards else someone somebody anyone anybody everyone everybody something anything
    everything whoever whatever"""
)
#: Words that keep their meaning only as markers (never compared as content).
NEGATIONS = _vocabulary(
    "not no never none nothing nobody nowhere without cannot nor neither avoid"
)
#: Words that say a fact changed: with a swapped value they turn "different" into "replaced".
CHANGE_MARKERS = _vocabulary(
    """now no-longer anymore instead switched switch changed change moved migrated replaced
    replace deprecated upgraded downgraded renamed became become since updated
    discontinued decommissioned retired sunset sunsetted"""
)
#: Verbs and copulas after which one value excludes another ("the API returns JSON").
EXCLUSIVE = _vocabulary(
    """is are was were be equals equal uses use using returns return defaults default runs
    run listens listen lives live stored store located points point set sets requires
    require hosted host served serve written write called named means mean"""
)
_GENERIC_KEYS = _vocabulary(
    """default value set number total current new old about around approximately roughly
    least most up down now is are be use"""
)

#: Pairs of opposites (stems after folding): one in each lesson is a flip.
_ANTONYMS = (
    ("enabl", "disabl"), ("on", "off"), ("true", "false"), ("allow", "deni"),
    ("allow", "forbid"), ("allow", "block"), ("allow", "prohibit"), ("alway", "never"),
    ("requir", "option"), ("befor", "after"), ("increas", "decreas"), ("increas", "reduc"),
    ("higher", "lower"), ("more", "less"), ("more", "fewer"), ("faster", "slower"),
    ("fast", "slow"), ("larger", "smaller"), ("bigger", "smaller"), ("max", "min"),
    ("maximum", "minimum"), ("start", "stop"), ("open", "close"), ("open", "closed"),
    ("sync", "async"), ("synchron", "asynchron"), ("public", "privat"), ("includ", "exclud"),
    ("accept", "reject"), ("success", "fail"), ("succeed", "fail"), ("safe", "unsaf"),
    ("support", "unsupport"), ("first", "last"), ("earlier", "later"), ("lock", "unlock"),
    ("mutabl", "immut"), ("valid", "invalid"), ("upper", "lower"), ("ascend", "descend"),
    ("abov", "below"), ("insid", "outsid"), ("local", "remot"), ("static", "dynam"),
    ("manual", "automat"), ("strict", "lenient"), ("strict", "loos"), ("cheap", "expens"),
    ("hot", "cold"), ("good", "bad"), ("better", "wors"), ("enabl", "turn-off"),
    ("secur", "insecur"), ("stabl", "unstabl"), ("encrypt", "plaintext"), ("yes", "no"),
    ("nullabl", "non-nul"), ("lazi", "eager"), ("shallow", "deep"), ("mandatori", "option"),
    ("keep", "remov"), ("kept", "remov"), ("retain", "remov"), ("add", "remov"),
    ("approv", "reject"), ("pass", "fail"), ("up", "down"), ("push", "pull"),
    ("allow", "disallow"), ("whitelist", "blacklist"), ("allowlist", "denylist"),
)
ANTONYMS: dict[str, frozenset[str]] = {}
for _a, _b in _ANTONYMS:
    ANTONYMS[_a] = ANTONYMS.get(_a, frozenset()) | {_b}
    ANTONYMS[_b] = ANTONYMS.get(_b, frozenset()) | {_a}

#: Words that mean the same in technical writing, folded to the first (after stemming).
_SYNONYMS = (
    ("chang", "modifi", "alter", "edit", "tweak"),
    ("restart", "reboot", "relaunch", "bounc"),
    ("big", "larg", "huge"),
    ("small", "littl", "tini"),
    ("fast", "quick", "rapid", "speedi"),
    ("faster", "quicker"),
    ("slow", "sluggish"),
    ("start", "begin", "launch", "kick"),
    ("remov", "delet", "drop", "eras"),
    ("error", "failur", "fault"),
    ("requir", "need", "mandatori"),
    ("show", "display", "print", "output"),
    ("fix", "repair", "resolv", "patch"),
    ("db", "databas"),
    ("config", "configur", "set", "conf"),
    ("env", "environ"),
    ("dir", "directori", "folder"),
    ("repo", "repositori"),
    ("doc", "document", "docs"),
    ("app", "applic"),
    ("auth", "authent"),
    ("prod", "product"),
    ("dev", "develop"),
    ("k8s", "kubernet"),
    ("postgr", "postgresql", "pg"),
    ("js", "javascript"),
    ("ts", "typescript"),
    ("py", "python"),
    ("deploy", "deploy", "releas", "rollout", "ship"),
    ("mistak", "bug"),
    ("test", "spec"),
    ("server", "host", "machin", "box"),
    ("creat", "make", "generat"),
    ("stop", "halt", "kill"),
    ("crash", "die"),
    ("run", "execut", "invok"),
    ("call", "invoc"),
    ("instal", "setup"),
    ("commit", "check-in"),
    ("timeout", "time-out"),
    ("credenti", "secret", "password", "token"),
    ("log", "logfil"),
    ("file", "document"),
    ("function", "func", "method"),
    ("variabl", "var"),
    ("ci", "pipelin"),
    ("cach", "memo"),
    ("outag", "incid", "downtim"),
    ("user", "custom", "client"),
    ("load", "traffic"),
    ("connect", "conn"),
    ("upgrad", "bump"),
    ("second", "sec", "s"),
    ("minut", "min"),
    ("hour", "hr", "h"),
    ("lint", "linter"),
    ("avoid", "never"),
)
SYNONYMS: dict[str, str] = {}
for _group in _SYNONYMS:
    for _word in _group[1:]:
        SYNONYMS.setdefault(_word, _group[0])


#: Currencies: an amount's value carries its currency ("100 usd" is not "100 eur").
_CURRENCY = {"dollar": "usd", "dollars": "usd", "euro": "eur", "euros": "eur"}
#: Size units whose prefix teams use both ways: "512 MB" is often 512 MiB, so "0.5 GB" can
#: be the same amount. A size also matches in its other reading (see :func:`same_value`).
_OTHER_READING: dict[str, float] = {
    **{u: 1024.0 for u in ("kb", "kilobyte", "kilobytes")}, **{u: 1024.0**2 for u in ("mb", "megabyte", "megabytes")},
    **{u: 1024.0**3 for u in ("gb", "gigabyte", "gigabytes")}, **{u: 1024.0**4 for u in ("tb", "terabyte", "terabytes")},
    "kib": 1e3, "mib": 1e6, "gib": 1e9, "tib": 1e12,
}

_stemmer = snowballstemmer.stemmer("english")

_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_CONTRACTIONS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"\b(can)'?t\b"), r"\1 not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\bno longer\b|\bnot any ?more\b|\bany ?more\b"), " no-longer "),
    (re.compile(r"\binstead of\b|\brather than\b|\bin place of\b|\bin favou?r of\b"), " instead-of "),
    (re.compile(r"\bprior to\b"), " before "),
    (re.compile(r"\b(?:time|times|timed) out\b"), " timeout "),
    (
        re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b(?! of\b)"),
        lambda m: str(_NUMBER_WORDS.index(m.group(1)) + 1),
    ),
    (re.compile(r"\bturn(?:ed|s)? off\b|\bswitch(?:ed|es)? off\b"), " disable "),
    (re.compile(r"\bturn(?:ed|s)? on\b|\bswitch(?:ed|es)? on\b"), " enable "),
)
_TOKEN = re.compile(
    # Words in any script ("[^\W\d]\w*": a letter or _, then letters, digits, _), so a
    # lesson in Russian or with "café" has content words, not ASCII fragments.
    r"#?v?\d+(?:[.,]\d+)*(?:%|[a-z]+\b)?|[^\W\d]\w*(?:[.\-/@]\w+)*|[%<>=]|[.;:!?,()]"
)
_NUMBER = re.compile(r"^(v?)(\d+(?:[.,]\d+)*)([a-z%]*)$")
_CLAUSE_END = frozenset(".;:!?,()") | {"but", "and", "while", "whereas", "although", "though"}
_ORDER_AFTER = {"befor": 1, "then": 1, "after": -1, "follow": -1}
_PREFER = frozenset({"over", "instead-of"})


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The folded stem of one lower-case word."""
    if "-" in word and word not in ("no-longer", "instead-of"):
        word = word.replace("-", "")
    base = _stemmer.stemWord(word) if word.isalpha() else word
    return SYNONYMS.get(base, SYNONYMS.get(word, base))


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number a lesson states: its normalised value and unit class, and its key (the
    content word it belongs to, e.g. ``port`` for ``port 5432``)."""

    key: str  # the content word just before it ("port 5432")
    unit: str  # time, size, percent, ratio, count, version, or "" (plain number)
    value: str  # canonical text of the value (numbers normalised to the base unit)
    raw: str
    after: str = ""  # the content word just after it ("10,000 rows")
    other: str = ""  # the value in the unit's other reading (MB as MiB), or ""
    names: tuple[str, ...] = ()  # the nouns it stands before and names ("the *v1* API")

    def keys(self) -> frozenset[str]:
        return frozenset(k for k in (self.key, self.after) if k)


@dataclass(frozen=True, slots=True)
class Token:
    word: str  # the lower-case surface form
    stem: str
    negated: bool


@dataclass(frozen=True, slots=True)
class Text:
    """One lesson, analysed (see the module docstring)."""

    raw: str
    tokens: tuple[Token, ...]
    stems: frozenset[str]  # content stems
    asserted: frozenset[str]  # content stems outside a negation's scope
    denied: frozenset[str]  # content stems inside a negation's scope
    quantities: tuple[Quantity, ...]
    orders: frozenset[tuple[str, str]]  # (earlier, later)
    prefers: frozenset[tuple[str, str]]  # (preferred, rejected)
    rejected: frozenset[str]  # stems the lesson says to stop using
    changes: tuple[str, ...]  # change markers present
    content: tuple[str, ...] = field(default=())  # content stems in order


def _words(text: str) -> list[str]:
    # NFC first: "café" typed or pasted as e + combining accent is the same word.
    low = stamps(unicodedata.normalize("NFC", text).lower().replace("’", "'").replace("`", " "))
    for pattern, replacement in (*_CONTRACTIONS, *REWRITES):
        low = pattern.sub(replacement, low)
    return [IRREGULAR.get(w, w) for w in _TOKEN.findall(low)]


def is_content(word: str) -> bool:
    return (
        word not in STOPWORDS
        and word not in NEGATIONS
        and word not in CHANGE_MARKERS
        and word not in _CLAUSE_END
        and word not in ("no-longer", "instead-of", "%", "<", ">", "=")
        and not _NUMBER.match(word)
        and not STAMP.match(word)
        and word not in UNITS
    )


_ADVERBS = frozenset({"always", "ever", "yet", "really", "even", "still", "first", "last", "again"})
_IDENTIFIER_NUMBER = re.compile(r"\b([A-Z]{2,})([- ]?#?)(\d+)\b(?![.,]\d)")


@lru_cache(maxsize=4096)
def analyse(text: str) -> Text:
    """Reduce ``text`` to its signals (pure, so cached: a lesson and its clauses are met
    once per candidate, and a vault's items again on every learn)."""
    # "ADR 12", "PAY-1234": a number after an acronym names a thing, it is not a quantity.
    words = _words(_IDENTIFIER_NUMBER.sub(r"\1\2n\3", acronyms(text)))
    tokens: list[Token] = []
    pending = False  # a negation waiting for the word it negates
    for word in words:
        content = is_content(word)
        negated = pending and content and word not in _ADVERBS
        if word in _CLAUSE_END:
            pending = False
        elif word in NEGATIONS or word in ("no-longer", "instead-of"):
            pending = True  # "instead of X" denies X as "not X" does
        elif negated:
            pending = False  # a negation binds the next content word, not the clause
        tokens.append(Token(word, stem(word) if content else word, negated))
    content_tokens = [t for t in tokens if is_content(t.word)]
    return Text(
        raw=text,
        tokens=tuple(tokens),
        stems=frozenset(t.stem for t in content_tokens),
        asserted=frozenset(t.stem for t in content_tokens if not t.negated),
        denied=frozenset(t.stem for t in content_tokens if t.negated),
        quantities=tuple(_quantities(tokens)),
        orders=frozenset(_orders(tokens)),
        prefers=frozenset(_prefers(tokens)),
        rejected=frozenset(_rejected(tokens)),
        changes=tuple(sorted({t.word for t in tokens if t.word in CHANGE_MARKERS or t.word == "no-longer"})),
        content=tuple(t.stem for t in content_tokens),
    )


def _number_value(number: str) -> float | None:
    if number.count(".") > 1 or "," in number:
        cleaned = number.replace(",", "")
        if number.count(".") > 1:
            return None
        number = cleaned
    try:
        return float(number)
    except ValueError:
        return None


def _quantities(tokens: Sequence[Token]) -> Iterable[Quantity]:
    for i, tok in enumerate(tokens):
        stamp = STAMP.match(tok.word)
        if stamp:
            yield _stamp_quantity(tok.word, _key(tokens, i, -1), _key(tokens, i, 1))
            continue
        m = _NUMBER.match(tok.word)
        if not m:
            continue
        other, raw = "", tok.word
        prefix, number, suffix = m.groups()
        unit_word = suffix or (tokens[i + 1].word if i + 1 < len(tokens) and tokens[i + 1].word in UNITS else "")
        before = tokens[i - 1].word if i else ""
        if prefix or number.count(".") >= 2 or before in ("version", "v", "release"):
            unit, value = "version", number
        elif unit_word in UNITS:
            unit, factor = UNITS[unit_word]
            parsed = _number_value(number)
            value = f"{parsed * factor:.6g}" if parsed is not None else number
            if unit == "money":
                currency = _CURRENCY.get(unit_word, unit_word)
                value, raw = f"{value} {currency}", f"{tok.word} {currency}"
            if parsed is not None and unit_word in _OTHER_READING:
                other = f"{parsed * _OTHER_READING[unit_word]:.6g}"
        else:
            unit = ""
            parsed = _number_value(number)
            value = f"{parsed:.6g}" if parsed is not None else number
        names = _named_nouns(tokens, i, unit == "version") if unit in ("", "version") else ()
        yield Quantity(_key(tokens, i, -1), unit, value, raw, _key(tokens, i, 1), other, names)


def _named_nouns(tokens: Sequence[Token], at: int, version: bool) -> tuple[str, ...]:
    """The nouns a number right before them names ("the *v1* API", "the *2023* budget",
    "Python *3.8* support", "the *v1* orders endpoint"). A number before a plural counts
    ("3 replicas", "8 gunicorn workers"), and one after its noun is its value ("port
    5432"): neither names anything. A version names even a plural ("the v1 endpoints")."""
    if tokens[at].word in ("1", "1.0"):
        return ()
    phrase: list[Token] = []  # up to two words: "API", "orders endpoint", "business hours"
    for t in tokens[at + 1:at + 3]:
        if not (is_content(t.word) or t.word in UNITS) or t.word in EXCLUSIVE:
            break
        phrase.append(t)
    if not version and any(_plural(t.word) for t in phrase):
        return ()
    return tuple(t.stem for t in phrase if t.word not in UNITS)


def _plural(word: str) -> bool:
    """Whether ``word`` reads as an English plural ("replicas", "retries"; not "class")."""
    if not word.endswith("s") or word.endswith("ss"):
        return False
    return bool(_stemmer.stemWord(word) == _stemmer.stemWord(word[:-1]))


def _stamp_quantity(word: str, key: str, after: str) -> Quantity:
    unit, value = stamp_value(word)
    return Quantity(key, unit, value, value, after)


def _key(tokens: Sequence[Token], at: int, step: int) -> str:
    """The nearest meaningful content stem before (or after) the number in its clause."""
    j = at + step
    while 0 <= j < len(tokens) and abs(j - at) <= 4:
        word = tokens[j].word
        if word in _CLAUSE_END:
            break
        if is_content(word) and tokens[j].stem not in _GENERIC_KEYS and word not in EXCLUSIVE:
            return tokens[j].stem
        j += step
    return ""


def _neighbour(tokens: Sequence[Token], at: int, step: int) -> str | None:
    j = at + step
    while 0 <= j < len(tokens):
        word = tokens[j].word
        if word in _CLAUSE_END:
            return None
        if is_content(word) and word not in EXCLUSIVE:
            return tokens[j].stem
        j += step
    return None


_HARD_END = frozenset(".;:!?()")
_ORDER_WORDS = frozenset({"befor", "after", "first", "last", "then", "alway", "never", "follow"})
_SEQUENCE_WORDS = frozenset({"befor", "after", "first", "last", "follow"})


def subject_changed(new: Text, old: Text, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether the two lessons open with different things ("*staging* uses 2 replicas" /
    "*production* uses 6 replicas"): a word among the first two content words of each
    that the other lacks. Then a changed value or a flip is about another thing.

    So is an opening noun the two name with different values ("the *v1* API …" / "the
    *v2* API …", see :func:`renamed`) when the rest of the claim differs too ("… was
    deprecated" / "… was released"). With the same claim ("… is the default") the value
    is what changed, and so it is after a verb ("clients call the v1 API" / "clients
    moved to the v2 API"): the value of the subject's choice.
    """
    def head(text: Text) -> set[str]:
        return set([w for w in text.content if w not in ignore and w not in _ORDER_WORDS][:2])

    if bool(head(old) - new.stems) and bool(head(new) - old.stems):
        return True
    mine, theirs = _claim(new), _claim(old)
    return bool(renamed(new, old) & head(new) & head(old)) and bool(mine - theirs) and bool(theirs - mine)


def named(text: Text) -> dict[str, frozenset[str]]:
    """The nouns ``text`` names with a value ("the v1 API"), and those values."""
    out: dict[str, frozenset[str]] = {}
    for q in text.quantities:
        for noun in q.names:
            out[noun] = out.get(noun, frozenset()) | {q.value}
    return out


def renamed(new: Text, old: Text) -> frozenset[str]:
    """Nouns both texts name with values, none shared ("the v1 API" / "the v2 API"): two
    things that share a head noun, not one."""
    mine, theirs = named(new), named(old)
    return frozenset(n for n in mine.keys() & theirs.keys() if not mine[n] & theirs[n])


_COPULAS = frozenset({"is", "are", "was", "were", "be", "been", "being", "am"})


def _claim(text: Text) -> frozenset[str]:
    """What a text says, for telling one claim from another: its content words with
    their polarity, its change words ("deprecated"), its verbs that take one value
    ("use", "returns"; not the copulas) and the values that name nothing ("100/min")."""
    verbs = {stem(t.word) for t in text.tokens if t.word in EXCLUSIVE and t.word not in _COPULAS}
    values = {f"{q.unit}={q.value}" for q in text.quantities if not q.names}
    return frozenset(
        {*text.asserted, *(f"not {s}" for s in text.denied), *text.changes, *verbs, *values}
    )


def _segment_head(tokens: Sequence[Token], at: int, step: int) -> str | None:
    """The action word on one side of an ordering marker: before it, the first content
    word of its clause ("*drain* the node before ..."); after it, the next content word."""
    if step > 0:
        for j in range(at + 1, len(tokens)):
            word = tokens[j].word
            if word in _CLAUSE_END:
                return None
            if is_content(word) and word not in _ADVERBS and word not in EXCLUSIVE:
                return tokens[j].stem
        return None
    head: str | None = None
    for j in range(at - 1, -1, -1):
        word = tokens[j].word
        if word in _HARD_END or (word in _CLAUSE_END and head is not None):
            break
        if is_content(word) and word not in _ADVERBS and word not in EXCLUSIVE:
            head = tokens[j].stem
    return head


def _orders(tokens: Sequence[Token]) -> Iterable[tuple[str, str]]:
    for i, tok in enumerate(tokens):
        direction = _ORDER_AFTER.get(tok.stem if is_content(tok.word) else stem(tok.word))
        if direction is None:
            continue
        left, right = _segment_head(tokens, i, -1), _segment_head(tokens, i, 1)
        if left and right and left != right:
            yield (left, right) if direction > 0 else (right, left)


def _prefers(tokens: Sequence[Token]) -> Iterable[tuple[str, str]]:
    for i, tok in enumerate(tokens):
        if tok.word in _PREFER:
            left, right = _neighbour(tokens, i, -1), _neighbour(tokens, i, 1)
            if left and right and left != right:
                yield (left, right)


_RETIRED = frozenset({"deprecated", "discontinued", "decommissioned", "retired", "sunset", "sunsetted"})
_LEFT_BEHIND = frozenset({"from", "off"})  # "switched from Yarn to pnpm", "moved off Heroku"


def _rejected(tokens: Sequence[Token]) -> Iterable[str]:
    for i, tok in enumerate(tokens):
        following = tokens[i + 1].word if i + 1 < len(tokens) else ""
        if tok.word in ("instead-of", "no-longer", "avoid") or tok.word in _RETIRED or (
            tok.word == "replaced" and following not in ("by", "with")  # "we replaced X with Y"
        ):
            found = _neighbour(tokens, i, 1)
            if found:
                yield found
        if tok.word in _RETIRED or (tok.word in ("replaced", "removed") and following in ("by", "with")):
            found = _neighbour(tokens, i, -1)
            if found:
                yield found
        if tok.word in _LEFT_BEHIND and _after_change(tokens, i):
            found = _neighbour(tokens, i, 1)
            if found:
                yield found


def _after_change(tokens: Sequence[Token], at: int) -> bool:
    """Whether a change verb ("switched", "moved", "migrated") comes earlier in the clause of ``at``."""
    for j in range(at - 1, -1, -1):
        word = tokens[j].word
        if word in _CLAUSE_END:
            return False
        if word in CHANGE_MARKERS and word not in ("now", "since", "instead"):
            return True
    return False


# ---------------------------------------------------------------------- comparing


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Dice coefficient of two stem sets."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


def containment(part: frozenset[str], whole: frozenset[str]) -> float:
    """Share of ``part``'s stems that ``whole`` holds."""
    return len(part & whole) / len(part) if part else 1.0


def value_changes(new: Text, old: Text) -> list[str]:
    """Quantities of one unit on the same key whose values differ (``port: 5432 → 6432``).

    A quantity's keys are the content words just before and after it. Quantities that
    match on no key still pair when each side states exactly one value of a unit
    ("kept 14 days" / "stay 30 days"); plain numbers (ports, counts) need a key. A value
    found anywhere in the other text moved rather than changed.
    """
    found: list[str] = []
    for unit in sorted({q.unit for q in new.quantities}):
        mine = [q for q in new.quantities if q.unit == unit]
        theirs = [q for q in old.quantities if q.unit == unit]
        for q in mine:
            matched = [o for o in theirs if o.keys() & q.keys()]
            if not matched and unit and len(mine) == 1 and len(theirs) == 1 and (
                unit not in _EVENT_UNITS or _same_event(q, theirs[0], new, old)
            ):
                matched = theirs
            if not matched or any(same_value(o, q) for o in matched):
                continue
            if any(same_value(q, o) for o in old.quantities) or all(
                any(same_value(o, n) for n in new.quantities) for o in matched
            ):
                continue
            label = next(iter(sorted(matched[0].keys() & q.keys())), "") or q.key or unit or "value"
            found.append(f"{label}: {', '.join(sorted({o.raw for o in matched}))} → {q.raw}")
    return found


#: Units of a point in time: two of them pair only for the same event ("starts at 02:00"
#: and "finishes by 04:00" are two facts, "kept 14 days" and "stay 30 days" one).
_EVENT_UNITS = frozenset({"clock", "date"})


def _same_event(q: Quantity, o: Quantity, new: Text, old: Text) -> bool:
    return bool(q.key) and bool(o.key) and q.key in old.stems and o.key in new.stems


def same_value(a: Quantity, b: Quantity) -> bool:
    """Whether two quantities state the same value: equal, equal in a size unit's other
    reading ("512 MB" = "0.5 GB", both read as MiB), or a date without a year that falls
    on the other's day ("1 March" / "2025-03-01")."""
    if a.value == b.value:
        return True
    if a.other and b.other and (a.other == b.other or a.other == b.value or a.value == b.other):
        return True
    if a.unit == b.unit == "date" and (a.value.startswith("--") or b.value.startswith("--")):
        return a.value[-5:] == b.value[-5:]
    return False


#: Nouns that only name what a quantity of a unit measures ("the check *interval* is
#: 10 s" = "checks run every 10 s"; "the renewal *date* is 2025-03-01").
_SLOT_NOUNS: dict[str, tuple[str, ...]] = {
    "time": ("interval", "period", "duration", "frequency", "length", "time"),
    "date": ("date", "day", "deadline"),
    "clock": ("time", "hour"),
    "size": ("size", "amount", "capacity", "volume"),
    "percent": ("rate", "share", "percentage", "ratio"),
    "money": ("price", "cost", "fee", "amount", "charge", "sum"),
}


def slot_words(new: Text, old: Text) -> frozenset[str]:
    """Stems that only name the slot of a value both texts state (see ``_SLOT_NOUNS``),
    and the order words of an ordering both state ("drain first, then cordon" / "drain
    before you cordon"): comparing words, they say nothing the shared value does not."""
    units = {q.unit for q in new.quantities for o in old.quantities if q.unit == o.unit and same_value(q, o)}
    words = frozenset(stem(w) for u in sorted(units) for w in _SLOT_NOUNS.get(u, ()))
    if new.orders & old.orders and not order_flips(new, old):
        words |= _SEQUENCE_WORDS
    return words


def without(text: Text, words: frozenset[str]) -> Text:
    """``text`` with the content stems ``words`` left out of its word sets."""
    if not words & text.stems:
        return text
    return replace(
        text, stems=text.stems - words, asserted=text.asserted - words, denied=text.denied - words,
        content=tuple(w for w in text.content if w not in words),
    )


def polarity_flips(new: Text, old: Text, agreed: frozenset[str] = frozenset()) -> list[str]:
    """Content the one lesson asserts and the other negates (``agreed``: words both
    whole lessons negate somewhere, when comparing two of their sentences)."""
    flips = sorted(((new.denied ^ old.denied) & new.stems & old.stems) - agreed)
    return [f"'{s}' asserted in one and negated in the other" for s in flips]


def antonym_flips(new: Text, old: Text) -> list[str]:
    """A word in one lesson whose opposite is in the other (and not in both)."""
    out: list[str] = []
    only_new, only_old = new.stems - old.stems, old.stems - new.stems
    for word in sorted(only_new):
        for opposite in sorted(opposites(word)):
            if opposite in only_old:
                out.append(f"'{opposite}' became '{word}'")
    return out


def opposites(word: str) -> frozenset[str]:
    """Words meaning the opposite of ``word``: listed antonyms, and un-/non- forms."""
    out = set(ANTONYMS.get(word, ()))
    for prefix in ("un", "non"):
        if word.startswith(prefix) and len(word) > len(prefix) + 3:
            out.add(word[len(prefix):])
        elif len(word) > 3:
            out.add(prefix + word)
    return frozenset(out)


def order_flips(new: Text, old: Text) -> list[str]:
    out = [f"'{a}' before '{b}' became '{b}' before '{a}'" for a, b in sorted(old.orders) if (b, a) in new.orders]
    out += [f"'{a}' over '{b}' became '{b}' over '{a}'" for a, b in sorted(old.prefers) if (b, a) in new.prefers]
    return out


def rejections(new: Text, old: Text, agreed: frozenset[str] = frozenset()) -> list[str]:
    """What one lesson says to stop using that the other uses (``agreed`` as above)."""
    # A word the other lesson also negates ("pg_repack, not VACUUM FULL") is rejected by both.
    # "The v1 API is deprecated" rejects no "v2 API": another thing with the same head noun.
    agreed = agreed | renamed(new, old)
    out = [f"rejects '{s}', which the existing lesson uses"
           for s in sorted(new.rejected & old.asserted - old.rejected - old.denied - agreed)]
    out += [f"uses '{s}', which the existing lesson rejects"
            for s in sorted(old.rejected & new.asserted - new.rejected - new.denied - agreed)]
    return out


def substitution(new: Text, old: Text) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """One contiguous slot that differs between two otherwise equal lessons, when it sits
    after a verb that admits one value ("uses X", "returns X"): (old words, new words)."""
    a, b = list(old.content), list(new.content)
    if not a or not b or renamed(new, old):
        return None  # with "the v1 API" / "the v2 API" the lessons are not otherwise equal
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    gone, came = tuple(a[start:end_a]), tuple(b[start:end_b])
    if not gone or not came or len(gone) > 3 or len(came) > 3:
        return None
    if _ORDER_WORDS & {*gone, *came}:
        return None  # "before" / "first … then": an ordering, compared by order_flips
    if set(gone) & set(came) or start == 0:
        return None  # a reordering, or the subject itself changed: another thing, not another value
    # The value sits after a verb that admits one ("uses X"), or in the object half of
    # the sentence; a changed word in the subject half names another thing.
    late = start >= len(a) / 2 and start >= len(b) / 2
    shared = len(a) - len(gone)
    if shared < 2 or shared < len(gone) + len(came):
        return None
    if not late and not (_after_exclusive(old, gone[0]) and _after_exclusive(new, came[0])):
        return None
    if _names_a_slot(old, gone[-1]) or _names_a_slot(new, came[-1]):
        return None  # "the *port* is 5432": the word that changed names what has a value
    return gone, came


def _names_a_slot(text: Text, last: str) -> bool:
    """Whether ``last`` is followed in its clause by a verb that gives it a value, or by
    a number (``Node 18``): then it names a thing that has a value, it is not the value."""
    for i, tok in enumerate(text.tokens):
        if tok.stem == last and is_content(tok.word):
            for j in range(i + 1, min(len(text.tokens), i + 4)):
                word = text.tokens[j].word
                if word in _CLAUSE_END:
                    return False
                if word in EXCLUSIVE or _NUMBER.match(word) or STAMP.match(word):
                    return True
            return False
    return False


def _after_exclusive(text: Text, first: str) -> bool:
    """Whether the content word ``first`` follows an exclusive verb in its clause."""
    for i, tok in enumerate(text.tokens):
        if tok.stem == first and is_content(tok.word):
            for j in range(i - 1, max(-1, i - 4), -1):
                word = text.tokens[j].word
                if word in _CLAUSE_END:
                    break
                if word in EXCLUSIVE or word in ("to", "=", "on", "at"):
                    return True
            return False
    return False


def sentences(text: str) -> list[str]:
    """Split prose into sentences (and list items), keeping each non-empty one."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(])|\n\s*[-*\d.]+\s+|\n{2,}", text.strip())
    return [p.strip() for p in parts if p and p.strip()]
