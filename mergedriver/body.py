"""Merging an engram's body: the content line by line, and the derived link section.

Content. A three-way line merge (:func:`mergedriver.lines.diff3`). Lines only one side
changed are taken; the same change on both sides is taken once; two different insertions
at the same place are both kept, the earlier side's first (no conflict: nothing was
overwritten). Where both sides changed the same base lines differently, both versions are
kept inside a conflict callout that Obsidian renders::

    > [!conflict] Merge conflict: both sides changed these lines. Keep what is right, delete this block, then run `engram conflicts --resolve <id>`.
    > **alice · 2026-06-21T10:30:00.000Z**
    > the first version of the lines
    >
    > **bob · 2026-06-21T11:00:00.000Z**
    > the second version of the lines

Each version is labelled with its side's ``updatedBy`` and ``updatedAt``, and the two are
listed in the document's canonical side order (earlier edit first; see
:func:`mergedriver.fields.tie_winner`), never ours first, so both machines write the same
bytes. Every line either side added is in the result (inside a callout it is prefixed
with ``> ``).

Derived section. The ``## Synapses (derived)`` wikilinks are regenerated from synapse files
by ``engram``; the driver sees one file and cannot read the synapses, so it merges the two
sides' link lines as a set (a link either side added is kept, one either side removed is
dropped) — which mirrors what the same merge does to the synapse files — and sorts them
as ``engram.derived`` does. ``engram sync`` regenerates the section from the merged
synapses afterwards; the content hash never covers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mergedriver.fields import merge_sets
from mergedriver.lines import (
    BOTH,
    CONFLICT,
    INSERT,
    OURS,
    SAME,
    THEIRS,
    common_base,
    diff3,
    union_insert,
)

__all__ = ["CALLOUT", "merge_content", "merge_derived"]

#: The first line of every conflict block (how the doctor and the listing find them).
CALLOUT = "> [!conflict]"
_HEADER = (
    CALLOUT + " Merge conflict: both sides changed these lines. Keep what is right, delete "
    "this block, then run `engram conflicts --resolve {ref}`."
)
_DERIVED = re.compile(r"^- ([→←]) \[\[(.*?)\|(.*) · ([^·]*)\]\]$")


def _lines(text: str) -> list[str]:
    # Content is canonical (LF, one final newline); splitlines() would also split on
    # form feeds and Unicode separators, which are ordinary characters here.
    return text[:-1].split("\n") if text else []


def _quote(lines: Sequence[str]) -> list[str]:
    return [f"> {line}" if line else ">" for line in lines]


def _callout(ref: str, first: tuple[str, Sequence[str]], second: tuple[str, Sequence[str]]) -> list[str]:
    out = [_HEADER.format(ref=ref)]
    for n, (label, lines) in enumerate((first, second)):
        if n:
            out.append(">")
        out.append(f"> **{label}**")
        out.extend(_quote(lines) if lines else ["> *(deleted these lines)*"])
    return out


def merge_content(
    base: str | None,
    ours: str,
    theirs: str,
    *,
    ours_first: bool,
    ours_label: str,
    theirs_label: str,
    ref: str,
) -> tuple[str, int]:
    """Merge canonical content; return (merged content, number of conflict blocks kept).

    ``ours_first`` puts ours first in insertions and conflict blocks (the caller derives
    it from the documents, not from the roles); ``ref`` names the item in the callout.
    """
    if ours == theirs or theirs == base:
        return ours, 0
    if ours == base:
        return theirs, 0
    o, t = _lines(ours), _lines(theirs)
    b = _lines(base) if base is not None else common_base(o, t)
    out: list[str] = []
    conflicts = 0
    blank_needed = False
    for chunk in diff3(b, o, t):
        if chunk.kind in (SAME, OURS, THEIRS, BOTH):
            piece = list(chunk.resolved)
        elif chunk.kind == INSERT:
            first, second = (chunk.ours, chunk.theirs) if ours_first else (chunk.theirs, chunk.ours)
            piece = union_insert(first, second)
        else:
            assert chunk.kind == CONFLICT
            conflicts += 1
            sides = ((ours_label, chunk.ours), (theirs_label, chunk.theirs))
            first_side, second_side = sides if ours_first else sides[::-1]
            if out and out[-1]:
                out.append("")  # a callout must not continue the paragraph above it
            out.extend(_callout(ref, first_side, second_side))
            blank_needed = True
            continue
        if blank_needed and piece and piece[0]:
            out.append("")  # nor swallow the paragraph below it (lazy continuation)
        blank_needed = blank_needed and not piece
        out.extend(piece)
    return ("\n".join(out) + "\n" if out else ""), conflicts


def _derived_key(line: str) -> tuple[int, str, str, str, str]:
    match = _DERIVED.match(line)
    if match is None:
        return (2, "", "", "", line)
    arrow, target, title, kind = match.groups()
    # engram.derived sorts by (direction, kind, title, path); the path ends in ".md".
    return (0 if arrow == "→" else 1, kind, title, target + ".md", line)


def merge_derived(base: str | None, ours: str, theirs: str) -> list[str]:
    """The derived link lines of the merge: a three-way set merge, in engram's order."""
    b, o, t = ([] if not text else text.split("\n") for text in (base, ours, theirs))
    if o == t or t == b:
        return o
    if o == b:
        return t
    merged = merge_sets(b if base is not None else None, o, t)
    return sorted(merged if isinstance(merged, list) else [], key=_derived_key)
