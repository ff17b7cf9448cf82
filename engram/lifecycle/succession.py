"""Succession: one item supersedes another, with a provenance chain; who may overturn whom.

:func:`supersede` retires ``old`` in favour of ``new`` in three audited writes under one
hold of the vault lock: ``old`` becomes ``status: superseded`` with ``supersededBy`` and
``deactivatedAt``; ``new`` gains a ``provenance`` entry naming ``old`` (id, title,
version, who, when, why) on top of ``old``'s own provenance, so the chain survives even
if edges are lost; and a ``supersedes`` synapse ``new → old`` carries the reason.
Recall already hands a superseded item's place to its successor. Nothing is deleted.

:func:`settle_heads` makes concurrent supersessions converge: when several active items
supersede the same predecessor (two clones each learned a correction offline, then
merged), the newest (latest ``activatedAt``, then the larger id — ULIDs sort by time)
is the one current item and the others are superseded by it. The rule reads only the
items, so every clone that runs it picks the same head.

:func:`may_overturn` is the role rule for contradicting an existing item
(:func:`engram.trust.roles.may_overturn`): its author and curators may overturn it;
anyone else produces a ``disputed`` lesson for a curator. Without ``roles`` in
engram.yaml only the author may.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram.errors import FormatError, InvalidInput
from engram.items import links, writing
from engram.items.state import VaultState
from engram.store.model import Engram, Synapse, now
from engram.trust import roles


def may_overturn(state: VaultState, item: Engram) -> bool:
    """Whether the vault's actor may supersede ``item`` outright (see the module docstring)."""
    return roles.may_overturn(state.actor, state.roles, item)


def provenance_entry(action: str, old: Engram, by: str, at: str, why: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"action": action, "id": old.id, "title": old.title, "version": old.version,
                             "by": by, "at": at}
    if why:
        entry["why"] = why[:500]
    return entry


@dataclass(frozen=True, slots=True)
class Succession:
    old: Engram
    new: Engram
    edge: Synapse

    def to_json(self) -> dict[str, Any]:
        return {"old": self.old.id, "new": self.new.id, "edge": self.edge.id}


def supersede(state: VaultState, old_ref: str, new_ref: str, *, reason: str = "") -> Succession:
    """Retire ``old`` in favour of ``new`` (see the module docstring). Raises NotFound,
    InvalidInput (the same item, or ``new`` is itself superseded)."""
    with state.lock.hold():
        state.ensure_indexed()
        old = _read(state, old_ref)
        new = _read(state, new_ref)
        if old.id == new.id:
            raise InvalidInput("an item cannot supersede itself.", hint="Name two different items.")
        if new.status == "superseded":
            raise InvalidInput(
                f"{new.id} is itself superseded (by {new.superseded_by}).",
                hint="Supersede with the current item of that chain.",
            )
        stamp = now()
        chain = [dict(p) for p in new.provenance or ()]
        entry = provenance_entry("supersede", old, state.actor, stamp, reason)
        # The old item's own chain (what it superseded or absorbed) carries on; its origin does not.
        inherited = [dict(p) for p in old.provenance or () if "id" in dict(p) and dict(p) not in chain]
        if entry not in chain:
            chain = [*chain, *inherited, entry]
        new = writing.update(state, new.id, {"provenance": chain}, expected_version=new.version)
        old = writing.update(
            state, old.id,
            {"status": "superseded", "superseded_by": new.id, "deactivated_at": stamp},
            expected_version=old.version,
        )
        edge = links.link(state, new.id, "supersedes", old.id, weight=1.0, evidence=reason or None)
        return Succession(_read(state, old.id), _read(state, new.id), edge)


def _read(state: VaultState, ref: str) -> Engram:
    return state.read(state.resolve(ref))[0]


def settle_heads(state: VaultState, item_ids: set[str] | None = None) -> list[Succession]:
    """Converge forked supersede chains (see the module docstring); returns what it did.

    ``item_ids`` limits the look to chains touching those items (after a merge: the items
    it brought in); None looks at the whole vault.
    """
    done: list[Succession] = []
    with state.lock.hold():
        state.ensure_indexed()
        edges = state.index.synapses("kind = 'supersedes'")
        by_old: dict[str, set[str]] = {}
        for edge in edges:
            by_old.setdefault(edge.target, set()).add(edge.source)
        for old_id, successors in sorted(by_old.items()):
            if item_ids is not None and not ({old_id, *successors} & item_ids):
                continue
            heads = [h for h in (active(state, s) for s in sorted(successors)) if h is not None]
            if len(heads) < 2:
                continue
            winner = max(heads, key=lambda h: (h.activated_at or h.created_at, h.id))
            for loser in sorted((h for h in heads if h.id != winner.id), key=lambda h: h.id):
                done.append(
                    supersede(state, loser.id, winner.id,
                              reason=f"both superseded {old_id}; the newer lesson is current")
                )
    return done


def active(state: VaultState, item_id: str) -> Engram | None:
    for row in state.index.item_rows("id = ?", (item_id,)):
        try:
            item = state.read(row.path)[0]
        except (FileNotFoundError, FormatError):
            return None
        return item if item.status in ("active", "draft") and not item.superseded_by else None
    return None

