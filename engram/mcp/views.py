"""Core values → the models tools return, at a disclosure tier.

Tiers nest: ``catalog`` (id, title, kind, domain, path, status, version — enough to
decide whether to look closer) ⊂ ``digest`` (plus summary or the start of the body,
tags, scores, who changed it last) ⊂ ``content`` (plus the body, provenance and the
item's synapses). ``auto`` picks the deepest tier whose estimated size fits a token
budget, so an agent can ask for "as much as fits" without a second call.

Token estimates are ``ceil(characters / 4)`` of the JSON a client receives: rough, but
monotone in the text and free to compute.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal

from engram.errors import InvalidInput
from engram.index.wikilinks import LINK_KIND, LINK_WEIGHT
from engram.items.links import WikiLinks
from engram.mcp.errors import to_json
from engram.mcp.models import UNTRUSTED_FRAME, WITHHELD_TITLE, EdgeView, ItemView, SynapseView, Tier
from engram.store.model import Engram, Synapse

TierArg = Literal["catalog", "digest", "content", "auto"]
TIERS: tuple[Tier, ...] = ("catalog", "digest", "content")
EXCERPT_CHARS = 280
DEFAULT_TOKEN_BUDGET = 2_000


def estimate_tokens(data: Any) -> int:
    return math.ceil(len(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) / 4)


def excerpt(content: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a body, cut at a word boundary."""
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut + "…"


def item_view(
    item: Engram, tier: Tier, edges: list[EdgeView] | None = None
) -> ItemView:
    view: dict[str, Any] = {
        "tier": tier,
        "id": item.id,
        "title": item.title,
        "kind": item.kind,
        "domain": item.domain,
        "path": item.path,
        "status": item.status,
        "version": item.version,
    }
    if tier in ("digest", "content"):
        view.update(
            summary=item.summary or None,
            tags=list(item.tags),
            importance=item.importance,
            confidence=item.confidence,
            visibility=item.visibility,
            updated_at=item.updated_at or None,
            updated_by=item.updated_by or None,
        )
        if tier == "digest" and not item.summary and item.content.strip():
            view["excerpt"] = excerpt(item.content)
    if tier == "content":
        view.update(
            content=item.content,
            created_at=item.created_at or None,
            created_by=item.created_by or None,
            source_type=item.source_type,
            verification_status=item.verification_status,
            reinforcement_score=item.reinforcement_score,
            retrieval_count=item.retrieval_count,
            superseded_by=item.superseded_by,
            extra=_plain(dict(item.extra)) if item.extra else None,
            synapses=edges or [],
        )
    return ItemView(**view)


def item_at_budget(
    item: Engram, tier: TierArg, budget: int, edges: Callable[[], list[EdgeView]], role: str
) -> ItemView:
    """The item at ``tier`` as a session of ``role`` may see it (:func:`guarded_view`),
    with its ``tokens``; for ``auto``, the deepest tier whose view — ``tokens`` included,
    the untrusted-data frame every answer carries not — fits ``budget``.

    ``edges`` is called only when the content tier is built (it reads neighbours).
    Raises InvalidInput when even the catalog view does not fit: the budget is a bound,
    and the error names the budget that fits and ``tier='catalog'``."""
    candidates: tuple[Tier, ...] = TIERS[::-1] if tier == "auto" else (tier,)
    view = None
    for candidate in candidates:
        view = _counted(guarded_view(item_view(item, candidate, edges() if candidate == "content" else None),
                                     item, role))
        if tier != "auto" or (view.tokens or 0) <= budget:
            return view
    assert view is not None
    raise InvalidInput(
        f"token_budget={budget} is smaller than this item's smallest view ({view.tokens} tokens).",
        field="token_budget",
        hint=f"Ask with token_budget={view.tokens}, or tier='catalog' (no budget).",
    )


def _counted(view: ItemView) -> ItemView:
    """``view`` with ``tokens`` set to the estimate of itself, that field included."""
    size = len(json.dumps(to_json(view), ensure_ascii=False, separators=(",", ":")))
    count = math.ceil(size / 4)
    while True:  # the count's own digits are part of what it counts
        total = math.ceil((size + len(',"tokens":') + len(str(count))) / 4)
        if total == count:
            return view.model_copy(update={"tokens": count})
        count = total


def edge_views(
    item_id: str, synapses: list[Synapse], title_of: Callable[[str], str | None]
) -> list[EdgeView]:
    out: list[EdgeView] = []
    for syn in synapses:
        other = syn.other(item_id)
        if syn.symmetric:
            direction: Literal["out", "in", "both"] = "both"
        else:
            direction = "out" if syn.source == item_id else "in"
        out.append(
            EdgeView(
                id=syn.id,
                kind=syn.kind,
                direction=direction,
                other=other,
                other_title=title_of(other),
                weight=syn.weight,
            )
        )
    return out


def synapse_view(
    syn: Synapse, title_of: Callable[[str], str | None] | None = None, *, framed: bool = False
) -> SynapseView:
    """``syn`` as a tool returns it; ``framed``: a result of its own (it carries evidence
    and titles: stored text) gets the untrusted-data frame."""
    return SynapseView(
        frame=UNTRUSTED_FRAME if framed else None,
        id=syn.id,
        source=syn.source,
        target=syn.target,
        kind=syn.kind,
        weight=syn.weight,
        evidence=[_plain(e.to_meta()) for e in syn.evidence],
        created_by=syn.created_by,
        created_at=syn.created_at,
        updated_at=syn.updated_at,
        path=syn.path,
        source_title=title_of(syn.source) if title_of else None,
        target_title=title_of(syn.target) if title_of else None,
    )


def _plain(value: Any) -> Any:
    """JSON-safe copy of frontmatter values (dates and the like become strings)."""
    result: Any = json.loads(json.dumps(value, ensure_ascii=False, default=str))
    return result


WITHHELD = (
    "quarantined: the instruction screen holds this item's text back from every reader but curators "
    "(a curator reviews it with engram_quarantine_list and may release it)."
)


def guarded_view(view: ItemView, item: Engram, role: str, *, framed: bool = False) -> ItemView:
    """``view`` as a session of ``role`` may see it: a quarantined item's text is left out
    unless the session is a curator's; ``framed`` adds the untrusted-data frame."""
    update: dict[str, Any] = {"frame": UNTRUSTED_FRAME} if framed else {}
    if item.status == "quarantined" and role != "curator":
        update.update(
            title=WITHHELD_TITLE, summary=None, excerpt=None, content=None, tags=None,
            extra=None, withheld=WITHHELD,
        )
    return view.model_copy(update=update) if update else view


def wikilink_views(item_id: str, links: WikiLinks, title_of: Callable[[str], str | None]) -> list[EdgeView]:
    """The resolved wikilinks around an item as edges of kind ``links_to`` (id ``wikilink``:
    derived from the text of notes, no synapse file)."""
    out: list[EdgeView] = []
    seen: set[tuple[str, str]] = set()
    for row, direction in [*((r, "out") for r in links.outgoing), *((r, "in") for r in links.incoming)]:
        other = row.target_id if direction == "out" else row.source_id
        if row.status != "ok" or other is None or other == item_id or (direction, other) in seen:
            continue
        seen.add((direction, other))
        out.append(
            EdgeView(
                id="wikilink", kind=LINK_KIND, direction="out" if direction == "out" else "in",
                other=other, other_title=title_of(other), weight=LINK_WEIGHT,
            )
        )
    return out
