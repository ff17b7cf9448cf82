"""Merge follow-up: statistics, anomalies, and items a merge flagged for review.

Thin wrappers over :mod:`engram.team.mergelog` (the merge records) and
:mod:`engram.team.conflicts` (flagged items, clearing a flag once the text is right).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.mcp.models import (
    AnomalyOut,
    ConflictsOut,
    FlaggedOut,
    ItemView,
    MergeStatsOut,
)
from engram.mcp.registry import CHANGE, READ, Toolbox
from engram.mcp.views import guarded_view, item_view
from engram.team import mergelog

Ref = Annotated[str, Field(description="The flagged item: id (or 6+ leading characters), path or exact title.")]


def register(box: Toolbox) -> None:
    @box.tool("engram_conflicts", title="Items a merge flagged", profile="standard", annotations=READ)
    def engram_conflicts() -> ConflictsOut:
        """List the items a merge flagged for review: two people changed the same lines
        (both versions kept in a '> [!conflict]' block in the body) or the same field, or
        one edited what the other deleted.

        Use it after engram_sync reports flagged items, or before relying on an item
        whose body shows a conflict block. To fix one: engram_get it (content tier),
        engram_update its content to what is right without the block, then
        engram_resolve_conflict.
        """
        found = box.vault().conflicts()
        return ConflictsOut(
            items=[
                FlaggedOut(id=f.id, path=f.path, title=f.title, notes=list(f.notes), conflict_blocks=f.callouts)
                for f in found
            ],
            count=len(found),
            message="No item is flagged." if not found else f"{len(found)} item(s) need a review.",
        )

    @box.tool("engram_resolve_conflict", title="Clear a merge flag", profile="standard", annotations=CHANGE)
    def engram_resolve_conflict(
        ref: Ref,
        force: Annotated[
            bool, Field(description="Clear the flag even though conflict blocks remain (keeps both versions).")
        ] = False,
    ) -> ItemView:
        """Clear an item's merge flag once its text is right (a new version).

        Refused while the body still holds a '> [!conflict]' block, unless force=true:
        first engram_update the content to the reconciled text. Only for items listed by
        engram_conflicts. Returns the item at the digest tier.
        """
        vault = box.vault()
        item = vault.resolve_conflict(ref, force=force)
        return guarded_view(item_view(item, "digest"), item, vault.state.role, framed=True)

    @box.tool("engram_merge_stats", title="Merge statistics", profile="full", annotations=READ)
    def engram_merge_stats(
        days: Annotated[int | None, Field(ge=1, description="Only the last N days (default: all).")] = None,
    ) -> MergeStatsOut:
        """How merges of this clone went: how many, how many resolved without a person,
        conflicts kept, strategies used, and anomalies — files that keep conflicting,
        sides that did not parse, fallbacks to git's text merge.

        Use it to judge whether the team's concurrent editing is healthy or to find the
        items that need splitting or a person's attention. Not about item content.
        """
        vault = box.vault()
        result = mergelog.stats(vault.state.state_dir, days)
        found = mergelog.anomalies(vault.state.state_dir, days)
        if not result.merges:
            message = "No merges recorded yet in this clone."
        else:
            rate = f"{result.resolve_rate:.0%}" if result.resolve_rate is not None else "n/a"
            message = f"{result.merges} merge(s), {rate} without a person; {len(found)} anomaly(ies)."
        return MergeStatsOut(
            days=result.days,
            merges=result.merges,
            clean=result.clean,
            kept=result.kept,
            failed=result.failed,
            resolve_rate=result.resolve_rate,
            conflicts_kept=result.conflicts_kept,
            by_kind=dict(result.by_kind),
            by_via=dict(result.by_via),
            by_strategy=dict(result.by_strategy),
            anomalies=[AnomalyOut(code=a.code, path=a.path, count=a.count, detail=a.detail) for a in found],
            message=message,
        )
