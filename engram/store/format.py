"""Typed reading and writing of engram and synapse files.

A thin layer over :mod:`mergedriver.codec`, the one canonical reader and writer: it turns
codec mappings into :class:`~engram.model.Engram` / :class:`~engram.model.Synapse`
values and codec errors into :class:`~engram.errors.FormatError` carrying the path. Files
are written only through :func:`engram.fsio.atomic_write`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from engram.errors import FormatError, StorageError
from engram.store.fsio import atomic_write
from engram.store.model import Engram, Synapse
from mergedriver import codec


def read_bytes(path: Path, relpath: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise
    except IsADirectoryError as exc:
        raise FormatError(relpath, "is a folder, not a file") from exc
    except OSError as exc:
        raise StorageError(f"cannot read {relpath}: {exc.strerror}.", hint="Check permissions.") from exc


def parse_engram(data: bytes, relpath: str) -> tuple[Engram, str]:
    """Bytes → (engram, derived section text). Raises FormatError."""
    try:
        meta, content, derived = codec.parse_engram(data)
    except codec.CodecError as exc:
        raise FormatError(relpath, str(exc)) from exc
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
        raise FormatError(relpath, str(exc)) from exc


def render_synapse(synapse: Synapse) -> bytes:
    try:
        return codec.render_synapse(synapse.to_meta())
    except codec.CodecError as exc:
        raise FormatError(synapse.path, str(exc)) from exc


def read_synapse(path: Path, relpath: str) -> Synapse:
    return parse_synapse(read_bytes(path, relpath), relpath)


def write_synapse(path: Path, synapse: Synapse) -> bool:
    return atomic_write(path, render_synapse(synapse))
