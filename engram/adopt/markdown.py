"""A folder of Markdown notes — an Obsidian vault or plain files — read as a batch.

Each ``*.md`` file below the folder is one note (hidden folders such as ``.obsidian/``,
``.git/`` and ``.trash/`` are not walked; other files are counted as passed over). The
folder is only read.

- **Where it goes.** The note keeps its path relative to the folder — folders and file
  name, case, spaces and emoji as they are — under the ``--domain`` prefix if one is
  given, so the wikilinks people typed (``[[Alice Smith]]``, ``[[People/Alice Smith]]``)
  resolve in the vault exactly as they did in the source. ``rename=True`` gives engram's
  own paths instead (``<domain>/<slug>.md``). The domain tags follow the folders.
- **Title.** The ``title`` property, else the file name without ``.md``.
- **Body.** Everything after the frontmatter, as written; links stay in it.
- **Properties.** A property that is an engram field with a value engram accepts
  (``tags``, ``summary``, ``kind``, ``status: draft`` …) sets that field. One whose value
  engram cannot take as that field (``status: "[[Published]]"``) is kept, value and all,
  under ``<namespace>.<name>`` (``obsidian.status``) instead of refusing the note; engram
  bookkeeping keys (``version``, ``createdAt`` …) likewise. Every other property is kept
  under its own name. An ``id`` that is a valid item id is kept as the item's id.
- **Key.** The note's relative path: a second import of the same folder skips it.

Frontmatter that is not YAML (a template's ``created: {{date}}``) is kept word for word
under ``<namespace>.frontmatter``. A file that is not UTF-8 text is a bad record.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from engram.adopt.batch import Batch, Link, SourceRecord
from engram.errors import InvalidInput
from engram.store import rules
from engram.store.model import is_valid_id
from engram.store.paths import MAX_DOMAIN_DEPTH, domain_segment
from mergedriver import codec

#: Engram fields a note's properties may set (property name → create() argument).
SETTABLE = {
    "title": "title", "tags": "tags", "summary": "summary", "kind": "kind",
    "importance": "importance", "confidence": "confidence", "status": "status",
    "visibility": "visibility", "sourceType": "source_type",
}
_ENGRAM_KEYS = {key for key, _ in codec.ENGRAM_KEYS}
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})

#: A reader of one note's extra structure (basic-memory's relations): body → links.
LinkReader = Callable[[str], list[Link]]


def notes(folder: Path, skip: Path | None = None) -> Iterator[tuple[str, Path]]:
    """``(relative POSIX path, file)`` of every file below ``folder``, sorted, hidden
    folders and ``skip`` (the vault itself, when it lives inside the source) left out."""
    skip_resolved = skip.resolve() if skip is not None else None
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d not in SKIP_DIRS and (here / d).resolve() != skip_resolved
        )
        for name in sorted(filenames):
            if not name.startswith("."):
                path = here / name
                yield path.relative_to(folder).as_posix(), path


def read_folder(
    folder: Path,
    *,
    importer: str,
    namespace: str,
    default_domain: tuple[str, ...] = (),
    rename: bool = False,
    skip: Path | None = None,
    links: LinkReader | None = None,
    key_property: str | None = None,
) -> Batch:
    """A batch of every note below ``folder`` (see the module docstring)."""
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder.", hint="Pass the folder of the notes.")
    records: list[SourceRecord] = []
    passed: list[str] = []
    for rel, path in notes(folder, skip):
        if not rel.endswith(".md"):
            passed.append(rel)
            continue
        records.append(
            _note(rel, path, namespace=namespace, prefix=default_domain, rename=rename,
                  links=links, key_property=key_property)
        )
    return Batch(importer, folder.resolve().name, tuple(records), passed_over=tuple(passed), unit="note")


def _note(
    rel: str,
    path: Path,
    *,
    namespace: str,
    prefix: tuple[str, ...],
    rename: bool,
    links: LinkReader | None,
    key_property: str | None,
) -> SourceRecord:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        return SourceRecord(rel, rel, problem="is not UTF-8 text (save it as UTF-8 and import again)")
    except OSError as exc:
        return SourceRecord(rel, rel, problem=f"cannot be read ({exc.strerror})")
    try:
        props, body = split(text)
        fields, extra = properties(props, namespace)
    except codec.CodecError:
        # Not YAML (a template's `created: {{date}}`): the note still comes in, and the
        # frontmatter is kept word for word rather than lost or guessed at.
        front, body = codec.split_frontmatter(text)
        props, fields, extra = {}, {}, {f"{namespace}.frontmatter": front}
    folders = rel.split("/")[:-1]
    fields.setdefault("title", Path(rel).stem.strip() or "untitled")
    fields["content"] = body
    fields["domain"] = _domain(prefix, folders)
    fields.setdefault("source_type", "imported")
    fields["extra"] = extra
    if not rename:
        fields["path"] = "/".join([*prefix, rel]) if prefix else rel
    raw_id = props.get("id")
    if isinstance(raw_id, str) and is_valid_id(raw_id):
        fields["preserve"] = {"id": raw_id}
    key = rel
    if key_property and isinstance(props.get(key_property), str) and props[key_property].strip():
        key = props[key_property].strip()
    return SourceRecord(key, rel, fields, tuple(links(body)) if links else (), body_line=_lines_before(text, body))


def _lines_before(text: str, body: str) -> int:
    """How many of the file's lines come before its body (the frontmatter and its fences)."""
    normal = text.replace("\r\n", "\n")  # as the frontmatter was split
    return normal[: len(normal) - len(body)].count("\n") if normal.endswith(body) else 0


def split(text: str) -> tuple[dict[str, Any], str]:
    """(properties, body) of a note; a note without frontmatter has no properties."""
    if not text.startswith("---"):
        return {}, text
    try:
        front, body = codec.split_frontmatter(text)
    except codec.CodecError:
        return {}, text  # a lone '---' (a rule) is body, as Obsidian reads it
    data = codec.load_yaml(front) if front.strip() else {}
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise codec.CodecError("it is not a mapping of names to values")
    return data, body


def properties(props: Mapping[str, Any], namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(create() fields, extra keys) from a note's properties; nothing is refused."""
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in props.items():
        if key in SETTABLE and value is not None:
            try:
                fields[SETTABLE[key]] = rules.normalize_changes({key: value})[SETTABLE[key]]
                continue
            except InvalidInput:
                pass  # kept under the namespaced name below
        if key in _ENGRAM_KEYS or key in SETTABLE:
            if key != "id" or not (isinstance(value, str) and is_valid_id(value)):
                extra[f"{namespace}.{key}"] = value
            continue
        extra[key] = value
    return fields, extra


def _domain(prefix: tuple[str, ...], folders: list[str]) -> tuple[str, ...]:
    """Domain tags from the prefix and the folders; a folder that cannot be a tag
    (no letters or digits) ends the domain there — the path still says where it is."""
    out = list(prefix)
    for folder in folders:
        try:
            domain_segment(folder)
        except InvalidInput:
            break
        out.append(folder)
    return tuple(out[:MAX_DOMAIN_DEPTH])
