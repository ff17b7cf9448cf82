"""Proposals: what maintenance (and a disputed lesson) would change, one file each.

The system never rewrites knowledge unasked. A stage that finds an archive candidate, a
pair of duplicates, a cluster worth a pattern item, a link to add or a verification to
upgrade writes a proposal to ``proposals/<kind>/prop-<hash16>.yaml`` (canonical writer:
:func:`engram.store.format.write_proposal`), committed and merged like items; a person
or an agent accepts or dismisses it (:mod:`engram.lifecycle.review`).

Invariants:

- The id is derived from the kind and the sorted targets (plus a discriminator for
  kinds that may propose several things about the same items), so proposing the same
  thing twice, or on two machines, lands in one file; a decided proposal is never
  reopened by a later run.
- Every write holds the vault lock and is audited (``target: proposal``).
- Proposals are read from their folder, not the index: they are few, and a person may
  edit or delete them with any tool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from engram.errors import FormatError, InvalidInput, NotFound
from engram.items.state import VaultState
from engram.store.format import read_proposal, write_proposal
from engram.store.fsio import remove
from engram.store.model import VISIBILITIES, now

FOLDER = "proposals"
PROPOSAL_KINDS = (
    "archive",  # freeze an item that keeps failing (out of default recall)
    "forget",  # move a frozen item on to forgotten (restorable until purged)
    "merge",  # consolidate duplicates into one item, nothing lost
    "pattern",  # a new pattern item over a cluster of related items
    "link",  # a synapse to add between two items
    "retype",  # a synapse to change kind
    "verify",  # a verification upgrade earned by evidence
    "stale",  # mark an item stale: its premises or age say it may no longer hold
    "dispute",  # a lesson that contradicts another author's item, for a curator
    "capture",  # a new item from what an agent observed in its session (engram.scopes.capture)
)
STATUSES = ("open", "accepted", "dismissed")
Status = Literal["open", "accepted", "dismissed"]


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposal file (see the module docstring)."""

    id: str
    kind: str
    status: str
    title: str
    reason: str
    targets: tuple[str, ...]
    payload: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    score: float = 0.0
    created_by: str = ""
    created_at: str = ""
    updated_by: str = ""
    updated_at: str = ""
    decided_by: str | None = None
    decided_at: str | None = None
    note: str | None = None
    path: str = ""

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "status": self.status, "title": self.title,
            "reason": self.reason, "targets": list(self.targets), "payload": dict(self.payload),
            "score": self.score, "createdBy": self.created_by, "createdAt": self.created_at,
            "updatedBy": self.updated_by, "updatedAt": self.updated_at,
        }
        for key, value in (("decidedBy", self.decided_by), ("decidedAt", self.decided_at), ("note", self.note)):
            if value is not None:
                meta[key] = value
        return meta

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], path: str) -> Proposal:
        payload = meta.get("payload")
        return cls(
            id=str(meta["id"]), kind=str(meta["kind"]), status=str(meta["status"]),
            title=str(meta.get("title", "")), reason=str(meta.get("reason", "")),
            targets=tuple(meta.get("targets") or ()),
            payload=MappingProxyType(dict(payload) if isinstance(payload, Mapping) else {}),
            score=float(meta.get("score", 0.0)), created_by=str(meta.get("createdBy", "")),
            created_at=str(meta.get("createdAt", "")), updated_by=str(meta.get("updatedBy", "")),
            updated_at=str(meta.get("updatedAt", "")), decided_by=meta.get("decidedBy"),
            decided_at=meta.get("decidedAt"), note=meta.get("note"), path=path,
        )

    def to_json(self) -> dict[str, Any]:
        return {**self.to_meta(), "path": self.path}


def narrowest(visibilities: Sequence[str]) -> str:
    """The most private of ``visibilities`` (``VISIBILITIES`` runs private, team, org):
    what a proposal may make of several items — a pattern naming them, a merge of them —
    must not be seen wider than any of them."""
    return min(visibilities or ("team",), key=lambda v: VISIBILITIES.index(v) if v in VISIBILITIES else 0)


def proposal_id(kind: str, targets: Sequence[str], discriminator: str = "") -> str:
    """``prop-`` + 16 hex digits of SHA-256 over the kind, sorted targets and discriminator."""
    basis = "|".join([kind, *sorted(targets), discriminator])
    return "prop-" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]


def relpath(kind: str, pid: str) -> str:
    return f"{FOLDER}/{kind}/{pid}.yaml"


def _check_kind(kind: str) -> None:
    if kind not in PROPOSAL_KINDS:
        raise InvalidInput(
            f"proposal kind {kind!r} is not one of {', '.join(PROPOSAL_KINDS)}.", field="kind",
            hint=f"Use one of: {', '.join(PROPOSAL_KINDS)}.",
        )


def propose(
    state: VaultState,
    kind: str,
    targets: Sequence[str],
    *,
    title: str,
    reason: str,
    payload: Mapping[str, Any] | None = None,
    score: float = 0.0,
    discriminator: str = "",
) -> tuple[Proposal, bool]:
    """Write a proposal unless the same one exists; (proposal, created).

    An open proposal that exists is refreshed (reason, payload, score) when they changed;
    a decided one is left alone, so a dismissed proposal does not come back.
    """
    _check_kind(kind)
    pid = proposal_id(kind, targets, discriminator)
    rel = relpath(kind, pid)
    with state.lock.hold():
        existing = _read(state, rel)
        stamp = now()
        if existing is not None:
            if existing.status != "open":
                return existing, False
            fresh = Proposal(
                **{**_fields(existing), "reason": reason, "payload": MappingProxyType(dict(payload or {})),
                   "score": round(score, 6), "title": title}
            )
            if fresh.to_meta() == existing.to_meta():
                return existing, False
            fresh = Proposal(**{**_fields(fresh), "updated_by": state.actor, "updated_at": stamp})
            write_proposal(state.abspath(rel), fresh.to_meta())
            state.audit.record(state.actor, "repropose", pid, target="proposal", path=rel, note=reason)
            return _read(state, rel) or fresh, False
        proposal = Proposal(
            id=pid, kind=kind, status="open", title=title, reason=reason,
            targets=tuple(dict.fromkeys(targets)), payload=MappingProxyType(dict(payload or {})),
            score=round(score, 6), created_by=state.actor, created_at=stamp,
            updated_by=state.actor, updated_at=stamp, path=rel,
        )
        write_proposal(state.abspath(rel), proposal.to_meta())
        state.audit.record(state.actor, "propose", pid, target="proposal", path=rel, note=reason)
        return _read(state, rel) or proposal, True


def _fields(p: Proposal) -> dict[str, Any]:
    return {name: getattr(p, name) for name in Proposal.__dataclass_fields__}


def _read(state: VaultState, rel: str) -> Proposal | None:
    try:
        return Proposal.from_meta(read_proposal(state.abspath(rel), rel), rel)
    except FileNotFoundError:
        return None


def list_proposals(
    state: VaultState, *, status: str | None = "open", kind: str | None = None, target: str | None = None
) -> list[Proposal]:
    """Proposals, highest score first (then newest); ``status=None`` lists every status.

    Files that do not parse are skipped (``engram doctor`` names broken files)."""
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"status {status!r} is not one of {', '.join(STATUSES)}.", field="status",
                           hint="Use open, accepted or dismissed.")
    if kind is not None:
        _check_kind(kind)
    folder = state.root / FOLDER
    out: list[Proposal] = []
    for path in sorted(folder.glob("*/prop-*.yaml")) if folder.is_dir() else ():
        rel = path.relative_to(state.root).as_posix()
        try:
            proposal = Proposal.from_meta(read_proposal(path, rel), rel)
        except (FileNotFoundError, FormatError, KeyError, TypeError, ValueError):
            continue
        if status is not None and proposal.status != status:
            continue
        if kind is not None and proposal.kind != kind:
            continue
        if target is not None and target not in proposal.targets:
            continue
        out.append(proposal)
    return sorted(out, key=lambda p: (-p.score, p.created_at, p.id), reverse=False)


def get_proposal(state: VaultState, ref: str) -> Proposal:
    """One proposal by id (``prop-…``, or its first 8+ characters). Raises NotFound."""
    ref = ref.strip()
    matches = [p for p in list_proposals(state, status=None) if p.id == ref or (len(ref) >= 8 and p.id.startswith(ref))]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InvalidInput(f"{len(matches)} proposals start with {ref!r}.", hint="Pass the whole id.")
    raise NotFound(f"no proposal {ref!r}.", ref=ref, hint="`engram proposals --all` lists them.")


def record_decision(state: VaultState, proposal: Proposal, status: Status, note: str | None) -> Proposal:
    """Write the decision into the proposal file (under the lock, audited)."""
    stamp = now()
    decided = Proposal(
        **{**_fields(proposal), "status": status, "decided_by": state.actor, "decided_at": stamp,
           "note": note, "updated_by": state.actor, "updated_at": stamp}
    )
    with state.lock.hold():
        write_proposal(state.abspath(proposal.path), decided.to_meta())
        state.audit.record(
            state.actor, "accept" if status == "accepted" else "dismiss", proposal.id,
            target="proposal", path=proposal.path, note=note,
        )
    return decided


def discard(state: VaultState, proposal: Proposal) -> None:
    """Remove a proposal file outright (used only for proposals about items that are gone)."""
    with state.lock.hold():
        remove(Path(state.abspath(proposal.path)))
        state.audit.record(state.actor, "discard", proposal.id, target="proposal", path=proposal.path)
