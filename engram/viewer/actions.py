"""The writing pages: edit an item, delete it, clear a merge flag, re-run the health check.

Every write is one :class:`~engram.vault.Vault` call, so it takes the vault lock, writes
atomically, is audited under the viewer's actor, and is checked like any other write.
The middleware has already checked the CSRF token (:mod:`engram.viewer.security`).

- **Edit** sends only the fields the person changed, with the version the form was
  read at. If someone else wrote the item since, the vault refuses with
  :class:`~engram.errors.VersionConflict`; the form comes back with the person's text
  kept, the message the CLI prints (which versions, by whom, which fields) and the
  current value of every field that now differs, so they can re-apply or drop their edit.
- **Releasing a quarantined item asks first**, showing what the screen found: a release
  puts the text back in every agent's recall. Only a curator's release goes through
  (the vault refuses anyone else's, shown as a 403 page).
- **Destructive actions ask first**: delete shows a confirmation page; clearing a merge
  flag while conflict blocks remain in the body asks before doing it; accepting a
  proposal that retires, forgets, merges, retypes or settles a dispute (the kinds in
  :data:`CONFIRM_KINDS`) shows what it will do and asks. Dismissing changes no item and
  is done at once.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from engram.errors import Conflict, InvalidInput, VersionConflict
from engram.store.model import ENGRAM_KINDS, STATUSES, VISIBILITIES, Engram
from engram.store.paths import split_domain
from engram.viewer.context import viewer_of

#: Proposal kinds whose acceptance retires, removes or rewrites knowledge: asked first.
CONFIRM_KINDS = frozenset({"archive", "forget", "merge", "retype", "dispute"})
RESOLUTIONS = ("keep_new", "keep_old", "merge", "archive")

#: Form fields of the edit page, in order.
EDITABLE = ("title", "summary", "domain", "kind", "tags", "importance", "confidence", "status", "visibility", "content")


def form_values(item: Engram) -> dict[str, str]:
    """An item's editable fields as the edit form shows them."""
    return {
        "title": item.title, "summary": item.summary, "domain": item.domain, "kind": item.kind,
        "tags": ", ".join(item.tags), "importance": f"{item.importance:g}",
        "confidence": f"{item.confidence:g}", "status": item.status,
        "visibility": item.visibility, "content": item.content,
    }


def _number(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number from 0 to 1, not {raw!r}.", field=name, hint="e.g. 0.5") from None


def changes_from(submitted: dict[str, str], current: Engram) -> dict[str, Any]:
    """The fields ``submitted`` changes relative to ``current`` (as ``Vault.update`` takes them)."""
    before = form_values(current)
    changes: dict[str, Any] = {}
    for name in EDITABLE:
        value = submitted.get(name)
        if value is None or value == before[name]:
            continue
        if name == "domain":
            changes["domain_tags"] = split_domain(value)
        elif name == "tags":
            changes["tags"] = [t for t in re.split(r"[,\s]+", value) if t]
        elif name in ("importance", "confidence"):
            if _number(name, value) != getattr(current, name):
                changes[name] = _number(name, value)
        else:
            changes[name] = value
    return changes


async def _submitted(request: Request) -> dict[str, str]:
    form = await request.form()
    # Browsers send a textarea's line breaks as CRLF; items are LF.
    return {k: str(v).replace("\r\n", "\n") for k, v in form.items() if isinstance(v, str)}


def _version(submitted: dict[str, str]) -> int:
    try:
        return int(submitted.get("version", ""))
    except ValueError:
        raise InvalidInput("the form has no version.", field="version", hint="Reload the item and edit again.") from None


def _edit_page(request: Request, item: Engram, values: dict[str, str], status: int = 200, **extra: Any) -> Response:
    return viewer_of(request).page(
        request, "edit.html", status, item=item, values=values, kinds=ENGRAM_KINDS,
        statuses=STATUSES, visibilities=VISIBILITIES, **extra,
    )


def edit_form(request: Request) -> Response:
    item = viewer_of(request).vault.get(request.path_params["id"])
    return _edit_page(request, item, form_values(item), version=item.version)


async def edit(request: Request) -> Response:
    viewer = viewer_of(request)
    vault = viewer.vault
    submitted = await _submitted(request)
    version = _version(submitted)
    current = await run_in_threadpool(vault.get, request.path_params["id"])
    shown = form_values(current)
    values = {name: submitted.get(name, shown[name]) for name in EDITABLE}
    try:
        # Diffed against the item as it is now: when that is not the version the form was
        # read at, the update is refused below whatever the diff holds.
        changes = changes_from(submitted, current)
        if not changes:
            return RedirectResponse(f"/item/{current.id}?saved=unchanged", status_code=303)
        updated = await run_in_threadpool(vault.update, current.id, changes, expected_version=version)
    except VersionConflict as exc:
        differs = [n for n in EDITABLE if shown[n] != values[n]]
        return _edit_page(
            request, current, values, 409, version=current.version, stale=exc, based_on=version,
            theirs=shown, differs=differs,
        )
    except InvalidInput as exc:
        return _edit_page(request, current, values, 400, version=version, invalid=exc)
    viewer.changed()
    return RedirectResponse(f"/item/{updated.id}?saved={updated.version}", status_code=303)


def delete_form(request: Request) -> Response:
    viewer = viewer_of(request)
    item = viewer.vault.get(request.path_params["id"])
    edges = len(viewer.vault.synapses(item.id))
    return viewer.page(
        request, "confirm.html", title=f"Delete {item.title}?", item=item,
        action=f"/item/{item.id}/delete", button="Delete",
        fields={"version": str(item.version)},
        explain=f"The file {item.path} and its {edges} synapse(s) move to .engram/trash/{item.id}/ "
        "on this machine (restore them from there). Other people lose the item at the next sync.",
        cancel=f"/item/{item.id}",
    )


async def delete(request: Request) -> Response:
    viewer = viewer_of(request)
    submitted = await _submitted(request)
    deleted = await run_in_threadpool(
        viewer.vault.delete, request.path_params["id"], expected_version=_version(submitted)
    )
    viewer.changed()
    return viewer.page(request, "deleted.html", item=deleted)


async def resolve(request: Request) -> Response:
    viewer = viewer_of(request)
    submitted = await _submitted(request)
    ref = request.path_params["id"]
    force = submitted.get("force") == "1"
    try:
        item = await run_in_threadpool(viewer.vault.resolve_conflict, ref, force=force)
    except Conflict as exc:  # conflict blocks remain: ask before clearing the flag anyway
        item = await run_in_threadpool(viewer.vault.get, ref)
        return viewer.page(
            request, "confirm.html", 409, title=f"{item.title} still holds conflict blocks",
            item=item, action=f"/conflicts/{item.id}/resolve", button="Clear the flag anyway",
            fields={"force": "1"}, explain=exc.message,
            hint="Better: edit the item, keep the right text and delete each '> [!conflict]' block, then resolve.",
            cancel=f"/item/{item.id}/edit",
        )
    viewer.changed()
    return RedirectResponse(f"/conflicts?resolved={item.id}", status_code=303)


async def recheck(request: Request) -> Response:
    viewer_of(request).changed()
    return RedirectResponse("/health", status_code=303)


async def accept(request: Request) -> Response:
    viewer = viewer_of(request)
    submitted = await _submitted(request)
    ref = request.path_params["id"]
    proposal = await run_in_threadpool(viewer.vault.proposal, ref)
    resolution = submitted.get("resolution") or None
    if proposal.kind in CONFIRM_KINDS and submitted.get("confirmed") != "1":
        return viewer.page(
            request, "confirm.html", title=f"Accept: {proposal.title}?", item=None,
            action=f"/proposals/{proposal.id}/accept", button="Accept",
            fields={"confirmed": "1", "note": submitted.get("note", "")},
            explain=f"This {proposal.kind} proposal changes knowledge: {proposal.reason}",
            resolutions=RESOLUTIONS if proposal.kind == "dispute" else (),
            cancel="/proposals",
        )
    done = await run_in_threadpool(
        viewer.vault.accept, proposal.id, note=submitted.get("note") or None, resolution=resolution
    )
    viewer.changed()
    return RedirectResponse(f"/proposals?decided={done.id}", status_code=303)


async def dismiss(request: Request) -> Response:
    viewer = viewer_of(request)
    submitted = await _submitted(request)
    done = await run_in_threadpool(
        viewer.vault.dismiss, request.path_params["id"], note=submitted.get("note") or None
    )
    return RedirectResponse(f"/proposals?decided={done.id}", status_code=303)


async def verify(request: Request) -> Response:
    """Stamp an item verified now (``lastVerifiedAt``), with an optional note."""
    viewer = viewer_of(request)
    submitted = await _submitted(request)
    item = await run_in_threadpool(
        viewer.vault.verify_entry, request.path_params["id"], submitted.get("note") or None
    )
    viewer.changed()
    return RedirectResponse(f"/stale?verified={item.id}", status_code=303)


async def release(request: Request) -> Response:
    """Release a quarantined item (curators only), after a confirmation that shows what
    the screen found."""
    viewer = viewer_of(request)
    submitted = await _submitted(request)
    ref = request.path_params["id"]
    status = submitted.get("status") or "active"
    if submitted.get("confirmed") != "1":
        held = await run_in_threadpool(viewer.vault.quarantined)
        entry = next((h for h in held if h.item.id == ref), None)
        if entry is None:
            item = await run_in_threadpool(viewer.vault.get, ref)
            raise InvalidInput(f"item {item.id} is not quarantined (status {item.status}).",
                               hint="The quarantine page lists what is held back.")
        return viewer.page(
            request, "confirm.html", title=f"Release {entry.item.title}?", item=entry.item,
            action=f"/quarantine/{entry.item.id}/release", button=f"Release as {status}",
            fields={"confirmed": "1", "status": status, "version": submitted.get("version", "")},
            explain=f"The screen held it back: {entry.reason}. Releasing it puts its text back in every "
            "agent's recall; the release is recorded under your name with the digest of this exact text, so "
            "the same text is not held back again.",
            cancel="/quarantine",
        )
    done = await run_in_threadpool(
        viewer.vault.release, ref, status=status, expected_version=_version(submitted)
    )
    viewer.changed()
    return RedirectResponse(f"/quarantine?released={done.id}", status_code=303)

