"""Sharing: ``engram_sync`` — commit, fetch, merge, push (a thin wrapper over engram.team.sync)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.mcp.errors import tools_phrasing
from engram.mcp.models import HeldFile, SyncOut
from engram.mcp.registry import NETWORK, OptionalText, Toolbox


def register(box: Toolbox) -> None:
    @box.tool("engram_sync", title="Share with the team (git sync)", profile="standard", annotations=NETWORK)
    def engram_sync(
        remote: Annotated[str | None, Field(description="Git remote (default: the branch's upstream, else origin).")] = None,
        branch: Annotated[str | None, Field(description="Remote branch (default: the upstream branch).")] = None,
        push: Annotated[bool, Field(description="Push after merging (false: only bring peers' changes in).")] = True,
        message: Annotated[OptionalText, Field(description="Commit message for local changes.")] = None,
    ) -> SyncOut:
        """Share the vault with teammates: commit local changes, fetch, merge, push.

        Use it when the user asks to share or pull the team's knowledge, or at the end of
        a session that recorded what others need (sessions on this machine share the
        files already). Concurrent edits merge field by field; where both sides changed
        the same lines, both are kept and the item is flagged for a person. Files not
        whole yet (being written, not parsing) are held back and listed (partial=true);
        the next sync takes them. With no remote it only commits; offline, commits wait
        for the next sync. Not for reading.
        """
        report = box.vault().sync(
            remote=remote, branch=branch, push=push, message=message
        )
        return SyncOut(
            branch=report.branch,
            remote=report.remote,
            committed=report.committed,
            fetched=report.fetched,
            fast_forward=report.fast_forward,
            merged=report.merged,
            taken=report.taken,
            flagged=list(report.flagged),
            kept_edits=list(report.kept_edits),
            moved=[[old, new] for old, new in report.moved],
            regenerated=report.regenerated + report.restamped,
            trashed=list(report.trashed),
            held=[HeldFile(path=h.path, reason=h.reason) for h in report.held],
            partial=report.partial,
            retries=list(report.retries),
            review=report.review,
            recovered=list(report.recovered),
            pushed=report.pushed,
            created_upstream=report.created_upstream,
            offline=report.offline,
            attempts=report.attempts,
            message=tools_phrasing("; ".join(report.lines()) + "."),
        )
