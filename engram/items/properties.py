"""An item's frontmatter split by whose it is: the person's properties and engram's fields.

An adopted Obsidian note says what its owner wrote (``categories``, ``aliases``, a
``status`` of ``"[[Published]]"``) and nothing else; engram reads it as an item by filling
its own fields in memory (an id from the path, the file name as title, kind ``note``, the
folder as domain, default importance; :mod:`engram.store.notes`). Shown as one mapping
the two blur: defaults look like values someone chose, and an empty ``aliases:`` item
reads ``[null]``. :func:`properties` keeps them apart:

- ``written``: the person's properties, in file order and as YAML gave them: every key
  of the frontmatter that is not an engram field, and engram keys whose values engram
  cannot use (a *clash*, kept as the person's) or that are empty;
- ``fields``: engram fields the file itself holds (for an engram item, all of them);
- ``derived``: engram fields the file does not hold, with the values engram uses.

One file read, no write: a view for people (the viewer), never an input to a writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram.items.state import VaultState
from engram.store.format import read_bytes
from engram.store.notes import read_note
from mergedriver import codec

_ENGRAM_KEYS = frozenset(key for key, _ in codec.ENGRAM_KEYS)


@dataclass(frozen=True, slots=True)
class Properties:
    """One item's frontmatter by owner (see the module docstring); pairs in order."""

    path: str
    written: tuple[tuple[str, Any], ...]
    fields: tuple[tuple[str, Any], ...]
    derived: tuple[tuple[str, Any], ...]
    identity: str  # "file": the id is in the frontmatter; "derived": from the path
    front_error: str | None  # why the frontmatter could not be read as YAML, or None


def properties(state: VaultState, ref: str) -> Properties:
    """The frontmatter of the item ``ref`` names, split into the person's properties,
    engram fields written in the file and engram fields derived in memory.

    Raises NotFound, InvalidInput (an ambiguous reference), FormatError (the file is
    broken).
    """
    state.ensure_fresh()
    rel = state.resolve(ref)
    note = read_note(read_bytes(state.abspath(rel), rel), rel)
    raw = note.properties
    # An engram key left empty (``status:``) is the person's too: engram does not use it.
    theirs = set(note.clashes) | {str(k) for k, v in raw.items() if v is None}
    written = tuple((str(k), v) for k, v in raw.items() if str(k) not in _ENGRAM_KEYS or str(k) in theirs)
    meta = note.item.to_meta()
    fields = tuple((k, meta[k]) for k in meta if k in raw and k in _ENGRAM_KEYS and k not in theirs)
    derived = tuple((k, v) for k, v in meta.items() if k in _ENGRAM_KEYS and (k not in raw or k in theirs))
    return Properties(rel, written, fields, derived, note.identity, note.front_error)
