"""Typed reading and writing of engram and synapse files.

A thin layer over :mod:`mergedriver.codec`, the one canonical reader and writer: it turns
codec mappings into :class:`~engram.model.Engram` / :class:`~engram.model.Synapse`
values and codec errors into :class:`~engram.errors.FormatError` carrying the path (a
:class:`~engram.errors.FileTooLarge` or :class:`~engram.errors.BinaryFile` where the codec
says so). Files are read only through :func:`engram.store.fsio.read_regular`, bounded by
the codec's limits, and written only through :func:`engram.store.fsio.atomic_write`.

Items are read through :func:`engram.store.notes.read_note`, so a person's note reads
like an engram item. Writing chooses between two writers: a file engram wrote (its bytes
are the canonical rendering of what it says) is rewritten canonically; any other note —
a person's Obsidian note, a Dendron note, one ``engram adopt`` gave an id — is edited in
place by :mod:`engram.store.surgical`, which changes only the keys whose values changed
(and the body only when the content or derived section did), keeping every other byte.

Which writer runs is a matter of bytes; whose note it is (engram's own item, or a
person's: :func:`engram.store.notes.persons_note`) is decided by the callers, which
never write counters or derived links into a person's note.

A note a person wrote and has not adopted (no ``id`` in its file: it is indexed under a
derived id) is never rewritten here under that derived id: the writer raises
:class:`~engram.errors.NotAdopted`, whoever called it. Only a write that gives the note
an id of its own edits it — its owner's request, through
:meth:`engram.items.state.VaultState.claim` (the id line and nothing else); what other
writes record about such a note is kept beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import FormatError, NotAdopted
from engram.store.fsio import atomic_write, read_regular
from engram.store.model import Engram, Synapse
from engram.store.notes import ITEM_KEYS, Note, format_error, is_derived_id, read_note
from engram.store.surgical import edit_frontmatter
from mergedriver import codec


def read_bytes(path: Path, relpath: str, limit: int = codec.MAX_ITEM_BYTES) -> bytes:
    """A vault file's bytes (see :func:`read_regular`); FileNotFoundError when it is gone."""
    return read_regular(path, relpath, limit)[1]


def parse_engram(data: bytes, relpath: str) -> tuple[Engram, str]:
    """Bytes of any note → (engram, derived section text). Raises FormatError."""
    note = read_note(data, relpath)
    return note.item, note.derived


def render_engram(item: Engram, derived_lines: Iterable[str] = ()) -> bytes:
    """Engram → canonical bytes (content plus the given derived section)."""
    try:
        return codec.render_engram(_meta(item), item.content, derived_lines)
    except codec.CodecError as exc:
        raise FormatError(item.path or item.id, str(exc)) from exc


#: The instants an item file may leave out: a person's item with an id and no
#: ``createdAt`` reads as ``created_at == ""`` (unrecorded). That is not a timestamp, so
#: it is left out again when the file is rewritten, never written as ``''`` (which made
#: every later write of such a file fail, and the clone holding it unable to sync).
_INSTANTS = frozenset(key for key, kind in codec.ENGRAM_KEYS if kind == codec.TIME)


def _meta(item: Engram) -> dict[str, Any]:
    """``item.to_meta()`` without the instants nobody recorded."""
    return {k: v for k, v in item.to_meta().items() if not (v == "" and k in _INSTANTS)}


def read_engram(path: Path, relpath: str) -> tuple[Engram, str]:
    return parse_engram(read_bytes(path, relpath), relpath)


@dataclass(frozen=True, slots=True)
class Written:
    """What :func:`write_note` wrote: the note a reader of the file now finds (so the
    index need not read back the file just written) and the size of the bytes."""

    #: None when the bytes do not read back as an item (the index then reads the file).
    note: Note | None
    size: int  # of the bytes written


def write_engram(
    path: Path, item: Engram, derived_lines: Iterable[str] = (), previous: Path | None = None
) -> bool:
    """Write ``item`` at ``path`` (moved from ``previous`` when given); True if the bytes
    changed. Raises FormatError when a person's note cannot be edited in place, NotAdopted
    when it is one its owner has not adopted."""
    return _write(path, item, list(derived_lines), previous)[0]


def write_note(
    path: Path, rel: str, item: Engram, derived_lines: Iterable[str] = (), previous: Path | None = None
) -> Written:
    """:func:`write_engram`, also returning the :class:`Note` of the bytes written (read
    from them in memory as ``read_note`` would read the file at ``rel``)."""
    _, data, meta = _write(path, item, list(derived_lines), previous)
    return Written(_note_of(data, rel, meta), len(data))


def _write(
    path: Path, item: Engram, lines: list[str], previous: Path | None
) -> tuple[bool, bytes, dict[str, Any] | None]:
    """(changed, the bytes written, the canonical mapping they were rendered from or None
    for a person's note edited in place)."""
    try:
        old = (previous or path).read_bytes()
    except FileNotFoundError:
        old = b""
    except OSError:
        old = b""
    if old and not is_canonical(old):
        data = _write_into(old, item, lines)
        return atomic_write(path, data), data, None
    try:
        meta = codec.normalize_engram_meta(_meta(item))
        data = codec.render_normalized(meta, item.content, lines)
    except codec.CodecError as exc:
        raise FormatError(item.path or item.id, str(exc)) from exc
    return atomic_write(path, data), data, meta


def _note_of(data: bytes, rel: str, meta: Mapping[str, Any] | None = None) -> Note | None:
    try:
        return read_note(data, rel, rendered_from=meta)
    except FormatError:
        return None


def is_canonical(data: bytes) -> bool:
    """Whether ``data`` is an engram file exactly as engram's canonical writer makes it."""
    try:
        meta, content, derived = codec.parse_engram(data)
        if not meta.keys() >= ITEM_KEYS:  # a person's note, even one that renders the same bytes
            return False
        return codec.render_engram(meta, content, derived.split("\n") if derived else []) == data
    except codec.CodecError:
        return False


def _write_into(old: bytes, item: Engram, lines: list[str]) -> bytes:
    rel = item.path or "note.md"
    note = read_note(old, rel)
    if not note.adopted and is_derived_id(item.id):
        raise NotAdopted(rel)  # only a write that gives the note an id of its own may edit it
    before, after = note.item.to_meta(), item.to_meta()
    changes = {k: v for k, v in after.items() if before.get(k, _ABSENT) != v}
    removals = [k for k in before if k not in after and k in note.properties]
    body = None
    if note.item.content != item.content or note.derived != "\n".join(lines):
        body = codec.join_body(item.content, lines)
    try:
        return edit_frontmatter(old, changes, removals, body)
    except codec.CodecError as exc:
        raise FormatError(rel, f"cannot be updated in place: {exc}") from exc


_ABSENT = object()


def parse_synapse(data: bytes, relpath: str) -> Synapse:
    try:
        return Synapse.from_meta(codec.parse_synapse(data))
    except codec.CodecError as exc:
        raise format_error(relpath, exc) from exc


def render_synapse(synapse: Synapse) -> bytes:
    try:
        return codec.render_synapse(synapse.to_meta())
    except codec.CodecError as exc:
        raise FormatError(synapse.path, str(exc)) from exc


def read_synapse(path: Path, relpath: str) -> Synapse:
    return parse_synapse(read_bytes(path, relpath, codec.MAX_SYNAPSE_BYTES), relpath)


def write_synapse(path: Path, synapse: Synapse) -> bool:
    return atomic_write(path, render_synapse(synapse))


def parse_proposal(data: bytes, relpath: str) -> dict[str, Any]:
    """Proposal bytes → canonical mapping. Raises FormatError."""
    try:
        return codec.parse_proposal(data)
    except codec.CodecError as exc:
        raise format_error(relpath, exc) from exc


def read_proposal(path: Path, relpath: str) -> dict[str, Any]:
    # Bounded like a synapse file, as the codec parses it: a larger one is refused unread.
    return parse_proposal(read_bytes(path, relpath, codec.MAX_SYNAPSE_BYTES), relpath)


def write_proposal(path: Path, data: Mapping[str, Any]) -> bool:
    """Write a proposal through the canonical writer (atomic; no-op when unchanged)."""
    try:
        payload = codec.render_proposal(data)
    except codec.CodecError as exc:
        raise FormatError(str(data.get("id", path.name)), str(exc)) from exc
    return atomic_write(path, payload)
