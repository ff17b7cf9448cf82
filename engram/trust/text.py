"""The text the detectors read: what a model would read, with the disguises taken off.

A language model reads through tricks a regular expression does not: full-width or
mathematical letters, Cyrillic look-alikes, zero-width joiners inside words, invisible
Unicode *tag* characters (text no person sees but a tokenizer does), ``1gn0re`` for
``ignore``, ``i g n o r e``, HTML entities, Markdown emphasis in the middle of a phrase,
and whole instructions hidden in Base64. :func:`views` returns the variants the screen
matches against, so one rule covers every disguise:

- ``plain`` — NFKC-normalised, HTML entities decoded, invisible format characters
  removed (tag characters are decoded to the ASCII they smuggle), case-folded, Markdown
  emphasis and backticks dropped, letter-spaced words joined, whitespace runs collapsed
  (newlines kept: some rules look at line starts). Non-Latin scripts survive, for the
  multilingual rules.
- ``folded`` — the lines of ``plain`` that change when homoglyphs are mapped to Latin
  and digits and symbols inside words are read as letters (leetspeak); empty when none
  do, which is the common case, so ordinary text is matched once.
- ``decoded`` — the text of Base64 runs and of percent-encoded runs (``%20``) that
  decode to readable text (one level), and the ROT13 of the text when it names ROT13
  (a reader told to apply it would); ``encodings`` names each one's encoding.

:data:`Signals` records which disguises were present: hidden characters are themselves
a finding (a note a person wrote has no reason to carry invisible text).

Everything here is pure and linear in the input; nothing is stored — the item keeps the
bytes its writer gave.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

#: Unicode "tag" characters (U+E0000–E007F) mirror ASCII and render as nothing.
_TAG_BASE = 0xE0000

#: Latin look-alikes from Cyrillic, Greek and a few symbol blocks NFKC leaves alone.
_HOMOGLYPHS = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
        "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "һ": "h", "ӏ": "l",
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ς": "c", "μ": "u",
        "ı": "i", "ȷ": "j", "ℓ": "l", "∕": "/", "⁄": "/", "‐": "-", "‑": "-", "‒": "-",
        "–": "-", "—": "-", "―": "-", "＜": "<", "＞": ">", "‹": "<", "›": ">",
        "«": '"', "»": '"', "“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'",
    }
)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
#: A word that mixes letters with the digits and symbols leetspeak uses.
_LEET_WORD = re.compile(r"(?<![\w$@])(?=[\w$@]*[a-z])(?=[\w$@]*[013457@$])[a-z013457@$]{3,}(?![\w$@])")
#: Four or more single letters separated by one space, dot, dash or underscore.
_SPACED = re.compile(r"\b(?:[a-z][ .\-_*]){3,}[a-z]\b")
_SPACED_SEP = re.compile(r"[ .\-_*]")
_SPACES = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")


@dataclass(frozen=True, slots=True)
class Signals:
    """Disguises found while normalising."""

    tag_characters: bool = False  # invisible Unicode tag characters
    bidi_controls: bool = False  # right-to-left overrides and isolates
    zero_width_in_words: bool = False  # zero-width characters between letters


@dataclass(frozen=True, slots=True)
class Views:
    """The variants of one text the screen matches (see the module docstring)."""

    plain: str
    folded: str  # only the lines folding changed
    decoded: tuple[str, ...]
    signals: Signals
    encodings: tuple[str, ...] = ()  # the encoding of each ``decoded`` text


#: Invisible format characters (Unicode category Cf), tag characters included.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001-\U000e007f]"
)
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_ZERO_WIDTH_IN_WORD = re.compile("(?<=\\w)[\u200b-\u200d\u2060\ufeff\u00ad\u180e]+(?=\\w)")


def _untag(match: re.Match[str]) -> str:
    code = ord(match.group(0)) - _TAG_BASE
    return chr(code) if 0x20 <= code < 0x7F else ""


def _strip_invisible(text: str) -> tuple[str, Signals]:
    if _INVISIBLE.search(text) is None:
        return text, Signals()
    signals = Signals(
        tag_characters=_TAGS.search(text) is not None,
        bidi_controls=_BIDI.search(text) is not None,
        zero_width_in_words=_ZERO_WIDTH_IN_WORD.search(text) is not None,
    )
    text = _TAGS.sub(_untag, text)
    return _INVISIBLE.sub("", text), signals


_DROP_EMPHASIS = str.maketrans("", "", "*`~")
_EDGE_UNDERSCORES = re.compile(r"(?<!\w)_+|_+(?!\w)")


def plain_view(text: str) -> tuple[str, Signals]:
    """``text`` as the ``plain`` view, with the disguises that were present."""
    if text.isascii():
        signals = Signals()
        cleaned = html.unescape(text) if "&" in text else text
    else:
        cleaned, signals = _strip_invisible(unicodedata.normalize("NFKC", text))
        cleaned = html.unescape(cleaned) if "&" in cleaned else cleaned
        cleaned = unicodedata.normalize("NFKC", cleaned)
    cleaned = cleaned.casefold().translate(_DROP_EMPHASIS)
    if "_" in cleaned:
        cleaned = _EDGE_UNDERSCORES.sub("", cleaned)
    # Before whitespace is collapsed, so that "i g n o r e   t h i s" keeps its word gaps.
    cleaned = _SPACED.sub(lambda m: _SPACED_SEP.sub("", m.group(0)), cleaned)
    return _SPACES.sub(" ", cleaned), signals


def fold(plain: str) -> str:
    """The ``folded`` view of a ``plain`` one."""
    folded = plain.translate(_HOMOGLYPHS)
    return _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET), folded)


def decoded_payloads(text: str, limit: int = 8) -> tuple[str, ...]:
    """Readable text hidden in Base64 runs of ``text`` (at most ``limit`` of them)."""
    found: list[str] = []
    for match in _BASE64.finditer(text):
        token = match.group(0)
        if token.isalnum() and (token.islower() or token.isupper() or token.isdigit()):
            continue  # one letter case only: an identifier or a hex hash, not Base64
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None)
        except (binascii.Error, ValueError):
            continue
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if _readable(decoded):
            found.append(decoded)
            if len(found) >= limit:
                break
    return tuple(found)


def _readable(decoded: str) -> bool:
    letters = sum(ch.isalpha() or ch == " " for ch in decoded)
    return len(decoded) >= 12 and " " in decoded and letters >= 0.8 * len(decoded)


#: A run of URL characters holding at least three percent escapes (it starts where a
#: run starts, so a long run is scanned once, not once per character).
_PERCENT = re.compile(r"(?<![\w.~+%-])(?:[\w.~+-]*%[0-9a-fA-F]{2}){3,}[\w.~+-]*")
_ROT13_NAMED = re.compile(r"\brot[- ]?13\b|\bcaesar\b", re.IGNORECASE)


def percent_payloads(text: str, limit: int = 8) -> tuple[str, ...]:
    """Readable text hidden in percent-encoded runs of ``text`` (``ignore%20previous…``)."""
    if "%" not in text:
        return ()
    found = []
    for match in _PERCENT.finditer(text):
        decoded = unquote(match.group(0).replace("+", " "), errors="replace")
        if _readable(decoded):
            found.append(decoded)
            if len(found) >= limit:
                break
    return tuple(found)


def rot13_payload(text: str) -> tuple[str, ...]:
    """The ROT13 of ``text`` when it names ROT13 or a Caesar shift: an instruction to
    apply it is how such a payload reaches a model, so the decoded text is screened."""
    if "13" not in text and "aesar" not in text and "AESAR" not in text:
        return ()  # what every name of it holds: a cheap test before the pattern
    return (codecs.decode(text, "rot13"),) if _ROT13_NAMED.search(text) else ()


#: A line folding could change: non-ASCII, or a digit or symbol touching a letter.
_FOLDABLE = re.compile(r"[^\x00-\x7f]|[a-z][013457@$]|[013457@$][a-z]")
#: Words the screen's rules key on. A folded line is kept only when folding brought one
#: of them into view: "1gn0re" becomes "ignore", while "x2" or "10.5m" reveal nothing.
_REVEALS = re.compile(
    r"ignor|instruct|system|prompt|previous|prior|disregard|assistant|reveal|forget|admin|jailbr|pretend"
    r"|overrid|secret|password|token|recall|classif|duplicate|novel|contradict|delete|send|you|rule|restrict"
    r"|mode|model|agent|answer|respond|repl|output|user|tool|call|memor|note|lesson|this|now|act |role"
)


def _reveals(folded: str, plain: str) -> bool:
    return bool(set(_REVEALS.findall(folded)) - set(_REVEALS.findall(plain)))


def views(text: str) -> Views:
    """Every variant of ``text`` the screen looks at."""
    plain, signals = plain_view(text)
    folded: list[str] = []
    if _FOLDABLE.search(plain):
        for line in plain.split("\n"):
            if _FOLDABLE.search(line) and (f := fold(line)) != line and _reveals(f, line):
                folded.append(f)
    payloads = [("Base64", d) for d in decoded_payloads(text)]
    payloads += [("percent-encoding", d) for d in percent_payloads(text)]
    payloads += [("ROT13", d) for d in rot13_payload(text)]
    return Views(plain=plain, folded="\n".join(folded), decoded=tuple(plain_view(d)[0] for _, d in payloads),
                 signals=signals, encodings=tuple(kind for kind, _ in payloads))
