"""Items a merge flagged for review, and clearing the flag once a person has looked.

A merge that kept a conflict (both versions of the same lines in a ``> [!conflict]``
callout, a scalar both sides changed, a deleted item someone had edited) lists it in the
item's ``mergeConflicts`` frontmatter. :func:`flagged` finds those items through the
index; :func:`resolve` clears the list — refusing while a conflict callout is still in
the body, so a flag cannot be dropped with the two versions still side by side.

Other cross-file checks that matter after a merge live here too (:func:`checks`): edges
whose endpoint is gone and superseded items that are still active.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engram.errors import Conflict, InvalidInput
from engram.items.reading import broken_files, get
from engram.items.repair import rewrite_item
from engram.items.state import VaultState
from engram.store.model import Engram, now
from mergedriver.body import CALLOUT

__all__ = ["Finding", "Flagged", "checks", "flagged", "resolve", "superseded_active"]


@dataclass(frozen=True, slots=True)
class Flagged:
    """One flagged item: what the merge recorded and how many callouts the body holds."""

    id: str
    path: str
    title: str
    notes: tuple[str, ...]
    callouts: int


@dataclass(frozen=True, slots=True)
class Finding:
    """One cross-file problem: a short code, the file, and a sentence for a person."""

    code: str
    path: str
    message: str


def flagged(state: VaultState) -> list[Flagged]:
    """Every item whose ``mergeConflicts`` is not empty, by path."""
    state.ensure_fresh()
    rows = state.index.query(
        "SELECT id, path, title, body, json_extract(meta, '$.mergeConflicts') AS notes FROM items"
        " WHERE json_array_length(json_extract(meta, '$.mergeConflicts')) > 0 ORDER BY path"
    )
    return [
        Flagged(r["id"], r["path"], r["title"], tuple(json.loads(r["notes"])), _callouts(r["body"]))
        for r in rows
    ]


def _callouts(body: str) -> int:
    return sum(1 for line in body.split("\n") if line.startswith(CALLOUT))


def resolve(state: VaultState, ref: str, *, force: bool = False) -> Engram:
    """Clear an item's conflict flag (a new version by the vault's actor).

    Raises NotFound, InvalidInput (the item is not flagged) and Conflict (the body still
    holds a conflict callout and ``force`` is False).
    """
    with state.lock.hold():
        item = get(state, ref)
        assert item.path is not None
        if not item.merge_conflicts:
            raise InvalidInput(
                f"item {item.id} is not flagged for review.", hint="`engram conflicts` lists flagged items."
            )
        blocks = _callouts(item.content)
        if blocks and not force:
            raise Conflict(
                f"{item.path} still holds {blocks} conflict block(s) (lines starting with "
                f"'{CALLOUT}').",
                hint="Edit the text to what is right and delete each block, then resolve again "
                "(or pass --force to keep the blocks and clear the flag anyway).",
            )
        version = item.version + 1
        rewrite_item(
            state, item.path, merge_conflicts=None, version=version, updated_at=now(), updated_by=state.actor
        )
        state.audit.record(
            state.actor, "resolve", item.id, path=item.path, old_version=item.version,
            new_version=version, fields=("mergeConflicts",),
        )
        return get(state, item.id)


def superseded_active(state: VaultState) -> list[Finding]:
    """Items something supersedes (edge or ``supersededBy``) that are still active."""
    return [
        Finding(
            "superseded_active", row["path"],
            f"item {row['id']} is superseded but still active (set its status to superseded)",
        )
        for row in state.index.query(
            "SELECT DISTINCT i.path, i.id FROM items i LEFT JOIN synapses s"
            "   ON s.kind = 'supersedes' AND s.target = i.id"
            " WHERE i.status = 'active' AND (i.superseded_by IS NOT NULL OR s.id IS NOT NULL)"
            " ORDER BY i.path"
        )
    ]


def checks(state: VaultState) -> list[Finding]:
    """Cross-file problems a merge can introduce, in a stable order."""
    state.refresh()
    found: list[Finding] = []
    for row in state.index.query(
        "SELECT s.path, s.source, s.target FROM synapses s"
        " WHERE NOT EXISTS (SELECT 1 FROM items WHERE id = s.source)"
        "    OR NOT EXISTS (SELECT 1 FROM items WHERE id = s.target) ORDER BY s.path"
    ):
        found.append(Finding(
            "dangling_edge", row["path"],
            f"edge {row['source']} → {row['target']} points at an item that is not in the vault",
        ))
    found += superseded_active(state)
    for item in flagged(state):
        found.append(Finding(
            "merge_conflict", item.path,
            f"flagged by a merge ({len(item.notes)} note(s), {item.callouts} conflict block(s)); "
            f"review it, then `engram conflicts --resolve {item.id}`",
        ))
    for path, problem in broken_files(state):
        found.append(Finding("unparseable", path, f"does not parse: {problem}"))
    return found
