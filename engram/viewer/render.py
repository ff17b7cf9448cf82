"""Turning values into HTML: the Jinja environment and Markdown, both escaping by default.

- Templates (``templates/``) are rendered by Jinja2 with autoescaping on for every
  template, so a title like ``<script>alert(1)</script>`` is text, wherever it appears.
  Nothing is marked safe except the output of :func:`markdown`.
- :func:`markdown` renders Markdown with :mod:`engram.viewer.markup` (raw HTML **off**, no
  ``javascript:`` links, Obsidian's syntax) when no note is at hand: the derived
  ``[[path|Title · kind]]`` lines become links to ``/go?ref=…``, which opens the item
  they name (by path, id or title, as everywhere in engram). An item's own body is
  rendered with its links resolved by :mod:`engram.viewer.notes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup

from engram.store.model import instant
from engram.viewer.markup import render


def markdown(text: str) -> Markup:
    """Markdown as HTML with no vault at hand (see :mod:`engram.viewer.markup`): raw HTML
    in it is escaped, comments are hidden, wikilinks open items through ``/go``."""
    return Markup(render(text))  # noqa: S704 - markdown-it escapes; raw HTML is off


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
