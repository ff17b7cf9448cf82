"""Synapse operations of the vault: link, unlink, list, and derived sections.

Mixed into :class:`engram.vault.Vault` (methods annotate ``self``). An edge is one
YAML file named by the hash of its endpoints and kind, so creating an existing edge
merges its evidence instead of duplicating it. Edges that touch a private item are
stored under ``private/`` and never named in a shared file's derived section.
"""

from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Any

from engram.errors import InvalidInput, NotFound, UnknownKind
from engram.items.state import VaultBase
from engram.store import rules
from engram.store.fsio import remove
from engram.store.model import SYMMETRIC_KINDS, SYNAPSE_KINDS, Evidence, Synapse, now, synapse_id


class LinksMixin(VaultBase):
    """Synapse operations (see the module docstring)."""

    def link(
        self,
        source_ref: str,
        kind: str,
        target_ref: str,
        *,
        weight: float | None = None,
        evidence: str | None = None,
        confidence: float | None = None,
    ) -> Synapse:
        """Create the edge ``source --kind--> target``, or merge into the existing one.

        Re-creating an edge adds the new evidence (a set, keyed by description and
        author) instead of duplicating the edge; a given ``weight`` replaces the old one.
        Raises UnknownKind, NotFound (either endpoint), InvalidInput (a self-link).
        """
        if kind not in SYNAPSE_KINDS:
            raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
        weight = rules.unit("weight", weight) if weight is not None else None
        confidence = rules.unit("confidence", confidence) if confidence is not None else None
        if evidence is not None:
            evidence = rules.text("evidence", evidence, rules.MAX_SUMMARY_CHARS, required=True)
        with self.lock.hold():
            self._ensure_indexed()
            source, _ = self._read(self._resolve(source_ref))
            target, _ = self._read(self._resolve(target_ref))
            if source.id == target.id:
                raise InvalidInput(
                    f"an item cannot link to itself ({source.id}).", hint="Link two different items."
                )
            a, b = (source.id, target.id)
            if kind in SYMMETRIC_KINDS:
                a, b = sorted((a, b))
            sid = synapse_id(a, b, kind)
            stamp = now()
            existing = self._existing_synapse(sid)
            entries = builtins.list(existing.evidence) if existing else []
            if evidence is not None and not any(
                e.description == evidence and e.added_by == self.actor for e in entries
            ):
                entries.append(Evidence(evidence, self.actor, confidence, stamp))
            if existing is not None:
                syn = replace(
                    existing,
                    weight=weight if weight is not None else existing.weight,
                    evidence=tuple(entries),
                    updated_at=stamp,
                    updated_by=self.actor,
                )
                action = "relink"
            else:
                syn = Synapse(
                    id=sid,
                    source=a,
                    target=b,
                    kind=kind,
                    weight=weight if weight is not None else 0.5,
                    evidence=tuple(entries),
                    created_by=self.actor,
                    created_at=stamp,
                    updated_at=stamp,
                )
                action = "link"
            rel = self._store_synapse(syn, private=self._is_private(source, target))
            self.audit.record(self.actor, action, sid, target="synapse", path=rel)
            self._refresh_derived(source.id)
            self._refresh_derived(target.id)
            return self._existing_synapse(sid) or syn

    def unlink(self, source_ref: str, kind: str, target_ref: str) -> Synapse:
        """Remove the edge ``source --kind--> target``; return it. Raises NotFound."""
        if kind not in SYNAPSE_KINDS:
            raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
        with self.lock.hold():
            self._ensure_indexed()
            source = self.index.item_rows("path = ?", (self._resolve(source_ref),))[0].id
            target = self.index.item_rows("path = ?", (self._resolve(target_ref),))[0].id
            a, b = sorted((source, target)) if kind in SYMMETRIC_KINDS else (source, target)
            sid = synapse_id(a, b, kind)
            existing = self._existing_synapse(sid)
            if existing is None:
                raise NotFound(
                    f"there is no {kind} edge from {source} to {target}.",
                    ref=sid,
                    hint=f"`engram synapses {source}` lists its edges.",
                )
            for rel in self.index.synapse_paths(sid):
                remove(self.abspath(rel))
                self.index.drop(rel)
                self.audit.record(self.actor, "unlink", sid, target="synapse", path=rel)
            self._refresh_derived(source)
            self._refresh_derived(target)
            return existing

    def synapse(self, synapse_id_: str) -> Synapse:
        self._ensure_fresh()
        found = self._existing_synapse(synapse_id_)
        if found is None:
            raise NotFound(
                f"no synapse {synapse_id_!r}.", ref=synapse_id_, hint="`engram synapses ITEM` lists edges."
            )
        return found

    def synapses(
        self, endpoint: str | None = None, *, kind: str | None = None, direction: str = "both"
    ) -> builtins.list[Synapse]:
        """Edges touching ``endpoint`` (any ref), optionally of one kind / direction."""
        self._ensure_fresh()
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        if kind is not None:
            if kind not in SYNAPSE_KINDS:
                raise UnknownKind(kind, SYNAPSE_KINDS, "synapse kind")
            clauses.append("kind = ?")
            params.append(kind)
        if endpoint is not None:
            if direction not in ("both", "out", "in"):
                raise InvalidInput(
                    f"direction must be both, out or in, not {direction!r}.", hint="Use one of them."
                )
            item_id = self.index.item_rows("path = ?", (self._resolve(endpoint),))[0].id
            sides = {"out": ["source"], "in": ["target"], "both": ["source", "target"]}[direction]
            clauses.append("(" + " OR ".join(f"{side} = ?" for side in sides) + ")")
            params.extend([item_id] * len(sides))
        return self.index.synapses(" AND ".join(clauses) or "1", params)
