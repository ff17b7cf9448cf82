"""diff3: a three-way merge of line sequences, in pure Python.

The merge driver may import only the standard library and PyYAML, so the body merge
cannot call out to a diff library. This module cuts three versions of a text (base,
ours, theirs) into chunks the way GNU diff3 does (Khanna, Kunal and Pierce, "A Formal
Investigation of Diff3", 2007):

1. The base is aligned with each side independently (``difflib.SequenceMatcher`` with
   ``autojunk`` off, so frequent lines such as blank lines still align).
2. A walk over the three sequences emits *stable* chunks, where a run of base lines is
   aligned with both sides at the current positions, and *unstable* chunks, which end at
   the next base line aligned with both sides.
3. Each unstable chunk is classified: only one side changed it, both made the same
   change, both inserted different lines at the same place, or both changed the same
   base lines differently (a conflict).

Policy (which side comes first, how a conflict is shown) is the caller's; this module
only classifies. Invariants, relied on by the merge laws:

- Symmetry: swapping ``ours`` and ``theirs`` swaps the ``ours``/``theirs`` fields and the
  ``OURS``/``THEIRS`` kinds of every chunk and changes nothing else (each side is aligned
  with the base on its own, and the walk treats both sides alike).
- Coverage: concatenating the ``ours`` fields of all chunks gives ``ours`` back, and the
  same holds for ``theirs`` and ``base``; so a merge that keeps both sides of every
  conflict and insert chunk keeps every line either side added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["BOTH", "CONFLICT", "INSERT", "OURS", "SAME", "THEIRS", "Chunk", "diff3", "union_insert"]

#: All three agree.
SAME = "same"
#: Only ours changed these lines: take ours.
OURS = "ours"
#: Only theirs changed these lines: take theirs.
THEIRS = "theirs"
#: Both sides made the same change.
BOTH = "both"
#: Both sides inserted different lines at the same place (no base lines involved).
INSERT = "insert"
#: Both sides changed the same base lines differently.
CONFLICT = "conflict"


class Chunk(NamedTuple):
    """One region of the merge: the base lines and each side's lines for it."""

    kind: str
    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]

    @property
    def resolved(self) -> tuple[str, ...]:
        """The merged lines of a chunk that needs no policy (not INSERT or CONFLICT)."""
        if self.kind == THEIRS:
            return self.theirs
        if self.kind in (OURS, BOTH, SAME):
            return self.ours
        raise ValueError(f"a {self.kind} chunk has no single resolution")


def _alignment(base: Sequence[str], side: Sequence[str]) -> dict[int, int]:
    """Map each aligned base line index to its index in ``side`` (monotonic)."""
    import difflib  # only a body changed on both sides needs it; it slows the driver's start

    matcher = difflib.SequenceMatcher(None, base, side, autojunk=False)
    out: dict[int, int] = {}
    for b, s, size in matcher.get_matching_blocks():
        for k in range(size):
            out[b + k] = s + k
    return out


def _classify(base: tuple[str, ...], ours: tuple[str, ...], theirs: tuple[str, ...]) -> Chunk:
    if ours == theirs:
        kind = SAME if ours == base else BOTH
    elif ours == base:
        kind = THEIRS
    elif theirs == base:
        kind = OURS
    elif not base:
        kind = INSERT
    else:
        kind = CONFLICT
    return Chunk(kind, base, ours, theirs)


def diff3(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> list[Chunk]:
    """Cut the three sequences into classified chunks, in order (see module docstring)."""
    b_lines, o_lines, t_lines = tuple(base), tuple(ours), tuple(theirs)
    to_ours = _alignment(b_lines, o_lines)
    to_theirs = _alignment(b_lines, t_lines)
    nb, no, nt = len(b_lines), len(o_lines), len(t_lines)
    i = o = t = 0
    chunks: list[Chunk] = []
    while i < nb or o < no or t < nt:
        k = 0
        while i + k < nb and to_ours.get(i + k) == o + k and to_theirs.get(i + k) == t + k:
            k += 1
        if k:
            chunks.append(Chunk(SAME, b_lines[i : i + k], o_lines[o : o + k], t_lines[t : t + k]))
            i, o, t = i + k, o + k, t + k
            continue
        # The unstable chunk ends at the next base line aligned with both sides. Alignments
        # are monotonic, so that line's positions are at or after the current ones.
        j = i
        while j < nb and not (j in to_ours and j in to_theirs):
            j += 1
        o_end, t_end = (to_ours[j], to_theirs[j]) if j < nb else (no, nt)
        chunks.append(_classify(b_lines[i:j], o_lines[o:o_end], t_lines[t:t_end]))
        i, o, t = j, o_end, t_end
    return chunks


def union_insert(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """Both sides' inserted lines: a shared head and tail once, the differing middles in order.

    ``first`` and ``second`` are the two insertions in the caller's canonical order.
    """
    a, b = list(first), list(second)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return a[: len(a) - tail] + b[head : len(b) - tail] + a[len(a) - tail :]


def common_base(ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """A stand-in base for two sides with no common ancestor: the lines they share.

    With it, lines only one side has count as that side's additions, so two versions of
    a file created on two machines merge line by line instead of clashing as a whole.
    """
    import difflib

    # SequenceMatcher is not symmetric in its arguments; order them by content, not role.
    first, second = sorted((list(ours), list(theirs)))
    matcher = difflib.SequenceMatcher(None, first, second, autojunk=False)
    out: list[str] = []
    for start, _, size in matcher.get_matching_blocks():
        out.extend(first[start : start + size])
    return out


def render_markers(
    chunks: Sequence[Chunk], marker_size: int = 7, labels: tuple[str, str, str] = ("ours", "base", "theirs")
) -> tuple[list[str], int]:
    """Lines with git-style conflict markers (diff3 style), and the number of conflicts.

    Only the fallback text merge uses this, when ``git merge-file`` cannot run.
    """
    out: list[str] = []
    conflicts = 0
    for chunk in chunks:
        if chunk.kind in (INSERT, CONFLICT):
            conflicts += 1
            out.append("<" * marker_size + " " + labels[0])
            out.extend(chunk.ours)
            out.append("|" * marker_size + " " + labels[1])
            out.extend(chunk.base)
            out.append("=" * marker_size)
            out.extend(chunk.theirs)
            out.append(">" * marker_size + " " + labels[2])
        else:
            out.extend(chunk.resolved)
    return out, conflicts
