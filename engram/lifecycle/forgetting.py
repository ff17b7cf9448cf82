"""Archive, forget, restore, purge: the failure path ends in a trash that can be undone.

- ``archive`` sets ``status: frozen``: out of default recall and listings, kept in the
  vault (and in git) exactly as it was.
- ``forget`` sets ``status: forgotten``: the team's trash. Hidden everywhere unless asked
  for; the file stays, so a teammate can restore it from any clone.
- ``restore`` brings a frozen or forgotten item back to ``active`` — or to
  ``superseded`` when it has a successor (``supersededBy``): restoring undoes the
  forgetting, not the succession, so the chain keeps one current item.
- ``purge`` is the only removal, explicit and audited: it deletes a *forgotten* item
  (its file and synapses move to ``.engram/trash/`` on this machine, and git history
  keeps it). Automation never calls it: maintenance only proposes archive and forget.

Each is one write through :mod:`engram.items.writing` (version + 1, audited).
"""

from __future__ import annotations

from engram.errors import InvalidInput
from engram.items import writing
from engram.items.state import VaultState
from engram.store.model import Engram


def _current(state: VaultState, ref: str) -> Engram:
    state.ensure_fresh()
    return state.read(state.resolve(ref))[0]


def archive(state: VaultState, ref: str, *, expected_version: int | None = None) -> Engram:
    """Freeze an item (out of default recall; restorable). Raises NotFound, VersionConflict."""
    with state.lock.hold():
        item = _current(state, ref)
        if item.status == "forgotten":
            raise InvalidInput(f"{item.id} is forgotten already.", hint="Restore it first if it should be frozen.")
        return writing.update(state, item.id, {"status": "frozen"}, expected_version=expected_version)


def forget(state: VaultState, ref: str, *, expected_version: int | None = None) -> Engram:
    """Move an item to the team's trash (``status: forgotten``; restorable until purged)."""
    with state.lock.hold():
        item = _current(state, ref)
        return writing.update(state, item.id, {"status": "forgotten"}, expected_version=expected_version)


def restore(state: VaultState, ref: str, *, expected_version: int | None = None) -> Engram:
    """Bring a frozen or forgotten item back (``status: active``, or ``superseded`` when
    it has a successor). Raises InvalidInput otherwise."""
    with state.lock.hold():
        item = _current(state, ref)
        if item.status not in ("frozen", "forgotten", "archived"):
            raise InvalidInput(
                f"{item.id} is {item.status}, not frozen or forgotten: nothing to restore.",
                hint="`engram list --status forgotten` lists the trash.",
            )
        status = "superseded" if item.superseded_by else "active"
        return writing.update(state, item.id, {"status": status}, expected_version=expected_version)


def purge(state: VaultState, ref: str, *, expected_version: int | None = None) -> Engram:
    """Delete a forgotten item for good (to ``.engram/trash/``, audited). Refuses any other."""
    with state.lock.hold():
        item = _current(state, ref)
        if item.status != "forgotten":
            raise InvalidInput(
                f"{item.id} is {item.status}; only forgotten items can be purged.",
                hint=f"Forget it first (`engram forget {item.id}`), or leave it: frozen items are already out of recall.",
            )
        gone = writing.delete(state, item.id, expected_version=expected_version)
        state.audit.record(state.actor, "purge", gone.id, path=gone.path, old_version=gone.version)
        return gone
