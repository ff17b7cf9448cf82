"""Scope and capture tools: endorse, promote, review_promotions, generalize, sync_scopes,
distill, record_need, observe — cambium's verbs, as thin wrappers over the vault
(:mod:`engram.scopes`)."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from engram.mcp.errors import tools_phrasing
from engram.mcp.models import UNTRUSTED_FRAME
from engram.mcp.models_scopes import (
    DistillOut,
    EndorseOut,
    NeedOut,
    ObserveOut,
    PromoteOut,
    PromotionOut,
    ReviewOut,
    ScopesSyncOut,
    SourceOut,
    StandingOut,
)
from engram.mcp.registry import ADD, NETWORK, READ, OptionalText, Toolbox
from engram.scopes.promotion import Promotion, Standing

#: distill reads other repositories (a board may be a URL) and writes only what changed.
CAPTURE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True)

Ref = Annotated[str, Field(description="The item: its id (or first 6+ characters), path or exact title.")]


def standing_out(s: Standing) -> StandingOut:
    return StandingOut(
        id=s.id, title=s.title, scope=s.scope, target=s.target, recalled_by=list(s.recalled_by),
        recall_days=list(s.recall_days), endorsed_by=list(s.endorsed_by), eligible=s.eligible, ready=s.ready,
        needs=list(s.needs), tells=list(s.tells), suggestion=s.suggestion,
    )


def promotion_out(p: Promotion) -> PromotionOut:
    return PromotionOut(
        id=p.id, title=p.title, source=p.source, to=p.to, status=p.status,  # type: ignore[arg-type]
        message=p.message, org_id=p.org_id, branch=p.branch, pushed=p.pushed, pr_url=p.pr_url,
        commands=list(p.commands), tells=list(p.tells), suggestion=p.suggestion,
    )


def register(box: Toolbox) -> None:
    @box.tool("endorse", title="Vouch for an item", profile="full", annotations=ADD)
    def endorse(
        ref: Ref,
        note: Annotated[str, Field(description="Why it holds, e.g. 'hit this in prod; the fix is exact'.")] = "",
    ) -> EndorseOut:
        """Vouch for an item you have confirmed is right: the trust signal that a
        promotion to org requires (recalls alone never reach org).

        Use it after the item proved correct in your work, with a note saying why; the
        note is shown to whoever reviews the promotion and is often the general lesson.
        Endorsing an org item (one that came from another team) records it there. Not
        for reporting that an item helped once: use close_learning_loop or engram_reinforce.
        """
        item, scope = box.vault().endorse(ref, note)
        count = len(item.endorsements or ())
        return EndorseOut(id=item.id, title=item.title, scope=scope, endorsements=count, version=item.version,
                          message=f"Endorsed ({count} endorsement(s)). promote(ref='{item.id}', to='org') may "
                          "follow once it is eligible; review_promotions() shows what it needs.")

    @box.tool("promote", title="Move knowledge up a scope", profile="full", annotations=NETWORK)
    def promote(
        ref: Annotated[OptionalText, Field(description="The item; omit to promote every eligible item.")] = None,
        to: Annotated[
            str | None, Field(description="team or org (default: one step up; with no ref, team).",
                              json_schema_extra={"enum": ["team", "org", None]}),
        ] = None,
        org_content: Annotated[
            OptionalText,
            Field(description="The general restatement of a project-specific body; it becomes the org body and "
                  "the concrete body is kept as the example."),
        ] = None,
        force: Annotated[bool, Field(description="Override eligibility and the org gate (audited).")] = False,
    ) -> PromoteOut:
        """Promote knowledge one scope up as it earns trust: private → team → org.

        Eligible means recalled by enough distinct agents or on enough distinct days, or
        endorsed; org also requires an endorsement and a body that names no project,
        file path, test id, ticket or decision id — when it does, the call is refused
        with the tells found and a suggested restatement to pass as org_content. The org
        copy keeps the id and records where it came from; it is pushed to the org vault,
        or to a review branch when the org vault asks for review. With no ref, every
        eligible item moves one step. Check review_promotions() first; use force only
        deliberately. An item holding a secret, personal data or instruction-shaped text
        is refused (force does not override that); the error says what was found.
        """
        steps = box.vault().promote(ref, to, org_content=org_content, force=force)
        done = sum(s.status in ("promoted", "duplicate", "pending_review") for s in steps)
        message = f"{done} of {len(steps)} promoted or waiting for review." if steps else (
            "Nothing is eligible yet; review_promotions() shows what each item needs.")
        return PromoteOut(promotions=[promotion_out(s) for s in steps], message=message)

    @box.tool("review_promotions", title="What is ready to move up", profile="full", annotations=READ)
    def review_promotions() -> ReviewOut:
        """List what may move up a scope and what it still needs, promotions waiting for
        review on an org branch, and org items whose body reads project-specific (with
        the tells and a suggested restatement for generalize).

        Use it before promote, or to see whether knowledge is earning its way up. Read-only.
        Titles and suggested restatements are stored text (org items come from other
        teams), marked as untrusted data by the result's `frame` field.
        """
        r = box.vault().review_promotions()
        return ReviewOut(
            eligible=[standing_out(s) for s in r.eligible], pending=[promotion_out(p) for p in r.pending],
            needs_generalization=[standing_out(s) for s in r.needs_generalization],
            org_configured=r.org_configured, min_agents=r.min_agents, min_days=r.min_days,
            message=f"{len(r.eligible)} eligible, {len(r.pending)} pending review, "
            f"{len(r.needs_generalization)} org item(s) to restate."
            + ("" if r.org_configured else " No org vault is configured: setup(org_repo=...)."),
        )

    @box.tool("generalize", title="Restate an org item generally", profile="full", annotations=NETWORK)
    def generalize(
        ref: Ref,
        org_content: Annotated[
            OptionalText, Field(description="The general rule (default: the latest general endorsement note).")
        ] = None,
        note: Annotated[OptionalText, Field(description="Also endorse it with this note.")] = None,
        force: Annotated[bool, Field(description="Accept a restatement the gate still refuses (audited).")] = False,
    ) -> PromotionOut:
        """Restate an item already in org as the cross-project rule; its concrete body is
        kept as the example.

        Use it on what review_promotions lists under needs_generalization (items that
        crossed before the gate, or were forced). The restatement must pass the gate
        itself. For a team item on its way to org, pass org_content to promote instead.
        """
        step = promotion_out(box.vault().generalize(ref, org_content, note=note, force=force))
        return step.model_copy(update={"frame": UNTRUSTED_FRAME})

    @box.tool("sync_scopes", title="Sync the org vault", profile="standard", annotations=NETWORK)
    def sync_scopes() -> ScopesSyncOut:
        """Bring this machine's clone of the org vault level with the org repository
        (cloning it the first time): fetch, merge field by field, push.

        Use it when engram_search should see other teams' latest org knowledge, or after
        a review branch was merged. engram_sync shares the team vault; this is the org vault.
        """
        report, settled = box.vault().sync_scopes()
        return ScopesSyncOut(
            branch=report.branch, remote=report.remote, pushed=report.pushed, fetched=report.fetched,
            offline=report.offline, settled=settled,
            message=tools_phrasing("org vault: " + "; ".join(report.lines()) + "."),
        )

    @box.tool("distill", title="Capture work that already happened", profile="full", annotations=CAPTURE)
    def distill(
        agentsync: Annotated[
            OptionalText, Field(description="Repository (path or URL) holding an agentsync board (default: settings).")
        ] = None,
        agentsync_branch: Annotated[OptionalText, Field(description="The board's branch (default agentsync).")] = None,
        context_keeper: Annotated[
            OptionalText, Field(description="A context-keeper .context/ folder (default: settings).")
        ] = None,
    ) -> DistillOut:
        """Turn work that already happened into knowledge, with no copying: finished
        agentsync claims (task, the agent's note, changed files) become outcome items,
        and context-keeper's active decisions and constraints (with their rationale)
        become items; a decision later superseded or deprecated retires its copy.

        Idempotent: re-run it freely (at session end, from a post-commit hook); an
        unchanged source writes nothing. A source that is not wired is reported with the
        fix. Not for recording something new by hand: use engram_create or record_need.
        """
        report = box.vault().distill(agentsync=agentsync, agentsync_branch=agentsync_branch,
                                     context_keeper=context_keeper)
        return DistillOut(
            written=report.written,
            sources=[SourceOut(**s.to_json("mcp")) for s in report.sources],
            message="; ".join(report.lines("mcp")) + ".",
        )

    @box.tool("record_need", title="Record a gap you hit", profile="full", annotations=ADD)
    def record_need(
        content: Annotated[str, Field(description="What is missing, concretely: 'no seed data for staging'.")],
        why: Annotated[str, Field(description="What it blocks or costs; it is what makes the need useful later.")] = "",
        tags: Annotated[list[str] | None, Field(description="Short lowercase words.")] = None,
    ) -> NeedOut:
        """Record a NEED: something missing, wanted or blocking that the team should know
        about.

        Use it when you hit a gap ("no seed data for staging"); the same need recorded
        twice reinforces one item. Not for facts you learned (engram_create) or work that
        happened (distill).
        """
        result = box.vault().record_need(content, why, tags=tags or ())
        messages = {
            "NEW": "Recorded the need.",
            "DUPLICATE": "The team knew this need already; it was reinforced.",
            "UPDATE": "A near-identical need exists (id); nothing was written. engram_update it instead.",
        }
        return NeedOut(outcome=result.outcome, id=result.id, path=result.item.path,
                       message=result.note or messages.get(result.outcome, result.outcome))

    @box.tool("observe", title="Note what happened; keep what is reusable", profile="standard", annotations=ADD)
    def observe(
        text: Annotated[str, Field(description="What happened, in a sentence or two: the decision and its reason.")],
        domain: Annotated[str, Field(description="Where an accepted proposal files the item, e.g. 'ops/postgres'.")]
        = "captured",
        tags: Annotated[list[str] | None, Field(description="Tags for the item.")] = None,
    ) -> ObserveOut:
        """Pass what just happened in your session; a reusable decision or lesson becomes a
        capture proposal, never an item directly.

        Cheap rules drop mechanical repetition (action logs like 'ran the tests', command
        lines, output, text seen before or already in the vault), then a necessity check
        keeps what states a reason, an alternative, a rule or a finding. Call it freely at
        decision points; the answer says which layer decided and why. Text holding a
        secret or personal data, or written as instructions to its reader, is refused (a
        tool error; nothing filed): proposals are committed and read by agents. For
        knowledge you are sure of, use engram_create. A person accepts proposals
        (`engram accept`), or an agent with the full tool profile.
        """
        v = box.vault().observe(text, domain=[p for p in domain.split("/") if p], tags=tags or ())
        return ObserveOut(decision=v.decision, layer=v.layer, reason=v.reason,  # type: ignore[arg-type]
                          score=v.score, markers=list(v.markers), proposal=v.proposal, existing=v.existing)
