"""The trash: ``engram_trash_list`` and ``engram_restore`` (thin wrappers over engram.items.trash).

Purging is left to people (``engram trash purge``): an agent can bring knowledge back,
never destroy it for good.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.mcp.models import RestoreOut, TrashEntryOut, TrashOut
from engram.mcp.registry import ADD_IDEMPOTENT, READ, Toolbox


def register(box: Toolbox) -> None:
    @box.tool("engram_trash_list", title="List deleted items", profile="full", annotations=READ)
    def engram_trash_list() -> TrashOut:
        """List the items deleted on this machine that can still be restored, newest first.

        Use it when the user asks what was deleted, or before engram_restore to find the
        id. Deleted items are not in search or listings; this is the only place they show.
        """
        found = box.vault().trash()
        return TrashOut(
            items=[TrashEntryOut(id=e.id, title=e.title, path=e.path, deleted_at=e.deleted_at, synapses=e.synapses)
                   for e in found],
            message=f"{len(found)} deleted item(s) can be restored with engram_restore(ref=ID)."
            if found else "The trash is empty.",
        )

    @box.tool("engram_restore", title="Restore a deleted item", profile="full", annotations=ADD_IDEMPOTENT)
    def engram_restore(
        ref: Annotated[str, Field(description="The deleted item's id, or its first 6+ characters (see engram_trash_list).")],
    ) -> RestoreOut:
        """Bring an item back: a frozen or forgotten one to active, a deleted or purged one
        from the trash with its synapses.

        Use it to undo an archive, a forget or an engram_delete: of your own items, or
        anyone's if you are a curator (whoever may delete an item may restore it). A
        deleted item goes back to its old path (or beside it when that is taken); edges to
        items that are gone stay in the trash and are listed. Refused when the id is in the
        vault again: nothing is overwritten. Not for older versions of an item that exists:
        use engram_history.
        """
        vault = box.vault()
        if not vault.in_trash(ref):  # frozen or forgotten, still in the vault: back to active
            item = vault.restore(ref)
            return RestoreOut(id=item.id, path=item.path or "", synapses=[], left=[], status=item.status,
                              message=f"{item.title} is {item.status} again ({item.path}).")
        done = vault.restore_deleted(ref)  # deleted or purged: from the trash
        kept = f"; {len(done.left)} edge(s) stay in the trash (their other item is gone)" if done.left else ""
        return RestoreOut(
            id=done.id,
            path=done.path,
            synapses=list(done.synapses),
            left=list(done.left),
            status=done.status,
            message=f"Restored {done.path} with {len(done.synapses)} synapse(s) from the trash{kept}; it is"
            f" {done.status}" + (f": {done.note}" if done.note else "."),
        )
