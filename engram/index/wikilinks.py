"""Wikilinks people type: finding them in a note and resolving them the way Obsidian does.

Extraction (:func:`extract`). ``[[Note]]``, ``[[Note|alias]]``, ``[[folder/Note]]``,
``[[Note#Heading]]``, ``[[Note#^block]]`` and embeds ``![[Note]]`` in a body; a ``|``
escaped as ``\\|`` (inside a table) still separates the alias. Links inside fenced code
blocks, inline code, ``%% comments %%`` and HTML comments are not links, as in Obsidian.
A link that matches no note and names a file type Obsidian opens as an attachment
(``![[photo.png]]``, a ``.canvas`` or ``.base`` file) is an attachment (status
``file``): neither an edge nor an unresolved link. ``[[pod.builtin.json]]`` still
reaches the note ``pod.builtin.json.md`` when there is one, as in Obsidian. Properties hold links too
(``categories: ["[[Trips]]"]``); :func:`property_links` finds them in any string value.

Resolution (:func:`resolve`), given the notes whose file name matches the link's last
path segment (case-insensitively, NFC-normalised, ``.md`` optional):

1. the exact vault-relative path (``[[Notes/Trip]]`` → ``Notes/Trip.md``);
2. the path relative to the linking note's folder (``[[./Trip]]``, ``[[../x/Trip]]``,
   ``[[sub/Trip]]`` from ``Notes/`` → ``Notes/sub/Trip.md``);
3. the unique note whose path ends with the link (``[[Trip]]`` anywhere in the vault).

Two or more notes that fit step 3 make the link *ambiguous*: it is reported, never
guessed. No note at all makes it *missing* (a note not written yet, which Obsidian shows
as a dim link). Every candidate of a link has the link's last segment as its file name,
so a link's answer changes only when a note of that name appears, goes or changes; the
index re-resolves exactly those links (see :mod:`engram.index.catalog`).

Links are derived data: the index stores them (table ``links``), recall follows the
resolved ones as edges of kind ``links_to``, and nothing is ever written to a file.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The edge kind recall and ``synapses`` give a resolved wikilink.
LINK_KIND = "links_to"
#: The weight of a wikilink edge (a typed synapse carries its own).
LINK_WEIGHT = 0.5

OK, MISSING, AMBIGUOUS, FILE = "ok", "missing", "ambiguous", "file"

#: Extensions Obsidian opens as attachments rather than notes.
ATTACHMENT_EXTENSIONS = frozenset(
    ["png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "tif", "tiff", "heic", "ico", "mp3", "wav", "m4a", "ogg", "flac", "3gp", "webm", "mp4", "ogv", "mov", "mkv", "avi", "pdf", "canvas", "base", "excalidraw", "zip", "csv", "json", "txt"]
)

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Link:
    """One wikilink as written: its target text (no heading, no alias), and where."""

    text: str
    embed: bool = False
    in_property: bool = False

    @property
    def key(self) -> str:
        """The file name a target must have: the last segment, folded, ``.md`` dropped."""
        return name_key(self.text.rsplit("/", 1)[-1])


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note a link may point at."""

    path: str
    id: str

    @property
    def path_key(self) -> str:
        return path_key(self.path)


@dataclass(frozen=True, slots=True)
class Resolution:
    status: str  # OK, MISSING or AMBIGUOUS
    target: Candidate | None = None
    choices: tuple[str, ...] = ()  # the paths an ambiguous link could mean


def fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _drop_md(text: str) -> str:
    return text[:-3] if text.lower().endswith(".md") else text


def name_key(name: str) -> str:
    """How a note's file name (or a link's last segment) is compared."""
    return fold(_drop_md(name.strip()))


def path_key(path: str) -> str:
    """How a vault-relative note path is compared."""
    return fold(_drop_md(path))


def is_attachment(text: str) -> bool:
    name = text.rsplit("/", 1)[-1]
    _, dot, ext = name.rpartition(".")
    return bool(dot) and ext.lower() in ATTACHMENT_EXTENSIONS


def _targets(inner: str) -> str:
    target = re.split(r"\\?\|", inner, maxsplit=1)[0]
    target = target.split("#", 1)[0]
    return target.replace("\\", "").strip()


def _outside_code(text: str) -> Iterator[str]:
    """The paragraphs of a Markdown body that hold ``[[``, without code or comments.
    (Each step runs only when its marker occurs: this runs for every note of a cold
    index.)"""
    if "%%" in text or "<!--" in text:
        text = _COMMENT.sub(" ", text)
    if "```" in text or "~~~" in text:
        fence: str | None = None
        kept: list[str] = []
        for line in text.split("\n"):
            match = _FENCE.match(line) if ("`" in line or "~" in line) else None
            if fence is not None:
                # A closing fence is the same character, at least as long, and nothing else.
                if (
                    match
                    and match.group(1)[0] == fence[0]
                    and len(match.group(1)) >= len(fence)
                    and not line[match.end():].strip()
                ):
                    fence = None
                continue
            if match:
                fence = match.group(1)
                continue
            kept.append(line)
        text = "\n".join(kept)
    # Inline code never crosses a blank line (a paragraph break), so a stray backtick
    # cannot hide the links of the paragraphs after it.
    for paragraph in re.split(r"\n[ \t]*\n", text) if "`" in text else (text,):
        if "[[" in paragraph:
            yield _INLINE_CODE.sub(" ", paragraph) if "`" in paragraph else paragraph


def _links_in(text: str, in_property: bool) -> Iterator[Link]:
    for match in _WIKILINK.finditer(text):
        target = _targets(match.group(2))
        if target:
            yield Link(target, bool(match.group(1)), in_property)


def extract(body: str) -> list[Link]:
    """The note links in a body, in order of appearance, each distinct link once."""
    if "[[" not in body:
        return []
    found: dict[Link, None] = {}
    for part in _outside_code(body):
        for link in _links_in(part, False):
            found.setdefault(link, None)
    return list(found)


def property_links(properties: Mapping[str, Any]) -> list[Link]:
    """The note links in frontmatter values (strings at any depth), each once."""
    found: dict[Link, None] = {}
    for value in _strings(properties.values()):
        for link in _links_in(value, True):
            found.setdefault(link, None)
    return list(found)


def _strings(values: Iterable[Any]) -> Iterator[str]:
    """The strings holding ``[[`` among ``values`` and inside them, depth first. Flat
    frontmatter (most of it: text and lists of text) is looked at without recursing,
    since every note of a cold index passes here."""
    for value in values:
        if isinstance(value, str):
            if "[[" in value:
                yield value
        elif isinstance(value, Mapping):
            yield from _strings(value.values())
        elif isinstance(value, (list, tuple)):
            yield from _strings(value)


def resolve(text: str, source_path: str, candidates: Sequence[Candidate]) -> Resolution:
    """Resolve one link's target text from the note at ``source_path`` among the notes
    whose file name matches it (see the module docstring for the order)."""
    target = path_key(text.strip().lstrip("/"))
    if not candidates or not target:
        return Resolution(FILE if is_attachment(text) else MISSING)
    for cand in candidates:
        if cand.path_key == target:
            return Resolution(OK, cand)
    folder = posixpath.dirname(path_key(source_path))
    relative = posixpath.normpath(posixpath.join(folder, target)) if folder or "/" in target else target
    if relative != target:
        for cand in candidates:
            if cand.path_key == relative:
                return Resolution(OK, cand)
    fits = [c for c in candidates if c.path_key.endswith("/" + target)]
    if len(fits) == 1:
        return Resolution(OK, fits[0])
    if len(fits) > 1:
        return Resolution(AMBIGUOUS, None, tuple(sorted(c.path for c in fits)))
    return Resolution(FILE if is_attachment(text) else MISSING)


def resolve_all(
    links: Iterable[tuple[str, str, str]], candidates_by_key: Mapping[str, Sequence[Candidate]]
) -> Iterator[Resolution]:
    """Resolve many ``(text, key, source_path)`` links against candidates grouped by key."""
    for text, key, source in links:
        yield resolve(text, source, candidates_by_key.get(key, ()))
