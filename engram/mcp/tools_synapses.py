"""Synapse tools: typed links between items — create, get, list, delete."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from engram.errors import InvalidInput
from engram.mcp import views
from engram.mcp.models import SynapseList, SynapseView
from engram.mcp.overview import title_lookup
from engram.mcp.registry import ADD_IDEMPOTENT, READ, REMOVE, OptionalText, Toolbox
from engram.store.model import SYNAPSE_FAMILIES, SYNAPSE_KINDS

_FAMILIES = "; ".join(f"{family}: {', '.join(kinds)}" for family, kinds in SYNAPSE_FAMILIES.items())
_ITEM_REF = "An item id (or 6+ leading characters), path or exact title."
ItemRef = Annotated[str, Field(description=_ITEM_REF)]
SynapseKind = Annotated[
    str,
    Field(
        description=f"The relation ({_FAMILIES}). similar_to and contradicts are symmetric.",
        json_schema_extra={"enum": list(SYNAPSE_KINDS)},
    ),
]
SynapseId = Annotated[str, Field(description="A synapse id: 'syn-' and 16 hex digits.")]


def register(box: Toolbox) -> None:
    @box.tool("synapse_create", title="Link two items", profile="minimal", annotations=ADD_IDEMPOTENT)
    def synapse_create(
        source: ItemRef,
        kind: SynapseKind,
        target: ItemRef,
        weight: Annotated[float | None, Field(description="Strength 0 to 1 (default 0.5).")] = None,
        evidence: Annotated[
            OptionalText, Field(description="Why the link holds, in one or two sentences.")
        ] = None,
        confidence: Annotated[float | None, Field(description="Confidence in the evidence, 0 to 1.")] = None,
    ) -> SynapseView:
        """Create the typed link source --kind--> target between two existing items.

        Use it when one item extends, depends on, causes, contradicts, supersedes or
        exemplifies another: recall follows links, so linked knowledge surfaces together.
        An existing link gets your evidence added instead of a copy. Both items must
        exist; an item cannot link to itself.
        """
        vault = box.vault()
        syn = vault.link(source, kind, target, weight=weight, evidence=evidence, confidence=confidence)
        return views.synapse_view(syn, title_lookup(vault), framed=True)

    @box.tool("synapse_get", title="Read one link", profile="full", annotations=READ)
    def synapse_get(synapse_id: SynapseId) -> SynapseView:
        """Read one synapse by id: its endpoints (with titles), kind, weight and evidence.

        Use it to see why two items are linked. To see all links of an item, use
        synapse_list (or engram_get at the content tier).
        """
        vault = box.vault()
        return views.synapse_view(vault.synapse(synapse_id), title_lookup(vault), framed=True)

    @box.tool("synapse_list", title="List links", profile="full", annotations=READ)
    def synapse_list(
        ref: Annotated[str | None, Field(description="The item whose links to list; omit for all links.")] = None,
        kind: Annotated[
            str | None, Field(description="Only this kind.", json_schema_extra={"enum": [*SYNAPSE_KINDS, None]})
        ] = None,
        direction: Annotated[
            Literal["both", "out", "in"],
            Field(description="out: from the item; in: to the item; both (default)."),
        ] = "both",
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many, 1 to 1000.")] = 200,
    ) -> SynapseList:
        """List synapses, optionally those touching one item, of one kind or direction.

        Use it to walk the graph around an item (what it depends on, what contradicts
        it). Not for finding items by topic: use engram_search.
        """
        vault = box.vault()
        found = vault.synapses(ref, kind=kind, direction=direction)[:limit]
        title = title_lookup(vault)
        return SynapseList(synapses=[views.synapse_view(s, title) for s in found], count=len(found))

    @box.tool("synapse_delete", title="Remove a link", profile="full", annotations=REMOVE)
    def synapse_delete(
        synapse_id: Annotated[str | None, Field(description="The synapse id; or give source, kind and target.")] = None,
        source: Annotated[str | None, Field(description=_ITEM_REF)] = None,
        kind: Annotated[
            str | None, Field(description="The relation.", json_schema_extra={"enum": [*SYNAPSE_KINDS, None]})
        ] = None,
        target: Annotated[str | None, Field(description=_ITEM_REF)] = None,
    ) -> SynapseView:
        """Remove one synapse, named by its id or by source, kind and target.

        Use it when a link is wrong. If the relation merely changed (one item now
        supersedes the other), create the new link instead of deleting history.
        Returns the removed synapse.
        """
        vault = box.vault()
        if synapse_id is not None:
            if source is not None or kind is not None or target is not None:
                raise InvalidInput(
                    "give either synapse_id or source, kind and target, not both.",
                    hint="Pass synapse_id alone.",
                )
            syn = vault.synapse(synapse_id)
            source, kind, target = syn.source, syn.kind, syn.target
        if source is None or kind is None or target is None:
            raise InvalidInput(
                "name the synapse: synapse_id, or source, kind and target.",
                hint="synapse_list(ref='<item>') shows an item's synapses with their ids.",
            )
        title = title_lookup(vault)
        removed = vault.unlink(source, kind, target)
        return views.synapse_view(removed, title, framed=True)
