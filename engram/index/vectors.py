"""Item vectors in the derived index: what semantic recall (:mod:`engram.recall.semantic`)
reads and fills.

The ``vectors`` table holds one row per embedded item: its ``items`` rowid, the name of the
model that embedded it and the vector as bytes (the model's, opaque here; this layer
never imports the model or numpy).

Invariants:

- A stored vector is never stale. Items are only ever inserted or deleted (an update is
  a delete and an insert), and the ``items_ad`` trigger deletes the vector with its row,
  so a vector present for a rowid was computed from the text that row holds now.
- A vector from another model is not returned; it is replaced when that item is next
  embedded.
- Filling is lazy and best effort: vectors are computed for the items a search ranks,
  the first time it ranks them, and stored when the index can take a write at once. A
  busy or read-only index costs the embedding again next time, never the answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engram.errors import StorageError

if TYPE_CHECKING:
    from engram.index.catalog import Index

#: Turns item texts into one vector (as bytes) each, in order.
Embed = Callable[[list[str]], list[bytes]]


def text_of(title: str, summary: str, body: str) -> str:
    """What an item's vector is computed from: its title, summary and body."""
    return "\n".join(part for part in (title, summary, body) if part)


def vectors(index: Index, rowids: Sequence[int], model: str, embed: Embed) -> dict[int, bytes]:
    """The ``model``'s vector of each item in ``rowids`` (rowids with no item are left
    out), embedding and storing those not yet stored."""
    wanted = sorted(set(rowids))
    if not wanted:
        return {}
    marks = ",".join("?" * len(wanted))
    found = {
        int(r["rowid"]): bytes(r["vec"])
        for r in index.query(
            f"SELECT rowid, vec FROM vectors WHERE model = ? AND rowid IN ({marks})", [model, *wanted]
        )
    }
    missing = [i for i in wanted if i not in found]
    if not missing:
        return found
    marks = ",".join("?" * len(missing))
    rows = index.query(f"SELECT rowid, title, summary, body FROM items WHERE rowid IN ({marks})", missing)
    if not rows:
        return found
    texts = {int(r["rowid"]): text_of(str(r["title"]), str(r["summary"]), str(r["body"])) for r in rows}
    fresh = dict(zip(texts, embed(list(texts.values())), strict=True))
    # Best effort: another process writing the index must not fail a read. Only a row
    # whose text is still what was embedded gets the vector: between the read above and
    # this write another process may have replaced it (and its rowid may be reused).
    with contextlib.suppress(StorageError), index.transaction() as conn:
        now = conn.execute(
            f"SELECT rowid, title, summary, body FROM items WHERE rowid IN ({marks})", missing
        ).fetchall()
        conn.executemany(
            "INSERT OR REPLACE INTO vectors(rowid, model, vec) VALUES (?, ?, ?)",
            [(r[0], model, fresh[r[0]]) for r in now if r[0] in fresh and texts[r[0]] == text_of(r[1], r[2], r[3])],
        )
    return found | fresh


def unembedded(index: Index, model: str) -> int:
    """How many items have no vector of ``model``."""
    rows = index.query(
        "SELECT count(*) AS n FROM items WHERE rowid NOT IN (SELECT rowid FROM vectors WHERE model = ?)", [model]
    )
    return int(rows[0]["n"])


def unembedded_rowids(index: Index, model: str, after: int, limit: int) -> list[int]:
    """Up to ``limit`` rowids above ``after``, in order, of items with no vector of ``model``."""
    rows = index.query(
        "SELECT rowid FROM items WHERE rowid > ? AND rowid NOT IN (SELECT rowid FROM vectors WHERE model = ?)"
        " ORDER BY rowid LIMIT ?", [after, model, limit],
    )
    return [int(r["rowid"]) for r in rows]
