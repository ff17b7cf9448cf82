"""Quarantine: instruction-shaped items kept for review, out of every reader's way.

The write path (:mod:`engram.items.writing`) stores an item the instruction screen
flags with ``status: quarantined`` and audits why. Such an item stays in the vault —
nothing is hidden from the audit log, from git or from a curator — but recall never
returns it (whatever the filters say), listings hide it unless asked, dedup and any
classifier context leave it out, and over MCP its text is withheld from everyone but
curators. :func:`listing` shows curators what is waiting and why (the screen's findings,
recomputed from the text, so they are the same on every machine; plus the local audit
entry, when this machine wrote it). :func:`release` — curators only — puts an item back
and records in the file (``quarantineReleased``) the digest of the text it vouched for,
so that no machine quarantines that text again (nor refuses to promote it). A curator can
vouch the same way for an active item whose text the screen flags (one a promotion
refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from engram.errors import EngramError, InvalidInput
from engram.items.reading import get
from engram.items.state import VaultState
from engram.store.format import read_bytes
from engram.store.model import STATUSES, Engram, now
from engram.store.notes import body_offset
from engram.trust import roles
from engram.trust.policy import RELEASE_KEY, released, screen, text_digest, text_fields
from engram.trust.screen import Finding

__all__ = ["Quarantined", "listing", "release"]


@dataclass(frozen=True, slots=True)
class Quarantined:
    """One quarantined item: who wrote it, and why the screen holds it."""

    item: Engram
    findings: tuple[Finding, ...]
    reason: str  # the screen's sentence, or the audit entry's when set by hand
    quarantined_by: str | None
    quarantined_at: str | None
    #: The lines of the item's file above its content: findings are shown by the file's
    #: line (``Finding.where(body_line)``), the one a curator opens.
    body_line: int = 0


def listing(state: VaultState) -> list[Quarantined]:
    """Every quarantined item, most recently changed first."""
    state.ensure_fresh()
    out: list[Quarantined] = []
    for item in state.index.items("status = 'quarantined'", (), "ORDER BY updated_at DESC, path"):
        screening = screen(text_fields(item), state.trust, state.encoder)
        entry = next(
            (e for e in reversed(list(state.audit.entries(item.id))) if e.action in ("quarantine", "update")),
            None,
        )
        try:
            body_line = body_offset(read_bytes(state.abspath(item.path or ""), item.path or ""))
        except (OSError, EngramError):
            body_line = 0  # gone since the index read it: the content's lines are the best there is
        reason = screening.reason(body_line) or (
            entry.reason if entry and entry.reason else "set by hand (no screen finding)")
        out.append(
            Quarantined(
                item,
                screening.findings,
                reason,
                entry.actor if entry else item.updated_by or None,
                entry.at if entry else item.updated_at or None,
                body_line,
            )
        )
    return out


def release(
    state: VaultState, ref: str, *, status: str | None = None, expected_version: int | None = None
) -> Engram:
    """Release a quarantined item (curators only): set its status (default ``active``).

    A curator may also vouch for an item that is not quarantined but whose text the
    screen flags — one written where the screen was off, or before it existed, that a
    promotion then refuses: its status stays (or becomes ``status`` when given) and the
    vouched-for digest is recorded the same way, so the promotion goes through.

    The release is audited; the screen does not flag the same text again, only text a
    later write adds. Raises Forbidden (not a curator), InvalidInput (neither quarantined
    nor flagged, or ``status`` is not a status), NotFound, VersionConflict.
    """
    if status is not None and (status not in STATUSES or status == "quarantined"):
        raise InvalidInput(
            f"{status!r} is not a status to release to.", field="status",
            hint="Use active (the default), draft or archived.",
        )
    with state.refusals_audited("release", ref) as refusal, state.lock.hold():
        roles.require_curator(state.actor, state.role, "release quarantined items")
        state.ensure_indexed()
        rel = state.resolve(ref)
        current, _ = state.read(rel)
        refusal.id = current.id
        state.check_version(current, expected_version)
        if current.status == "quarantined":
            status = status or "active"
        elif released(current) or not screen(text_fields(current), state.trust, state.encoder).quarantine:
            raise InvalidInput(
                f"item {current.id} is not quarantined (status {current.status}) and the screen does not flag its "
                "text, so there is nothing to release.",
                hint="`engram quarantine list` shows the quarantined items.",
            )
        else:
            status = status or current.status
        released_item = current.with_changes(
            status=status, version=current.version + 1, updated_at=now(), updated_by=state.actor,
            extra=MappingProxyType({**current.extra, RELEASE_KEY: text_digest(current)}),
        )
        state.write_item(released_item, None)
        state.audit.record(
            state.actor, "release", current.id, path=rel, old_version=current.version,
            new_version=released_item.version, fields=("status", RELEASE_KEY), rule="role.curator",
            reason=f"released by curator {state.actor} to status {status}",
        )
    return get(state, current.id)
