"""Turning values into HTML: the Jinja environment and Markdown, both escaping by default.

- Templates (``templates/``) are rendered by Jinja2 with autoescaping on for every
  template, so a title like ``<script>alert(1)</script>`` is text, wherever it appears.
  Nothing is marked safe except the output of :func:`markdown`.
- :func:`markdown` renders an item body with markdown-it-py in CommonMark mode plus
  tables and strikethrough, with raw HTML **off** (a ``<script>`` in a body is shown as
  text) and markdown-it's own link check (no ``javascript:``/``vbscript:``/``data:`` links).
  Obsidian wikilinks — the derived ``[[path|Title · kind]]`` lines and a person's own
  ``[[Note]]`` — become links to ``/go?ref=…``, which opens the item they name (by path,
  id or title, as everywhere in engram).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import jinja2
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markupsafe import Markup

from engram.store.model import instant


def _wikilink(state: StateInline, silent: bool) -> bool:
    src, start = state.src, state.pos
    if not src.startswith("[[", start):
        return False
    end = src.find("]]", start + 2)
    if end < 0 or "\n" in src[start:end]:
        return False
    inner = src[start + 2 : end]
    target, _, label = inner.partition("|")
    target = target.strip()
    if not target:
        return False
    if not silent:
        opening = state.push("link_open", "a", 1)
        opening.attrs = {"href": "/go?" + urlencode({"ref": target}), "class": "wikilink"}
        text = state.push("text", "", 0)
        text.content = (label or target).strip()
        state.push("link_close", "a", -1)
    state.pos = end + 2
    return True


def _markdown_engine() -> MarkdownIt:
    engine = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    engine.enable(["table", "strikethrough"])
    engine.inline.ruler.before("link", "wikilink", _wikilink)
    return engine


_ENGINE = _markdown_engine()


def markdown(text: str) -> Markup:
    """An item body as HTML; raw HTML in it is escaped, wikilinks open items."""
    return Markup(_ENGINE.render(text))  # noqa: S704 - markdown-it escapes; raw HTML is off


def when(stamp: str | None) -> str:
    """A timestamp as ``2026-06-21 10:30 UTC`` (``—`` when missing)."""
    if not stamp:
        return "—"
    try:
        return instant(stamp).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return stamp


def ago(stamp: str | None, now: datetime | None = None) -> str:
    """A timestamp as ``3 min ago`` / ``2 days ago``."""
    if not stamp:
        return "never"
    try:
        seconds = ((now or datetime.now(UTC)) - instant(stamp)).total_seconds()
    except ValueError:
        return stamp
    for size, unit in ((86_400, "day"), (3_600, "hour"), (60, "min")):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 and unit != 'min' else ''} ago"
    return "just now"


def query(base: Mapping[str, Any], **changes: Any) -> str:
    """``?a=1&b=2``: the current query with ``changes`` applied (None drops a key)."""
    merged: dict[str, Any] = {**base, **changes}
    pairs: list[tuple[str, str]] = []
    for key, value in merged.items():
        if value is None or value == "" or value == []:
            continue
        for one in value if isinstance(value, list | tuple) else [value]:
            pairs.append((key, str(one)))
    return "?" + urlencode(pairs) if pairs else "?"


def environment() -> jinja2.Environment:
    """The template environment: templates from the package, autoescape on for all."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("engram.viewer", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(markdown=markdown, when=when, ago=ago)
    env.globals.update(query=query)
    return env
