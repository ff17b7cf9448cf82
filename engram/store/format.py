"""Typed reading and writing of engram and synapse files.

A thin layer over :mod:`mergedriver.codec`, the one canonical reader and writer: it turns
codec mappings into :class:`~engram.model.Engram` / :class:`~engram.model.Synapse`
values and codec errors into :class:`~engram.errors.FormatError` carrying the path (a
:class:`~engram.errors.FileTooLarge` or :class:`~engram.errors.BinaryFile` where the codec
says so). Files are read only through :func:`engram.store.fsio.read_regular`, bounded by
the codec's limits, and written only through :func:`engram.store.fsio.atomic_write`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engram.errors import BinaryFile, FileTooLarge, FormatError
from engram.store.fsio import atomic_write, read_regular
from engram.store.model import Engram, Synapse
from mergedriver import codec


def read_bytes(path: Path, relpath: str, limit: int = codec.MAX_ITEM_BYTES) -> bytes:
    """A vault file's bytes (see :func:`read_regular`); FileNotFoundError when it is gone."""
    return read_regular(path, relpath, limit)[1]


def format_error(relpath: str, exc: codec.CodecError) -> FormatError:
    """The engram error for a codec refusal."""
    if isinstance(exc, codec.TooLarge):
        return FileTooLarge(relpath, str(exc))
    if isinstance(exc, codec.BinaryData):
        return BinaryFile(relpath, str(exc))
    return FormatError(relpath, str(exc))


def parse_engram(data: bytes, relpath: str) -> tuple[Engram, str]:
    """Bytes → (engram, derived section text). Raises FormatError."""
    try:
        meta, content, derived = codec.parse_engram(data)
    except codec.CodecError as exc:
        raise format_error(relpath, exc) from exc
    return Engram.from_meta(meta, content, path=relpath), derived


def render_engram(item: Engram, derived_lines: Iterable[str] = ()) -> bytes:
    """Engram → canonical bytes (content plus the given derived section)."""
    try:
        return codec.render_engram(item.to_meta(), item.content, derived_lines)
    except codec.CodecError as exc:
        raise FormatError(item.path or item.id, str(exc)) from exc


def read_engram(path: Path, relpath: str) -> tuple[Engram, str]:
    return parse_engram(read_bytes(path, relpath), relpath)


def write_engram(path: Path, item: Engram, derived_lines: Iterable[str] = ()) -> bool:
    return atomic_write(path, render_engram(item, derived_lines))


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


_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)
_STAMP = re.compile(r"^(contentHash|contentSize):[^\n]*$", re.MULTILINE)
_LINK = re.compile(r"^- [→←] \[\[.*\]\]\s*$")


def restamp(data: bytes, derived_lines: Sequence[str] | None = None, *, hashes: bool = True) -> bytes:
    """The engram file ``data`` with its derived parts brought up to date, and every
    other byte as it was: ``contentHash``/``contentSize`` recomputed from the content
    (unless ``hashes`` is False), and (when ``derived_lines`` is given) the ``## Synapses
    (derived)`` section replaced.

    Key order, quoting, comments and body whitespace a person wrote stay untouched; only
    when the stamps are not plain one-line keys is the frontmatter written canonically.
    Raises CodecError when ``data`` is not an engram file.
    """
    meta, content, derived = codec.parse_engram(data)
    lines = derived.split("\n") if derived else []
    if derived_lines is not None:
        lines = list(derived_lines)
    if not hashes:
        if "\n".join(lines) == derived:
            return data
        if "contentHash" not in meta or "contentSize" not in meta:
            return codec.render_engram(meta, content, lines)
    want = {
        "contentHash": codec.content_hash(content) if hashes else meta["contentHash"],
        "contentSize": len(content.encode("utf-8")) if hashes else meta["contentSize"],
    }
    stamps = {key: str(value) for key, value in want.items()}
    canonical = codec.render_engram({**meta, **want}, content, lines)
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    text = data[len(bom):].decode("utf-8")
    close = _FENCE.search(text, 4) if text.startswith("---\n") and "\r" not in text else None
    if close is None:
        return canonical
    front, body = text[: close.start()], text[close.end() + 1 :] if close.end() < len(text) else ""
    if hashes:
        found = {m.group(1) for m in _STAMP.finditer(front)}
        if found != set(stamps) or front.count("\ncontentHash:") != 1 or front.count("\ncontentSize:") != 1:
            return canonical
        front = _STAMP.sub(lambda m: f"{m.group(1)}: {stamps[m.group(1)]}", front)
    if "\n".join(lines) != derived:
        body = _splice_derived(body, lines)
    out = bom + (front + text[close.start() : close.end() + 1] + body).encode("utf-8")
    try:  # the splice must mean exactly what the canonical writer would have written
        again = codec.parse_engram(out)
    except codec.CodecError:
        return canonical
    if again[1:] != (content, "\n".join(lines)) or again[0] != codec.parse_engram(canonical)[0]:
        return canonical
    return out


def _splice_derived(body: str, lines: Sequence[str]) -> str:
    """``body`` with its derived section replaced by ``lines`` (added at the end when
    it had none, removed when ``lines`` is empty)."""
    rows = body.split("\n")
    section = [codec.DERIVED_HEADING, *lines] if lines else []
    for i, row in enumerate(rows):
        if row.strip() == codec.DERIVED_HEADING:
            j = i + 1
            while j < len(rows) and (_LINK.match(rows[j]) or not rows[j].strip()):
                j += 1
            after = rows[j:]
            head = rows[:i]
            if not section:
                while head and not head[-1].strip():
                    head.pop()
                if any(row.strip() for row in after):
                    return "\n".join([*head, "", *after])
                return "\n".join(head) + "\n" if head else ""
            tail = ["", *after] if after else [""]
            return "\n".join(head + section + tail)
    if not section:
        return body
    stem = body.rstrip("\n")
    return (stem + "\n\n" if stem else "") + "\n".join(section) + "\n"


def parse_proposal(data: bytes, relpath: str) -> dict[str, Any]:
    """Proposal bytes → canonical mapping. Raises FormatError."""
    try:
        return codec.parse_proposal(data)
    except codec.CodecError as exc:
        raise FormatError(relpath, str(exc)) from exc


def read_proposal(path: Path, relpath: str) -> dict[str, Any]:
    return parse_proposal(read_bytes(path, relpath), relpath)


def write_proposal(path: Path, data: Mapping[str, Any]) -> bool:
    """Write a proposal through the canonical writer (atomic; no-op when unchanged)."""
    try:
        payload = codec.render_proposal(data)
    except codec.CodecError as exc:
        raise FormatError(str(data.get("id", path.name)), str(exc)) from exc
    return atomic_write(path, payload)
