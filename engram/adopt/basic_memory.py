"""A basic-memory project (basicmachines-co/basic-memory): Markdown notes with
observations and relations.

The project folder is read as a Markdown folder (:mod:`.markdown`: paths, titles,
properties, bodies as written — observations ``- [category] text #tag (context)`` stay in
the body, where basic-memory keeps them too). On top of that:

- a note's key is its ``permalink`` (basic-memory's stable identifier), else its path;
- each explicit relation line — a list item ``- relation_type [[Target]] (context)``,
  the type quoted when it has spaces — becomes an edge to the note whose title or
  permalink is ``Target``, its kind mapped by :mod:`.relations` (the original type and
  context kept as evidence). Wikilinks in prose stay links in the body, as basic-memory
  treats them (``links_to``), and are not turned into typed edges.

The format is the one basic-memory's parser reads (``markdown/plugins.py``:
``parse_relation_type``, ``_parse_explicit_relation``; ``docs/NOTE-FORMAT.md``).
"""

from __future__ import annotations

import re
from pathlib import Path

from engram.adopt.batch import Batch, Link
from engram.adopt.markdown import read_folder
from engram.adopt.relations import kind_for

# `- type [[Target]]`, `- "multi word" [[Target]] (context)`; a prose tail disqualifies it.
_RELATION = re.compile(
    r"^\s*[-*]\s+(?P<type>\"[^\"]+\"|'[^']+'|[^\s\[\]\"']+)\s+\[\[(?P<target>[^\]|#]+)(?:[#|][^\]]*)?\]\]"
    r"\s*(?:\((?P<context>[^()]*)\))?\s*$"
)


def relations(body: str) -> list[Link]:
    """The explicit relations of a note, as links by target title or permalink."""
    out: list[Link] = []
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else _RELATION.match(line)
        if match is None:
            continue
        relation = match["type"].strip("\"'")
        kind, exact = kind_for(relation)
        why = None if exact else f"basic-memory relation: {relation}"
        if match["context"]:
            why = f"{why}; {match['context'].strip()}" if why else match["context"].strip()
        out.append(Link(kind, match["target"].strip(), why))
    return out


def read_project(
    folder: Path, *, default_domain: tuple[str, ...] = (), rename: bool = False, skip: Path | None = None
) -> Batch:
    """A batch of every note of the basic-memory project in ``folder``."""
    return read_folder(
        folder, importer="basic-memory", namespace="basic-memory", default_domain=default_domain,
        rename=rename, skip=skip, links=relations, key_property="permalink",
    )
