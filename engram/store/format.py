"""Typed reading and writing of engram and synapse files.

A thin layer over :mod:`mergedriver.codec`, the one canonical reader and writer: it turns
codec mappings into :class:`~engram.model.Engram` / :class:`~engram.model.Synapse`
values and codec errors into :class:`~engram.errors.FormatError` carrying the path (a
:class:`~engram.errors.FileTooLarge` or :class:`~engram.errors.BinaryFile` where the codec
says so). Files are read only through :func:`engram.store.fsio.read_regular`, bounded by
the codec's limits, and written only through :func:`engram.store.fsio.atomic_write`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    if not isinstance(meta.get("title"), str):  # found by fuzzing: an id without a title
        raise FormatError(relpath, "frontmatter has no 'title'")
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
