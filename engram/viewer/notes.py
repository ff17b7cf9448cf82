"""A note as its author sees it in Obsidian: links resolved, embeds drawn, properties apart.

:class:`NoteResolver` answers :mod:`engram.viewer.markup`'s questions about one note from
the index's resolution of its wikilinks (``Vault.wikilinks``), so a link opens the note
Obsidian would open (``/item/ID#h-heading``), a link to a note not written yet is dim,
and an embed is drawn:

- a note (``![[Note]]``, ``![[Note#Heading]]``, ``![[Note#^block]]``) as its rendered
  body, or that section or block, in a box titled with a link to it. Embeds nest up to
  :data:`MAX_EMBED_DEPTH` deep and :data:`MAX_EMBEDS` per page, and a note already being
  embedded is not embedded again, so a cycle (A embeds B embeds A) ends at once;
- an image (``![[photo.png|300]]``) as ``<img>`` served by ``/attachment`` when the file is
  in the vault (:func:`engram.items.attachments.attachment` finds it and refuses anything
  outside the vault), else a "missing image" note;
- anything else (a ``.base``, ``.canvas`` or PDF) as a named placeholder.

All HTML built here passes every value from a note through :func:`markupsafe.escape`
(text and attributes alike); addresses are built with ``urlencode``/``quote``.

:func:`link_lists` gives the links and backlinks an item page lists, and
:func:`property_rows` the person's properties with their wikilinks as links.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlencode

from markupsafe import Markup, escape

from engram.errors import EngramError
from engram.index.linktable import LinkRow
from engram.index.wikilinks import path_key
from engram.items.attachments import is_image
from engram.items.links import WikiLinks
from engram.vault import Vault
from engram.viewer.markup import WikiLink, go_href, parse_wikilink, render, section
from engram.viewer.markup import block as block_of

MAX_EMBED_DEPTH = 3
MAX_EMBEDS = 40
#: The most backlinks and links a page lists (a hub note has thousands); it says how
#: many more there are.
BACKLINKS_SHOWN = 300
LINKS_SHOWN = 500
_SIZE = re.compile(r"^(\d{1,4})(?:x(\d{1,4}))?$")
_IN_TEXT = re.compile(r"\[\[([^\[\]\n]+?)\]\]")


@dataclass
class _Budget:
    left: int = MAX_EMBEDS


def item_href(item_id: str, anchor: str = "") -> str:
    return f"/item/{quote(item_id, safe='')}{anchor}"


def attachment_href(name: str, source: str) -> str:
    return "/attachment?" + urlencode({"name": name, "from": source})


@dataclass
class NoteResolver:
    """Answers for one note's links and embeds (see the module docstring)."""

    vault: Vault
    item_id: str
    rows: Sequence[LinkRow]
    depth: int = 0
    stack: tuple[str, ...] = ()
    budget: _Budget = field(default_factory=_Budget)
    anchors: bool = field(init=False, default=True)  # ids on headings: the page's own note only

    def __post_init__(self) -> None:
        self.anchors = self.depth == 0
        self._rows: dict[str, LinkRow] = {}
        for row in self.rows:  # a link in the body wins over one in a property
            key = path_key(row.text)
            if key not in self._rows or self._rows[key].in_property:
                self._rows[key] = row

    def _row(self, target: str) -> LinkRow | None:
        return self._rows.get(path_key(target.replace("\\", "").strip()))

    # ------------------------------------------------------------------ links

    def link(self, link: WikiLink) -> tuple[str | None, str]:
        if not link.target:
            return link.anchor or "#", "wikilink"
        row = self._row(link.target)
        if row is None:
            return go_href(link), "wikilink"
        if row.status == "ok" and row.target_id:
            return item_href(row.target_id, link.anchor), "wikilink"
        if row.status == "file":
            if is_image(link.target):
                return attachment_href(link.target, self.item_id), "wikilink file"
            return None, "wikilink file"
        return go_href(link), f"wikilink {row.status}"

    def image(self, src: str) -> str | None:
        name = unquote(src)
        try:
            self.vault.find_attachment(name, self.item_id)
        except EngramError:
            return None
        return attachment_href(name, self.item_id)

    # ------------------------------------------------------------------ embeds

    def embed(self, link: WikiLink, block: bool) -> str:
        name = link.target
        if name and is_image(name):
            return self._image(link)
        row = self._row(name) if name else None
        target = self.item_id if not name else (row.target_id if row and row.status == "ok" else None)
        if target is None:
            if row is not None and row.status == "file":
                return _box("span", "embed file", f"embedded file {name}: not shown here", None)
            what = "ambiguous: more than one note has this name" if row and row.status == "ambiguous" else "not written yet"
            return _box("span", "embed missing", f"{link.label}: {what}", go_href(link))
        href = item_href(target, link.anchor)
        if not block:
            return f'<a href="{escape(href)}" class="wikilink embed-link">↪ {escape(link.label or name)}</a>'
        if target in self.stack and not (link.heading or link.block):
            return _box("div", "embed cut", f"↻ {link.label} is embedded above it: not repeated", href)
        if self.depth + 1 > MAX_EMBED_DEPTH:
            return _box("div", "embed cut", f"{link.label}: embeds nest {MAX_EMBED_DEPTH} deep at most; open it", href)
        if self.budget.left <= 0:
            return _box("div", "embed cut", f"{link.label}: {MAX_EMBEDS} embeds on one page at most; open it", href)
        self.budget.left -= 1
        try:
            content = self.vault.get(target).content
            rows: Sequence[LinkRow] = self.rows if target == self.item_id else self.vault.wikilinks(target, limit=0).outgoing
        except EngramError as exc:
            return _box("div", "embed missing", f"{link.label}: {exc.message}", href)
        part = content
        if link.heading:
            part = section(content, link.heading) or ""
        elif link.block:
            part = block_of(content, link.block) or ""
        if not part.strip() and (link.heading or link.block):
            return _box("div", "embed missing", f"{link.label}: no such heading or block in the note", href)
        child = NoteResolver(self.vault, target, rows, self.depth + 1, (*self.stack, target), self.budget)
        title = f'<p class="embed-title"><a href="{escape(href)}">{escape(link.label or name)}</a></p>'
        return f'<div class="embed">{title}\n{render(part, child)}</div>\n'

    def _image(self, link: WikiLink) -> str:
        try:
            self.vault.find_attachment(link.target, self.item_id)
        except EngramError as exc:
            return _box("span", "embed missing", f"missing image {link.target}: {exc.message}", None)
        size = _SIZE.match(link.alias or "")
        dims = ""
        if size:
            dims = f' width="{size.group(1)}"' + (f' height="{size.group(2)}"' if size.group(2) else "")
        alt = link.alias if link.alias and not size else link.target
        src = attachment_href(link.target, self.item_id)
        return f'<img src="{escape(src)}" alt="{escape(alt)}" class="embed-image" loading="lazy"{dims}>'


def _box(tag: str, classes: str, text: str, href: str | None) -> str:
    inner = f'<a href="{escape(href)}">{escape(text)}</a>' if href else str(escape(text))
    return f'<{tag} class="{escape(classes)}">{inner}</{tag}>'


def body_html(vault: Vault, item_id: str, content: str, links: WikiLinks) -> Markup:
    """An item's body as HTML, its links resolved and embeds drawn (see the module docstring)."""
    resolver = NoteResolver(vault, item_id, links.outgoing, stack=(item_id,))
    return Markup(render(content, resolver))  # noqa: S704 - markdown-it and _box escape


# ------------------------------------------------------------------ link lists


@dataclass(frozen=True, slots=True)
class LinkView:
    """One line of an item page's link lists."""

    text: str  # the target as written (the linking note's path, for a backlink)
    id: str | None  # the note at the other end
    title: str | None
    status: str  # ok | missing | ambiguous | file
    choices: tuple[str, ...] = ()
    embed: bool = False
    in_property: bool = False


@dataclass(frozen=True, slots=True)
class LinkLists:
    outgoing: tuple[LinkView, ...]  # notes reached first (one line each), then the others
    backlinks: tuple[LinkView, ...]  # one line per note that links here (the first BACKLINKS_SHOWN or so)
    backlinks_total: int  # how many notes link here in all

    @property
    def resolved(self) -> int:
        return sum(1 for v in self.outgoing if v.status == "ok")

    @property
    def shown(self) -> tuple[LinkView, ...]:
        return self.outgoing[:LINKS_SHOWN]


def link_lists(vault: Vault, item_id: str, links: WikiLinks) -> LinkLists:
    """The wikilinks an item page lists: what the note links (each note once), and the
    notes that link to it (those ``links`` holds: read them with ``limit=BACKLINKS_SHOWN``)."""
    reached: dict[str, LinkView] = {}
    other: dict[tuple[str, str], LinkView] = {}
    for row in links.outgoing:
        if row.status == "ok" and row.target_id:
            seen = reached.get(row.target_id)
            if seen is None:
                reached[row.target_id] = LinkView(row.text, row.target_id, None, "ok", (), row.embed, row.in_property)
            else:  # embedded if any link embeds it; "in a property" only if every one is
                text = seen.text if not seen.in_property or row.in_property else row.text
                reached[row.target_id] = LinkView(text, row.target_id, None, "ok", (), seen.embed or row.embed,
                                                  seen.in_property and row.in_property)
        else:
            other.setdefault((row.status, path_key(row.text)), LinkView(
                row.text, None, None, row.status, row.choices, row.embed, row.in_property))
    back: dict[str, LinkView] = {}
    for row in links.incoming:
        back.setdefault(row.source_id, LinkView(row.source_path, row.source_id, None, "ok", (), row.embed, row.in_property))
    titles = vault.titles([*reached, *back])
    def titled(views: Iterable[LinkView]) -> list[LinkView]:
        out = [LinkView(v.text, v.id, titles.get(v.id or "", v.text), v.status, v.choices, v.embed, v.in_property)
               for v in views]
        return sorted(out, key=lambda v: (v.title or "").casefold())
    order = {"ambiguous": 0, "missing": 1, "file": 2}
    rest = sorted(other.values(), key=lambda v: (order.get(v.status, 3), v.text.casefold()))
    return LinkLists(tuple(titled(reached.values()) + rest), tuple(titled(back.values())),
                     max(links.incoming_notes, len(back)))


# ------------------------------------------------------------------ properties


def value_html(value: Any, resolver: NoteResolver | None = None) -> Markup:
    """A property's value as a person reads it: lists as comma-separated values,
    wikilinks as links, nothing written as a muted "empty" (never ``[null]``)."""
    if isinstance(value, (list, tuple)):
        parts = [value_html(v, resolver) for v in value if v is not None and v != ""]
        return Markup(", ").join(parts) if parts else Markup('<span class="muted">empty</span>')
    if value is None or value == "":
        return Markup('<span class="muted">empty</span>')
    if isinstance(value, dict):
        return Markup("<code>{}</code>").format(json.dumps(value, ensure_ascii=False, default=str))
    text = str(value)
    if resolver is None or "[[" not in text:
        return escape(text)
    out: list[str] = []
    pos = 0
    for match in _IN_TEXT.finditer(text):
        out.append(str(escape(text[pos : match.start()])))
        link = parse_wikilink(match.group(1))
        href, classes = resolver.link(link)
        label = escape(link.label)
        cls = escape(classes)
        out.append(f'<a href="{escape(href)}" class="{cls}">{label}</a>' if href else f'<span class="{cls}">{label}</span>')
        pos = match.end()
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))  # noqa: S704 - every part escaped above


def property_rows(pairs: Iterable[tuple[str, Any]], resolver: NoteResolver | None = None,
                  *, skip_empty: bool = False) -> list[tuple[str, Markup]]:
    """(key, value as HTML) for a table; ``skip_empty`` leaves out values that say
    nothing (engram's fields the file does not hold and that have no value)."""
    return [
        (key, value_html(value, resolver)) for key, value in pairs
        if not (skip_empty and (value is None or value == "" or value == [] or value == ()))
    ]
