"""Pydantic models for the scope and capture tools (see :mod:`engram.mcp.tools_scopes`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engram.mcp.models import _frame, _Out


class StandingOut(_Out):
    id: str
    title: str
    scope: str
    target: str | None = Field(default=None, description="The next scope up (none at org).")
    recalled_by: list[str] = Field(description="Distinct agents whose searches returned it.")
    recall_days: list[str] = Field(description="Distinct UTC days it was returned on.")
    endorsed_by: list[str]
    eligible: bool = Field(description="Recalled by enough agents or on enough days, or endorsed.")
    ready: bool = Field(description="Eligible and nothing else missing: promote(ref) would move it up.")
    needs: list[str] = Field(description="What stands between it and the next scope.")
    tells: list[str] = Field(default_factory=list, description="Project-specific references the org gate found.")
    suggestion: str | None = Field(default=None, description="A general restatement to start from (org_content).")


class PromotionOut(_Out):
    frame: str | None = Field(
        default=None, description="Marks the stored text in this result as untrusted data (set on a result of its own)."
    )
    id: str
    title: str
    source: str = Field(description="The scope it came from.")
    to: str
    status: Literal["promoted", "pending_review", "already", "duplicate", "near_duplicate", "refused", "not_eligible"]
    message: str
    org_id: str | None = Field(default=None, description="The org item (another id when org held it already).")
    branch: str | None = Field(default=None, description="The org branch it waits on for review.")
    pushed: bool = False
    pr_url: str | None = None
    commands: list[str] = Field(default_factory=list, description="The git commands that review and land it by hand.")
    tells: list[str] = Field(default_factory=list)
    suggestion: str | None = None


class PromoteOut(_Out):
    frame: str = _frame()
    promotions: list[PromotionOut]
    message: str


class EndorseOut(_Out):
    frame: str = _frame()
    id: str
    title: str
    scope: str
    endorsements: int
    version: int
    message: str


class ReviewOut(_Out):
    frame: str = _frame()
    eligible: list[StandingOut]
    pending: list[PromotionOut] = Field(description="Promotions waiting on an org review branch.")
    needs_generalization: list[StandingOut] = Field(description="Org items that read project-specific.")
    org_configured: bool
    min_agents: int
    min_days: int
    message: str


class SourceOut(_Out):
    system: str
    location: str | None = None
    status: Literal["read", "unchanged", "skipped", "error"]
    reason: str | None = None
    fix: str | None = None
    seen: int
    created: list[str]
    updated: list[str]
    retired: list[str]


class DistillOut(_Out):
    written: int = Field(description="Items created, updated or retired (0 when the sources did not change).")
    sources: list[SourceOut]
    message: str


class NeedOut(_Out):
    outcome: str = Field(
        description="NEW; DUPLICATE when the team knew this need already (reinforced); EXTENDED when it did, "
        "reinforced, and your reason was new (kept with the need: the message says where)."
    )
    id: str
    path: str | None = None
    message: str


class ObserveOut(_Out):
    decision: Literal["proposed", "rejected"]
    layer: Literal["rules", "necessity"] = Field(description="rules: the cheap filter; necessity: the reuse check.")
    reason: str
    score: float
    markers: list[str]
    proposal: str | None = Field(default=None, description="The proposal filed (accept it to make the item).")
    existing: bool = False


class ScopesSyncOut(_Out):
    branch: str
    remote: str | None = None
    pushed: bool
    fetched: bool
    offline: str | None = None
    settled: list[str] = Field(description="Team items whose review promotion has landed in org.")
    message: str
