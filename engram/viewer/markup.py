"""Markdown as Obsidian writes it, rendered safely: wikilinks, embeds, comments, anchors.

The engine is markdown-it-py in CommonMark mode plus tables and strikethrough, with raw
HTML **off** (a ``<script>`` in a body is text) and markdown-it's own link check (no
``javascript:``/``vbscript:``/``data:`` links). On top of it, Obsidian's syntax:

- ``[[Note]]``, ``[[folder/Note]]``, ``[[Note|alias]]``, ``[[Note#Heading]]``,
  ``[[Note#^block]]`` and ``[[#Heading]]`` become links. Where they go is a
  :class:`Resolver`'s answer (the viewer's resolves them with the index's answers, so a
  link opens the note Obsidian would open, scrolled to the heading or block); without
  one they go to ``/go?ref=…``, which opens the item the text names.
- ``![[…]]`` is an embed: the resolver renders it (a note's body, an image) as HTML it
  built with every value escaped. A paragraph that holds only embeds loses its ``<p>``,
  so an embedded note's blocks are not nested in a paragraph.
- ``%% comments %%`` are hidden, inline and across lines (as in Obsidian's reading view,
  an unclosed ``%%`` hides the rest), except inside code (:func:`hide_comments`).
- Headings get ids (``h-`` and the words of the heading, lower case, joined by ``-``;
  ``-2``, ``-3`` for repeats) and a block ending in ``^id`` gets ``block-id``, the anchors
  heading and block links scroll to. The prefixes keep them apart from the page's own ids.

Everything a note says reaches the page as text or as an attribute value markdown-it
escapes; the only HTML not made by markdown-it is a resolver's, which escapes what it
inserts (:mod:`engram.viewer.notes`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import escape

_ALIAS = re.compile(r"\\?\|")
_BLOCK_ID = re.compile(r"(?:^|[ \t])\^([A-Za-z0-9-]+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True, slots=True)
class WikiLink:
    """One ``[[…]]`` as written: the note it names ('' for this note), a heading or
    block in it, and the text to show instead."""

    target: str
    heading: str | None = None
    block: str | None = None
    alias: str | None = None

    @property
    def label(self) -> str:
        """What Obsidian shows: the alias, else ``Note > Heading`` / ``Note > ^block``."""
        if self.alias:
            return self.alias
        part = self.heading if self.heading is not None else (f"^{self.block}" if self.block else None)
        if part is None:
            return self.target
        return f"{self.target} > {part}" if self.target else part

    @property
    def anchor(self) -> str:
        """The fragment this link scrolls to ('' for none)."""
        if self.block:
            return "#" + block_anchor(self.block)
        if self.heading:
            return "#" + heading_anchor(self.heading)
        return ""


def parse_wikilink(inner: str) -> WikiLink:
    """The parts of the text between ``[[`` and ``]]`` (a ``\\|`` in a table still
    separates the alias; ``Note#A#B`` is heading B under A)."""
    target, *rest = _ALIAS.split(inner, maxsplit=1)
    alias = rest[0].strip() if rest else None
    target, _, section = target.partition("#")
    target = target.replace("\\", "").strip()
    section = section.strip()
    if section.startswith("^"):
        return WikiLink(target, None, section[1:].strip() or None, alias or None)
    heading = section.split("#")[-1].strip() if section else None
    return WikiLink(target, heading or None, None, alias or None)


def words(text: str) -> str:
    """A heading's words as its anchor says them: lower case, joined by ``-``."""
    return "-".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFC", text).casefold()))


def heading_anchor(heading: str) -> str:
    return "h-" + (words(heading) or "section")


def block_anchor(block: str) -> str:
    return "block-" + re.sub(r"[^A-Za-z0-9-]", "", block)


class Resolver(Protocol):
    """What rendering asks about the note being rendered (see :mod:`engram.viewer.notes`)."""

    anchors: bool  # set ids on headings and blocks (off inside an embed)

    def link(self, link: WikiLink) -> tuple[str | None, str]:
        """(href or None for no link, CSS classes) for a wikilink."""

    def embed(self, link: WikiLink, block: bool) -> str:
        """HTML for ``![[…]]``, every inserted value escaped; ``block`` when the embed
        stands in a paragraph of its own."""

    def image(self, src: str) -> str | None:
        """The address of a relative Markdown image (``![x](pics/a.png)``), or None."""


def go_href(link: WikiLink) -> str:
    """``/go`` for a link no resolver answered: the item the text names."""
    if not link.target:
        return link.anchor or "#"
    return "/go?" + urlencode({"ref": link.target}) + link.anchor


# ------------------------------------------------------------------ parts of a note

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def _lines_outside_code(lines: Sequence[str]) -> list[bool]:
    """For each line: is it outside a fenced code block?"""
    out: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE.match(line)
        if fence is not None:
            out.append(False)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(1)
            out.append(False)
            continue
        out.append(True)
    return out


def section(text: str, heading: str) -> str | None:
    """The part of ``text`` under ``heading`` (itself included) up to the next heading of
    the same or a higher level, or None when no heading has those words."""
    want = words(heading)
    lines = text.split("\n")
    prose = _lines_outside_code(lines)
    start = level = None
    for i, line in enumerate(lines):
        match = _HEADING.match(line) if prose[i] else None
        if match is None:
            continue
        if start is None:
            if words(match.group(2)) == want:
                start, level = i, len(match.group(1))
        elif level is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:i])
    return None if start is None else "\n".join(lines[start:])


def block(text: str, block_id: str) -> str | None:
    """The block ``^block_id`` marks (a list item, or the paragraph it ends; a marker on
    a line of its own names the block above it), or None."""
    marker = re.compile(r"(?:^|[ \t])\^" + re.escape(block_id) + r"[ \t]*$")
    lines = text.split("\n")
    prose = _lines_outside_code(lines)
    for i, line in enumerate(lines):
        if not prose[i] or not marker.search(line):
            continue
        end = i
        if not line.strip().removeprefix("^" + block_id).strip():  # the marker alone
            end = i - 1
            while end >= 0 and not lines[end].strip():
                end -= 1
            if end < 0:
                return None
        if _LIST_ITEM.match(lines[end]):
            return lines[end].lstrip()
        start = end
        while start > 0 and lines[start - 1].strip() and not _HEADING.match(lines[start - 1]):
            start -= 1
        return "\n".join(lines[start : end + 1])
    return None


# ------------------------------------------------------------------ comments


def hide_comments(text: str) -> str:
    """``text`` without Obsidian's ``%% comments %%`` (inline, across lines, or to the
    end when unclosed); code blocks and code spans keep theirs. A line wholly inside a
    comment goes; one where only the markers stood becomes blank, so the paragraphs on
    either side of a comment block stay two."""
    if "%%" not in text:
        return text
    out: list[str] = []
    fence: str | None = None
    inside = False
    for line in text.split("\n"):
        if fence is not None:
            out.append(line)
            match = _FENCE.match(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line[match.end():].strip():
                fence = None
            continue
        if not inside and (match := _FENCE.match(line)):
            fence = match.group(1)
            out.append(line)
            continue
        kept, touched, inside = _strip_line(line, inside)
        if not touched:
            out.append(line)
        elif kept.strip():
            out.append(kept)
        elif "%%" in line:
            out.append("")
    return "\n".join(out)


def _strip_line(line: str, inside: bool) -> tuple[str, bool, bool]:
    """(what is left of ``line``, whether a comment touched it, still inside after it)."""
    kept: list[str] = []
    touched = inside
    pos = 0
    while pos < len(line):
        if inside:
            end = line.find("%%", pos)
            if end < 0:
                return "".join(kept), True, True
            pos, inside = end + 2, False
            continue
        tick = line.find("`", pos)
        mark = line.find("%%", pos)
        if mark < 0:
            kept.append(line[pos:])
            break
        if 0 <= tick < mark:
            run = len(line[tick:]) - len(line[tick:].lstrip("`"))
            close = line.find("`" * run, tick + run)
            stop = close + run if close >= 0 else tick + run
            kept.append(line[pos:stop])
            pos = stop
            continue
        kept.append(line[pos:mark])
        pos, inside, touched = mark + 2, True, True
    return "".join(kept), touched, inside


# ------------------------------------------------------------------ the engine


def _wikilink(state: StateInline, silent: bool) -> bool:
    src, start = state.src, state.pos
    embed = src.startswith("![[", start)
    if not embed and not src.startswith("[[", start):
        return False
    opening = start + (3 if embed else 2)
    end = src.find("]]", opening)
    if end < 0 or "\n" in src[opening:end] or "[[" in src[opening:end]:
        return False
    link = parse_wikilink(src[opening:end])
    if not link.target and not link.heading and not link.block:
        return False
    if not silent:
        resolver: Resolver | None = state.env.get("resolver")
        if embed:
            token = state.push("obsidian_embed", "", 0)
            token.meta = {"link": link, "block": False}
        else:
            href, classes = resolver.link(link) if resolver is not None else (go_href(link), "wikilink")
            tag = "a" if href is not None else "span"
            token = state.push("wikilink_open", tag, 1)
            token.attrs = {"href": href, "class": classes} if href is not None else {"class": classes}
            text = state.push("text", "", 0)
            text.content = link.label
            state.push("wikilink_close", tag, -1)
    state.pos = end + 2
    return True


def _inline_text(inline: Token) -> str:
    return "".join(c.content for c in inline.children or () if c.type in ("text", "code_inline"))


def _obsidian_blocks(state: StateCore) -> None:
    """Heading anchors, block ids, embeds standing alone and relative images, once the
    inline content is parsed."""
    resolver: Resolver | None = state.env.get("resolver")
    anchors = resolver is None or resolver.anchors
    tokens = state.tokens
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token.type != "inline" or not token.children:
            continue
        children = token.children
        opener = tokens[i - 1] if i else None
        if opener is not None and opener.type == "heading_open" and anchors:
            anchor = heading_anchor(_inline_text(token))
            seen[anchor] = seen.get(anchor, 0) + 1
            opener.attrSet("id", anchor if seen[anchor] == 1 else f"{anchor}-{seen[anchor]}")
        last = children[-1]
        if last.type == "text" and (found := _BLOCK_ID.search(last.content)):
            last.content = last.content[: found.start()].rstrip()
            if anchors and opener is not None:
                owner = opener if not opener.hidden or i < 2 else tokens[i - 2]
                owner.attrSet("id", block_anchor(found.group(1)))
        embeds = [c for c in children if c.type == "obsidian_embed"]
        if embeds and opener is not None and opener.type == "paragraph_open" and all(
            c.type in ("obsidian_embed", "softbreak") or (c.type == "text" and not c.content.strip())
            for c in children
        ):
            opener.hidden = True
            tokens[i + 1].hidden = True
            for c in embeds:
                c.meta["block"] = True
        if resolver is not None:
            _relative_images(children, resolver)


def _relative_images(children: Sequence[Token], resolver: Resolver) -> None:
    for child in children:
        if child.type != "image":
            continue
        src = str(child.attrGet("src") or "")
        if not src or src.startswith(("/", "#")) or _SCHEME.match(src):
            continue
        found = resolver.image(src)
        if found is None:
            child.type, child.tag, child.attrs, child.children = "text", "", {}, None
            child.content = f"[missing image: {src}]"
        else:
            child.attrSet("src", found)


def _render_embed(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    meta: dict[str, Any] = tokens[idx].meta
    link: WikiLink = meta["link"]
    resolver: Resolver | None = env.get("resolver")
    if resolver is None:
        href = go_href(link)
        return f'<a href="{_text(href)}" class="wikilink embed-link">{_text(link.label)}</a>'
    return resolver.embed(link, bool(meta["block"]))


def _text(value: str) -> str:
    return str(escape(value))


def engine() -> MarkdownIt:
    """A markdown-it with raw HTML off and Obsidian's syntax (see the module docstring)."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "wikilink", _wikilink)
    md.core.ruler.push("obsidian_blocks", _obsidian_blocks)
    md.add_render_rule("obsidian_embed", _render_embed)
    return md


ENGINE = engine()


def render(text: str, resolver: Resolver | None = None) -> str:
    """``text`` (Markdown as a person or an agent wrote it) as HTML, comments hidden."""
    env: dict[str, Any] = {"resolver": resolver} if resolver is not None else {}
    html: str = ENGINE.render(hide_comments(text), env)
    return html
