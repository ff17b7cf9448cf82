"""Reading any Markdown note as an item: engram's own files and a person's notes alike.

An existing Obsidian (or Dendron, or plain Markdown) folder is adopted in place: every
``.md`` file is an item, whatever its frontmatter says, and nothing in it is rewritten
to make it one. :func:`read_note` turns the bytes of any note into an
:class:`~engram.store.model.Engram` plus what the index needs to know about where its
values came from:

- A file whose frontmatter engram's canonical reader accepts (an engram item, a
  Co-Engram file, a Dendron note) is read by it, as before.
- Anything else is read leniently. Each engram key is taken only when its value is one
  engram can use (``status: "[[Published]]"`` is an Obsidian property, not an engram
  status); a key whose value does not fit is a *clash*, reported and kept as the
  person's property. Frontmatter that is not YAML at all (a template's
  ``{{date}}`` placeholders) leaves the note readable by its file name and body.
- Values other tools keep under their own names fill engram's fields in memory only:
  ``desc`` → summary, ``created``/``updated``/``modified`` (dates or Dendron's epoch
  milliseconds) → createdAt/updatedAt. A missing title is the file name, as Obsidian
  shows it; a missing kind is ``note``; a missing domain is the note's folder.

Identity. A note without a usable ``id`` gets a *derived* id, ``note-`` plus 16 hex
digits of SHA-256 over its NFC-normalised vault-relative path. It is a pure function of
the path, so every clone — a fresh one included, whose index is rebuilt from nothing —
gives the same note the same id. A rename gives it a new one, which is safe because
nothing durable ever names a derived id: a typed link, an update or any other engram
write to such a note first writes a real id into it (:mod:`engram.adopt`), after which
the id lives in the file and follows every rename.

A file that has an ``id:`` line but frontmatter that does not parse is an engram item
someone broke: that stays a :class:`~engram.errors.FormatError`, so ``doctor`` reports it.

Whose note it is. A file is engram's own item only when its frontmatter holds engram's
identity triple together — ``id``, ``title`` and ``createdAt``, each with a value engram
can use — as every file engram creates does (:data:`ITEM_KEYS`). Any other note is a
person's: one with no id (indexed under a derived id), a Dendron note (``id``,
``title``, ``desc`` and epoch-millisecond ``created``/``updated``), a note ``engram
adopt`` gave an id line. Engram writes into a person's note only when its owner asks (an
update, ``engram adopt``); counters, reinforcement and derived links are kept beside it
(:func:`persons_note` is the one test every such writer asks). A value read from another
tool's key (``created`` → createdAt) never counts: it fills the item in memory only.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from engram.errors import BinaryFile, FileTooLarge, FormatError
from engram.store.model import (
    ENGRAM_KINDS,
    STATUSES,
    VERIFICATION_STATUSES,
    VISIBILITIES,
    Engram,
    is_valid_id,
)
from mergedriver import codec
from mergedriver.yamlio import load_raw

#: engram's identity triple: a note whose frontmatter holds all three is engram's own
#: item; any other is a person's (see the module docstring).
ITEM_KEYS = frozenset({"id", "title", "createdAt"})
#: Prefix of derived ids (a note that carries no id of its own).
DERIVED_PREFIX = "note-"
#: Where an item's id comes from: its own frontmatter, or its path.
FILE, DERIVED = "file", "derived"

_KEY_TYPES = dict(codec.ENGRAM_KEYS)
_CHOICES: Mapping[str, tuple[str, ...]] = {
    "kind": ENGRAM_KINDS,
    "status": STATUSES,
    "visibility": VISIBILITIES,
    "verificationStatus": VERIFICATION_STATUSES,
}
_ID_LINE = re.compile(r"(?m)^id[ \t]*:")
#: A file that opens like an engram item: the ``---`` fence, then an ``id:`` line.
_UNCLOSED_ITEM = re.compile(r"---[ \t]*\r?\nid[ \t]*:")
_MAX_TITLE = 300


@dataclass(frozen=True, slots=True)
class Note:
    """One Markdown file read as an item, and how its values were found."""

    item: Engram
    derived: str  # the "## Synapses (derived)" lines, if any
    identity: str  # FILE or DERIVED
    #: The frontmatter as YAML gave it (empty when absent or not YAML): properties such
    #: as ``categories: ["[[Trips]]"]`` hold links too.
    properties: Mapping[str, Any]
    #: Engram keys whose values engram cannot use; kept as the person's properties.
    clashes: tuple[str, ...] = ()
    #: Why the frontmatter was not read (it is not YAML), or None.
    front_error: str | None = None

    @property
    def adopted(self) -> bool:
        """Whether the note carries an id of its own (it may still be a person's)."""
        return self.identity == FILE

    @property
    def by_person(self) -> bool:
        """Whether the note is a person's rather than engram's own item."""
        return self.item.by_person


def derived_id(rel: str) -> str:
    """The id of a note that carries none: a pure function of its vault-relative path."""
    key = unicodedata.normalize("NFC", rel)
    return DERIVED_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


_DERIVED_ID = re.compile(r"note-[0-9a-f]{16}")


def is_derived_id(value: str) -> bool:
    """Whether ``value`` has the shape of a derived id (whatever path it came from)."""
    return _DERIVED_ID.fullmatch(value) is not None


def unadopted(item: Engram) -> bool:
    """Whether ``item`` is a note whose id is derived from its path (none in its file):
    a person's note they have not adopted. Writing anything into it first needs an id in
    it (:meth:`engram.items.state.VaultState.claim`)."""
    return item.path is not None and item.id == derived_id(item.path)


def persons_note(item: Engram) -> bool:
    """Whether ``item`` is a person's note rather than engram's own item: its file lacks
    engram's identity triple (:data:`ITEM_KEYS`), an id of its own or not. Engram never
    writes into such a note unasked: its counters and reinforcement go beside it
    (:mod:`engram.items.sidecar`), its typed links show on their other ends only."""
    return item.by_person or unadopted(item)


def engram_owned(meta: Mapping[str, Any]) -> bool:
    """Whether frontmatter ``meta`` (engram's keys as the note's own frontmatter gives
    them, nothing read from other tools' keys) holds engram's identity triple."""
    return meta.keys() >= ITEM_KEYS


def note_name(rel: str) -> str:
    """The name Obsidian shows for a note: its file name without ``.md``."""
    name = PurePosixPath(rel).name
    return name[:-3] if name.lower().endswith(".md") else name


def split_note(text: str) -> tuple[str | None, str]:
    """(frontmatter text or None, body) the way Obsidian splits a note: frontmatter is a
    ``---`` first line and a closing ``---`` line; anything else is all body."""
    try:
        return codec.split_frontmatter(text)
    except codec.CodecError:
        return None, text.replace("\r\n", "\n")


def body_offset(data: bytes) -> int:
    """How many lines of a note's file come before its body (the frontmatter with its
    fences; 0 without frontmatter): line ``n`` of an item's ``content`` is line
    ``n + body_offset`` of the file, as an editor numbers it. (Content that a derived
    section interrupts — a person's text below engram's links — shifts further below it.)"""
    try:
        text = codec.decode(data).replace("\r\n", "\n")
    except codec.CodecError:
        return 0
    front, body = split_note(text)
    return 0 if front is None else text[: len(text) - len(body)].count("\n")


def format_error(relpath: str, exc: codec.CodecError) -> FormatError:
    """The engram error for a codec refusal."""
    if isinstance(exc, codec.TooLarge):
        return FileTooLarge(relpath, str(exc))
    if isinstance(exc, codec.BinaryData):
        return BinaryFile(relpath, str(exc))
    return FormatError(relpath, str(exc))


@dataclass(frozen=True, slots=True)
class NoteMeta:
    """A note read up to the canonical frontmatter mapping its item is built from: a
    :class:`Note` but for the item. The index takes an item's row from the mapping
    (:meth:`Engram.meta_of`), so a cold index builds no item."""

    meta: dict[str, Any]  # what Engram.from_meta takes
    content: str
    derived: str
    identity: str
    properties: Mapping[str, Any]
    clashes: tuple[str, ...] = ()
    front_error: str | None = None
    by_person: bool = True  # a person's note, not engram's own item (see the module docstring)


def read_note(data: bytes, rel: str, rendered_from: Mapping[str, Any] | None = None) -> Note:
    """:func:`read_note_meta`, and the item built from it."""
    parts = read_note_meta(data, rel, rendered_from)
    try:
        item = Engram.from_meta(parts.meta, parts.content, path=rel, by_person=parts.by_person)
    except (TypeError, ValueError) as exc:  # a value that slipped through the checks
        raise FormatError(rel, str(exc)) from exc
    return Note(item, parts.derived, parts.identity, parts.properties, parts.clashes, parts.front_error)


def read_note_meta(data: bytes, rel: str, rendered_from: Mapping[str, Any] | None = None) -> NoteMeta:
    """Any Markdown file → a :class:`NoteMeta`. Raises FormatError only for a file that is
    not UTF-8 text or over the codec's size limits (:class:`~engram.errors.BinaryFile`,
    :class:`~engram.errors.FileTooLarge`), or an engram item (it has an ``id:`` line) whose
    YAML is broken.

    ``rendered_from`` is for a writer that has just rendered ``data`` itself from a
    canonical frontmatter mapping (:func:`mergedriver.codec.render_engram`): that mapping
    stands in for parsing the frontmatter back, the one costly step, and everything else
    is read as from any file. The codec's round trip (parse of render is the normalised
    mapping) makes the two the same; ``tests/index/test_rows_laws.py`` holds the index
    rows of both equal."""
    try:
        codec.check_size(len(data), codec.MAX_ITEM_BYTES)
        text = codec.decode(data)
    except codec.CodecError as exc:
        raise format_error(rel, exc) from exc
    front, body = split_note(text)
    if front is None and _UNCLOSED_ITEM.match(text):
        # engram's writer puts ``id:`` right under the opening fence: this is an item
        # whose write stopped before the frontmatter closed, not a plain note to adopt.
        raise FormatError(rel, "its frontmatter starts like an engram item's (--- then id:) but never closes "
                          "(a write that stopped half-way?); finish it with a '---' line after the "
                          "frontmatter, or restore it with `git checkout -- FILE`")
    raw: Any = {}
    front_error: str | None = None
    if front is not None and front.strip():
        try:
            codec.check_size(len(front), codec.MAX_FRONTMATTER_BYTES, "the frontmatter", "characters")
        except codec.CodecError as exc:
            raise format_error(rel, exc) from exc
        try:
            raw = dict(rendered_from) if rendered_from is not None else load_raw(front)
        except codec.CodecError as exc:
            if _ID_LINE.search(front):
                raise FormatError(rel, str(exc)) from exc
            raw, front_error = _template_properties(front), str(exc)
        if not isinstance(raw, dict):
            if _ID_LINE.search(front):
                raise FormatError(rel, "frontmatter must be a YAML mapping of keys to values")
            raw, front_error = {}, "frontmatter is not a mapping of keys to values"
    content, derived = codec.split_derived(body)
    meta, clashes = _engram_meta(raw)
    identity = FILE if "id" in meta else DERIVED
    by_person = not engram_owned(meta)  # before other tools' keys fill engram's fields
    if identity == DERIVED:
        meta["id"] = derived_id(rel)
    _fill_from_other_tools(meta, raw)
    if "title" not in meta:
        meta["title"] = note_name(rel)[:_MAX_TITLE] or "untitled"
    meta.setdefault("kind", "note")
    if "domainTags" not in meta:
        folder = PurePosixPath(rel).parent.as_posix()
        parts = [p for p in folder.split("/") if p and p != "."]
        if parts and parts[0] == "private":
            parts = parts[1:]
            meta.setdefault("visibility", "private")
        meta["domainTags"] = parts
    return NoteMeta(meta, content, derived, identity, raw, tuple(clashes), front_error, by_person)


_PLACEHOLDER = re.compile(r"^(\s*(?:-[ \t]+|[^\s#:][^:#]*:[ \t]+))(\{\{[^{}\n]*\}\})[ \t]*$", re.MULTILINE)


def _template_properties(front: str) -> dict[str, Any]:
    """The properties of a template whose frontmatter is YAML but for unquoted
    ``{{date}}``-style placeholders (read as the text they are), else nothing."""
    if "{{" not in front:
        return {}
    quoted = _PLACEHOLDER.sub(lambda m: m.group(1) + "'" + m.group(2).replace("'", "''") + "'", front)
    try:
        raw = load_raw(quoted)
    except codec.CodecError:
        return {}
    return raw if isinstance(raw, dict) else {}


def _engram_meta(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Canonical engram meta from any frontmatter: the strict reader when it accepts the
    whole mapping, else key by key, setting aside the values that do not fit."""
    if raw.get("id") is not None and isinstance(raw.get("id"), str) and is_valid_id(raw["id"]):
        try:
            meta = codec.normalize_engram_meta(raw)
        except codec.CodecError:
            pass
        else:
            if _fits_vocabulary(meta) and _usable_title(meta.get("title", "x")):
                return meta, []
    meta = {}
    clashes: list[str] = []
    for key, value in raw.items():
        key = str(key)
        kind = _KEY_TYPES.get(key)
        if kind is None:
            meta[key] = codec.normalize_unknown(value)
            continue
        if value is None:
            continue
        try:
            normal = codec.normalize_value(key, kind, value)
        except codec.CodecError:
            normal = None
        if normal is None or not _fits(key, normal):
            clashes.append(key)
            continue
        meta[key] = normal
    return meta, clashes


def _fits(key: str, value: Any) -> bool:
    if key == "id":
        return isinstance(value, str) and is_valid_id(value)
    if key == "title":
        return _usable_title(value)
    if key in _CHOICES:
        return value in _CHOICES[key]
    if key == "domainTags":
        return all(t and "/" not in t and "\\" not in t and not t.startswith(".") for t in value)
    return True


def _fits_vocabulary(meta: Mapping[str, Any]) -> bool:
    return all(key not in meta or meta[key] in choices for key, choices in _CHOICES.items())


def _usable_title(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and "\n" not in value and len(value) <= _MAX_TITLE


def _fill_from_other_tools(meta: dict[str, Any], raw: Mapping[str, Any]) -> None:
    """Fields other tools keep under their own names, mapped in memory only."""
    desc = raw.get("desc")
    if "summary" not in meta and isinstance(desc, str) and desc.strip():
        meta["summary"] = desc.strip()
    for field, names in (("createdAt", ("created",)), ("updatedAt", ("updated", "modified"))):
        if field in meta:
            continue
        for name in names:
            stamp = _instant(raw.get(name))
            if stamp is not None:
                meta[field] = stamp
                break


def _instant(value: Any) -> str | None:
    """A date, an ISO instant, or epoch milliseconds (Dendron) as a canonical instant."""
    if isinstance(value, bool) or value is None:
        return None
    number: float | None = None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = float(value.strip())
    if number is not None:
        if not 1e11 <= number <= 1e14:  # epoch milliseconds between 1973 and 5138
            return None
        return codec.format_time(datetime.fromtimestamp(number / 1000, UTC))
    try:
        return codec.format_time(value)
    except codec.CodecError:
        return None
