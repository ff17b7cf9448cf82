"""The canonical codec for engram files and synapse files.

This module is the one reader and the one writer of the on-disk format. It lives in
``mergedriver`` because the merge driver may import only the standard library and PyYAML
(git starts it once per conflicting file), and the driver must write exactly the bytes
``engram`` writes; ``engram.format`` builds typed values on top of it.

Design and invariants:

- A document is frontmatter (a YAML mapping) plus a Markdown body. The writer emits the
  known keys in a fixed order, then unknown keys sorted by name, as UTF-8 with LF line
  endings and a trailing newline. Floats are rounded to six decimals.
- ``render(parse(b)) == b`` for every ``b`` that ``render`` produced: the round trip of a
  file this codec wrote is byte-identical.
- Reading never lets YAML 1.1 guess types. Timestamps stay text and are normalised to
  one canonical instant form (``2026-06-21T10:30:00.000Z``); ``yes``/``no``/``on``/``off``
  stay strings; a number in a known string field keeps its source text (``1.10`` stays
  ``"1.10"``); sexagesimal and octal forms are not numbers.
- Reading is bounded: a file above :data:`MAX_ITEM_BYTES` / :data:`MAX_SYNAPSE_BYTES`, or
  frontmatter above :data:`MAX_FRONTMATTER_BYTES`, is refused (:class:`TooLarge`) before
  any YAML is parsed, a file with NUL bytes is :class:`BinaryData`, and YAML aliases and
  deep nesting are refused (:mod:`mergedriver.yamlio`). Files arrive from teammates
  through git: one hostile file must cost a clone an error, never a hang.
- The ``## Synapses (derived)`` section is regenerated from synapse files and is never
  part of the content: it is excluded from ``contentHash`` and ``contentSize``. Text a
  person wrote below that section is kept and moved above it on the next write.

YAML itself — typing without guessing, canonical output, the fast reader — is in
:mod:`mergedriver.yamlio`; this module knows the schema, the body and the files. Errors
are raised as :class:`CodecError` (a ``ValueError``) carrying a message that says what is
wrong; callers translate it into their own error tree.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from mergedriver.yamlio import (
    INT_RE,
    CodecError,
    Instant,
    Number,
    dump_mapping,
    dump_yaml,
    key_text,
    load_raw,
    load_yaml,
)

__all__ = [
    "DERIVED_HEADING",
    "ENGRAM_KEYS",
    "EVIDENCE_KEYS",
    "MAX_FRONTMATTER_BYTES",
    "MAX_ITEM_BYTES",
    "MAX_SYNAPSE_BYTES",
    "PROPOSAL_KEYS",
    "SYNAPSE_KEYS",
    "BinaryData",
    "CodecError",
    "TooLarge",
    "canonical_content",
    "content_hash",
    "decode",
    "dump_yaml",
    "format_time",
    "join_body",
    "load_yaml",
    "normalize_engram_meta",
    "normalize_synapse",
    "normalize_unknown",
    "normalize_value",
    "parse_engram",
    "parse_proposal",
    "parse_synapse",
    "parse_time",
    "render_engram",
    "render_proposal",
    "render_synapse",
    "split_derived",
    "split_frontmatter",
]


# --------------------------------------------------------------------------- limits

#: The largest item file read: 1 MB of content (the write limit) leaves room for the
#: frontmatter and a derived section of thousands of links.
MAX_ITEM_BYTES = 4 * 1024 * 1024
#: The largest frontmatter read (summaries are at most 2,000 characters).
MAX_FRONTMATTER_BYTES = 256 * 1024
#: The largest synapse file read (thousands of evidence entries).
MAX_SYNAPSE_BYTES = 1024 * 1024


class TooLarge(CodecError):
    """Input above a read limit; refused before parsing."""


class BinaryData(CodecError):
    """Input with NUL bytes: not a text file."""


def check_size(size: int, limit: int, what: str = "the file", unit: str = "bytes") -> None:
    """Raise :class:`TooLarge` when ``size`` exceeds ``limit``."""
    if size > limit:
        raise TooLarge(
            f"{what} is {size:,} {unit}; engram reads at most {limit:,} "
            "(split the item, or move the large part out of the vault)"
        )


# --------------------------------------------------------------------------- schema

# Field types. "text" fields keep the source text of anything YAML would coerce.
TEXT, TEXTS, UNIT, NUMBER, INT, TIME, ANY = "text", "texts", "unit", "number", "int", "time", "any"

#: Known engram frontmatter keys in canonical order, with their types.
ENGRAM_KEYS: tuple[tuple[str, str], ...] = (
    ("id", TEXT),
    ("title", TEXT),
    ("slug", TEXT),
    ("domainTags", TEXTS),
    ("kind", TEXT),
    ("tags", TEXTS),
    ("summary", TEXT),
    ("importance", UNIT),
    ("confidence", UNIT),
    ("sourceType", TEXT),
    ("status", TEXT),
    ("verificationStatus", TEXT),
    ("visibility", TEXT),
    ("createdBy", TEXT),
    ("createdAt", TIME),
    ("updatedBy", TEXT),
    ("updatedAt", TIME),
    ("version", INT),
    ("contentHash", TEXT),
    ("contentSize", INT),
    ("retrievalCount", INT),
    ("effectiveRetrievals", INT),
    ("failedUses", INT),
    ("reinforcementScore", NUMBER),
    ("lastRetrievedAt", TIME),
    ("lastEffectiveAt", TIME),
    ("lastFailedAt", TIME),
    ("lastVerifiedAt", TIME),
    ("validWhile", ANY),
    ("source", ANY),
    ("activatedAt", TIME),
    ("deactivatedAt", TIME),
    ("supersededBy", TEXT),
    # Lifecycle (engram.lifecycle): the situation a lesson holds in, what it superseded or
    # absorbed, a skill's ordered steps, its preconditions and the skills it is composed
    # of (in order), verification events.
    ("situation", TEXT),
    ("provenance", ANY),
    ("steps", ANY),
    ("preconditions", TEXTS),
    ("composedOf", TEXTS),
    ("verifications", ANY),
    # Scopes (engram.scopes): who recalled an item and on which days (the evidence that
    # earns promotion), endorsements, the promotions it went through, and the concrete
    # body a generalized org item keeps as an example.
    ("recalledBy", TEXTS),
    ("recallDays", TEXTS),
    ("endorsements", ANY),
    ("promotions", ANY),
    ("example", TEXT),
    # Set by the merge: conflicts it kept or refused, listed until a person resolves them.
    ("mergeConflicts", TEXTS),
)

#: Known synapse keys in canonical order.
SYNAPSE_KEYS: tuple[tuple[str, str], ...] = (
    ("id", TEXT),
    ("from", TEXT),
    ("to", TEXT),
    ("kind", TEXT),
    ("weight", UNIT),
    ("evidence", ANY),
    ("createdBy", TEXT),
    ("createdAt", TIME),
    ("updatedBy", TEXT),
    ("updatedAt", TIME),
    ("retrievalWeight", NUMBER),
)

#: Known keys of a proposal file (``proposals/<kind>/prop-<hash16>.yaml``), in canonical order.
PROPOSAL_KEYS: tuple[tuple[str, str], ...] = (
    ("id", TEXT),
    ("kind", TEXT),
    ("status", TEXT),
    ("title", TEXT),
    ("reason", TEXT),
    ("targets", TEXTS),
    ("payload", ANY),
    ("score", NUMBER),
    ("createdBy", TEXT),
    ("createdAt", TIME),
    ("updatedBy", TEXT),
    ("updatedAt", TIME),
    ("decidedBy", TEXT),
    ("decidedAt", TIME),
    ("note", TEXT),
)

#: Known keys of one synapse evidence entry, in canonical order.
EVIDENCE_KEYS: tuple[tuple[str, str], ...] = (
    ("description", TEXT),
    ("addedBy", TEXT),
    ("confidence", UNIT),
    ("addedAt", TIME),
)

DERIVED_HEADING = "## Synapses (derived)"
_DERIVED_LINE = re.compile(r"^- [→←] \[\[.*\]\]\s*$")

# --------------------------------------------------------------------------- time


def parse_time(value: Any) -> datetime:
    """Parse an ISO-8601 instant (``Z``, offsets, fractions, or a bare date) as UTC."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise CodecError(f"not a timestamp: {value!r} (use e.g. 2026-06-21T10:30:00Z)") from None
    else:
        raise CodecError(f"not a timestamp: {value!r} (use e.g. 2026-06-21T10:30:00Z)")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


_CANONICAL_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{3}Z$")


#: Whether each ``YYYY-MM-DD`` seen in a canonical instant is a real day (bounded): a
#: vault's instants fall on a few hundred days, and building a datetime to check each
#: one cost more than the rest of the check.
_REAL_DAYS: dict[str, bool] = {}


def format_time(value: datetime | str) -> str:
    """The canonical form of an instant: UTC, milliseconds, ``Z``."""
    if isinstance(value, str) and (m := _CANONICAL_TIME.match(value)):
        # Already canonical: only check that it names a real instant.
        year, month, day, hour, minute, second = m.groups()
        real = _REAL_DAYS.get(value[:10])
        if real is None:
            try:
                datetime(int(year), int(month), int(day))
                real = True
            except ValueError:
                real = False
            if len(_REAL_DAYS) < 1 << 14:
                _REAL_DAYS[value[:10]] = real
        if real and int(hour) < 24 and int(minute) < 60 and int(second) < 60:
            return str(value)
        raise CodecError(f"not a timestamp: {value!r} (use e.g. 2026-06-21T10:30:00Z)")
    dt = parse_time(value)
    # Truncate (not round) to milliseconds so formatting is idempotent.
    dt = dt - timedelta(microseconds=dt.microsecond % 1000)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


# --------------------------------------------------------------------------- fields


def _as_text(key: str, value: Any) -> str:
    if isinstance(value, str):
        return str(value)  # drops the Number marker, keeps the source text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, datetime, date)):
        return str(value)
    raise CodecError(f"field {key!r} must be text, got {type(value).__name__}")


def _as_number(key: str, value: Any) -> float:
    if isinstance(value, bool):
        raise CodecError(f"field {key!r} must be a number, got a boolean")
    try:
        if isinstance(value, str):
            try:
                number = float(value)  # plain decimal text, the common case
            except ValueError:
                number = float(Number(value).value())
        else:
            number = float(value)
    except (TypeError, ValueError):
        raise CodecError(f"field {key!r} must be a number, got {value!r}") from None
    if math.isnan(number) or math.isinf(number):
        raise CodecError(f"field {key!r} must be a finite number, got {value!r}")
    return round(number, 6) + 0.0  # + 0.0 turns -0.0 into 0.0


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and INT_RE.match(value):
        return int(value)  # exact, even beyond a float's 53 bits
    number = _as_number(key, value)
    if number != int(number):
        raise CodecError(f"field {key!r} must be a whole number, got {value!r}")
    return int(number)


def normalize_value(key: str, kind: str, value: Any) -> Any:
    """One known key's value in canonical form (``kind`` from :data:`ENGRAM_KEYS`);
    raises CodecError when it cannot be one."""
    if kind == TEXT:
        return value if type(value) is str else _as_text(key, value)
    if kind == TEXTS:
        items = value if isinstance(value, list) else [value]
        out: list[str] = []
        for item in items:
            if item is None:
                continue
            text = _as_text(key, item)
            if text not in out:
                out.append(text)
        return out
    if kind == UNIT:
        return min(1.0, max(0.0, _as_number(key, value)))
    if kind == NUMBER:
        return _as_number(key, value)
    if kind == INT:
        return _as_int(key, value)
    if kind == TIME:
        return format_time(value)
    return normalize_unknown(value)


def normalize_unknown(value: Any) -> Any:
    """Unknown values: keep structure, make numbers plain and floats canonical."""
    if isinstance(value, Number):
        value = value.value()
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return value
        return round(value, 6) + 0.0
    if isinstance(value, dict):
        return {k: normalize_unknown(v) for k, v in _text_keys(value).items()}
    if isinstance(value, list):
        return [normalize_unknown(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value


def _normalize(
    raw: Mapping[str, Any], schema: tuple[tuple[str, str], ...], what: str
) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise CodecError(f"{what} must be a YAML mapping of keys to values")
    out: dict[str, Any] = {}
    for key, kind in schema:
        value = raw.get(key)
        if value is None:
            continue
        # Text that is already text, most values, without a call (every file read passes here).
        out[key] = value if kind == TEXT and type(value) is str else normalize_value(key, kind, value)
    known = _KNOWN.get(id(schema)) or frozenset(key for key, _ in schema)
    rest = [k for k in raw if k not in known]  # usually a few text keys, or none
    if rest:
        extra = _text_keys({k: raw[k] for k in rest})
        for key in sorted(extra):
            out[key] = normalize_unknown(extra[key])
    return out


#: The keys of each schema above, by the schema's identity (built once, not per file).
_KNOWN = {id(s): frozenset(k for k, _ in s) for s in (ENGRAM_KEYS, SYNAPSE_KEYS, PROPOSAL_KEYS, EVIDENCE_KEYS)}


def _text_keys(raw: Mapping[Any, Any]) -> dict[str, Any]:
    """``raw`` with text keys; two keys that read as one text (``~`` and ``'null'``) are refused
    rather than one silently dropped."""
    out: dict[str, Any] = {}
    for k, v in raw.items():
        key = key_text(k)
        if key in out:
            raise CodecError(f"the key {key!r} appears twice")
        out[key] = v
    return out


def normalize_engram_meta(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical engram frontmatter: typed known keys in order, unknown keys sorted.

    ``None`` values of known keys are dropped (an absent optional field).
    """
    meta = _normalize(raw, ENGRAM_KEYS, "frontmatter")
    if not meta.get("id"):
        raise CodecError("frontmatter has no 'id'")
    return meta


def normalize_synapse(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical synapse mapping; evidence entries normalised and sorted."""
    data = _normalize(raw, SYNAPSE_KEYS, "synapse")
    for key in ("id", "from", "to", "kind"):
        if not data.get(key):
            raise CodecError(f"synapse has no {key!r}")
    evidence = raw.get("evidence") or []
    if not isinstance(evidence, list):
        raise CodecError("synapse 'evidence' must be a list of entries")
    entries = [_normalize(e, EVIDENCE_KEYS, "evidence entry") for e in evidence]
    data["evidence"] = sort_evidence(entries)
    return data


def sort_evidence(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Evidence in canonical order (time, author, text), duplicates removed."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for entry in sorted(entries, key=_evidence_sort_key):
        marker = dump_yaml(dict(entry))
        if marker not in seen:
            seen.add(marker)
            out.append(dict(entry))
    return out


def _evidence_sort_key(entry: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(entry.get("addedAt", "")),
        str(entry.get("addedBy", "")),
        str(entry.get("description", "")),
        dump_yaml(dict(entry)),
    )


# --------------------------------------------------------------------------- body


def canonical_content(text: str) -> str:
    """Content normal form: LF line endings and a final LF; every other byte is kept.

    Trailing spaces (a Markdown hard line break), tabs, leading and trailing blank lines
    and indentation are the author's and survive every write and merge. Only CRLF/CR
    become LF, and non-empty content that lacks a final newline gets one, so that the
    derived section can always follow it on a line of its own.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text and not text.endswith("\n"):
        text += "\n"
    return text


def split_derived(body: str) -> tuple[str, str]:
    """Split a body into (content, derived section lines).

    The derived section is the heading plus the wikilink lines (and blank lines) right
    after it; the one blank line :func:`join_body` puts before the heading is dropped.
    Anything below the section is content and is kept (moved above it on the next
    write).
    """
    text = body.replace("\r\n", "\n")
    if DERIVED_HEADING not in text:  # most bodies: no line to look for
        return canonical_content(text), ""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == DERIVED_HEADING:
            j = i + 1
            while j < len(lines) and (_DERIVED_LINE.match(lines[j]) or not lines[j].strip()):
                j += 1
            derived = [ln for ln in lines[i + 1 : j] if ln.strip()]
            before = "\n".join(lines[:i])
            before = before + "\n" if i else ""
            if before.endswith("\n\n"):
                before = before[:-1]  # the separator join_body added
            elif before == "\n":
                before = ""
            rest = "\n".join(lines[j:])
            return canonical_content(before + rest), "\n".join(derived)
    return canonical_content(text), ""


def join_body(content: str, derived_lines: Iterable[str]) -> str:
    """Content followed by the derived section (omitted when there are no links)."""
    content = canonical_content(content)
    lines = list(derived_lines)
    if not lines:
        return content
    section = DERIVED_HEADING + "\n" + "\n".join(lines) + "\n"
    return content + "\n" + section if content else section


def content_hash(content: str) -> str:
    """``sha256:<hex>`` of the canonical content (the body without the derived section)."""
    return "sha256:" + hashlib.sha256(canonical_content(content).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- files


def decode(data: bytes) -> str:
    """File bytes as text (a UTF-8 BOM dropped); CodecError for binary or non-UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\x00" in data:
        raise BinaryData("binary data (NUL bytes), not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(
            f"not UTF-8 (byte {exc.start} is invalid); re-save the file as UTF-8"
        ) from None


def split_frontmatter(text: str) -> tuple[str, str]:
    """Split ``---`` fenced frontmatter from the body; raise CodecError without one."""
    text = text.replace("\r\n", "\n")
    if not text.startswith("---"):
        raise CodecError("no frontmatter (the file must start with a '---' line)")
    first = text.find("\n")
    if first < 0 or text[:first].strip() != "---":
        raise CodecError("no frontmatter (the file must start with a '---' line)")
    # The closing fence: the next line that is ``---`` and spaces or tabs. Found by
    # str.find, not a multi-line regex, which tries every position of the frontmatter.
    at = first
    while True:
        at = text.find("\n---", at)
        if at < 0:
            raise CodecError("frontmatter is not closed (add a '---' line after it)")
        end = text.find("\n", at + 4)
        end = len(text) if end < 0 else end
        if not text[at + 4 : end].strip(" \t"):
            break
        at += 1
    return text[first + 1 : at + 1], text[end + 1 :]


def parse_engram(data: bytes) -> tuple[dict[str, Any], str, str]:
    """Parse engram bytes into (canonical meta, content, derived section lines)."""
    check_size(len(data), MAX_ITEM_BYTES)
    front, body = split_frontmatter(decode(data))
    check_size(len(front), MAX_FRONTMATTER_BYTES, "the frontmatter", "characters")
    raw = load_raw(front) if front.strip() else {}
    if not isinstance(raw, dict):
        raise CodecError("frontmatter must be a YAML mapping of keys to values")
    meta = normalize_engram_meta(raw)
    content, derived = split_derived(body)
    return meta, content, derived


def _mark_instants(data: dict[str, Any], schema: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    times = {key for key, kind in schema if kind == TIME}
    return {k: Instant(v) if k in times and isinstance(v, str) else v for k, v in data.items()}


def render_engram(meta: Mapping[str, Any], content: str, derived_lines: Iterable[str] = ()) -> bytes:
    """The canonical bytes of an engram file."""
    return render_normalized(normalize_engram_meta(meta), content, derived_lines)


def render_normalized(meta: Mapping[str, Any], content: str, derived_lines: Iterable[str] = ()) -> bytes:
    """:func:`render_engram` of a mapping :func:`normalize_engram_meta` returned (for a
    writer that keeps the normalised mapping: it is what a parse of the bytes gives)."""
    front = dump_mapping(_mark_instants(dict(meta), ENGRAM_KEYS))
    return ("---\n" + front + "---\n" + join_body(content, derived_lines)).encode("utf-8")


def parse_synapse(data: bytes) -> dict[str, Any]:
    """Parse synapse YAML bytes into the canonical mapping."""
    check_size(len(data), MAX_SYNAPSE_BYTES)
    raw = load_raw(decode(data))
    if not isinstance(raw, dict):
        raise CodecError("a synapse file must be a YAML mapping")
    return normalize_synapse(raw)


def render_synapse(data: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a synapse file."""
    out = _mark_instants(normalize_synapse(data), SYNAPSE_KEYS)
    out["evidence"] = [_mark_instants(e, EVIDENCE_KEYS) for e in out["evidence"]]
    return dump_mapping(out).encode("utf-8")


def normalize_proposal(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical proposal mapping: typed known keys in order, unknown keys sorted."""
    data = _normalize(raw, PROPOSAL_KEYS, "proposal")
    for key in ("id", "kind", "status"):
        if not data.get(key):
            raise CodecError(f"proposal has no {key!r}")
    return data


def parse_proposal(data: bytes) -> dict[str, Any]:
    """Parse proposal YAML bytes into the canonical mapping (bounded like a synapse file)."""
    check_size(len(data), MAX_SYNAPSE_BYTES)
    raw = load_raw(decode(data))
    if not isinstance(raw, dict):
        raise CodecError("a proposal file must be a YAML mapping")
    return normalize_proposal(raw)


def render_proposal(data: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a proposal file."""
    return dump_mapping(_mark_instants(normalize_proposal(data), PROPOSAL_KEYS)).encode("utf-8")
