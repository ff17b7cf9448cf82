"""The ``## Synapses (derived)`` section: wikilinks regenerated from synapse files.

Obsidian draws its graph from wikilinks, so each item with edges carries one line per
edge: ``- → [[path/of/target|Target title · kind]]`` for an edge it starts (and for
both ends of a symmetric edge), ``- ← [[path/of/source|Source title · kind]]`` for an
edge that ends at it. Links use the vault-relative path without ``.md`` so they resolve
even when two items share a file name.

The section is derived data: excluded from ``contentHash``, never merged (regenerated
after a merge), and rebuilt on every synapse write. Lines are sorted so the same edges
always give the same bytes. A shared item never links to a private one: a private
neighbour's title must not leak into a committed file. A person's note
(:func:`engram.store.notes.persons_note`: any note without engram's identity triple, an
id of its own or not) gets no section: its typed links are shown on the other end only
(and in the index).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.store.model import SYMMETRIC_KINDS, Engram
from engram.store.notes import persons_note

if TYPE_CHECKING:
    from engram.index.catalog import Index


def _label(text: str) -> str:
    # "|" and brackets would end the wikilink early.
    return text.replace("|", "-").replace("[", "(").replace("]", ")").replace("\n", " ")


def link_line(arrow: str, path: str, title: str, kind: str) -> str:
    target = path[:-3] if path.endswith(".md") else path
    return f"- {arrow} [[{_label(target)}|{_label(title)} · {kind}]]"


def lines_for(index: Index, item: Engram) -> list[str]:
    """The derived lines for ``item`` from the synapses and neighbours in the index (none
    for a person's note: it is never written into)."""
    if persons_note(item):
        return []
    rows = index.query(
        "SELECT s.source, s.target, s.kind, i.path, i.title, i.visibility"
        " FROM synapses s JOIN items i"
        "   ON i.id = CASE WHEN s.source = ? THEN s.target ELSE s.source END"
        " WHERE (s.source = ? OR s.target = ?) AND s.source != s.target",
        (item.id, item.id, item.id),
    )
    private_item = item.visibility == "private"
    seen: set[tuple[str, str, str, str]] = set()
    entries: list[tuple[int, str, str, str, str]] = []
    for row in rows:
        if not private_item and row["visibility"] == "private":
            continue
        outgoing = row["source"] == item.id or row["kind"] in SYMMETRIC_KINDS
        arrow = "→" if outgoing else "←"
        key = (arrow, row["kind"], row["path"], row["title"])
        if key in seen:
            continue
        seen.add(key)
        entries.append((0 if outgoing else 1, row["kind"], row["title"], row["path"], arrow))
    entries.sort()
    return [link_line(arrow, path, title, kind) for _, kind, title, path, arrow in entries]
