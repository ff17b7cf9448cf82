"""Learning and lifecycle tools: learn, feedback, lineage, verification, proposals, skills.

Thin wrappers over :mod:`engram.lifecycle` through the vault. ``engram_learn`` may ask
the client's model to confirm a destructive verdict (``contradicts``) when the client
advertises sampling: the question is asked by a resolver before the tool body runs, with
the lifecycle ``samplingBudgetSeconds``; the answer (or its absence) is handed to
``learn``, which applies it only if its own verdict, taken under the vault lock, is still
about the same item — and the result's ``decided_by`` says which path decided.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.shared.message import ServerMessageMetadata
from mcp.types import CreateMessageRequest, CreateMessageResult, SamplingMessage, TextContent
from pydantic import Field

from engram.lifecycle import judging
from engram.lifecycle.classify import Lesson, classify, compared_text
from engram.lifecycle.learning import Confirmation, LearnResult, candidates_of, lessons_of
from engram.lifecycle.proposals import PROPOSAL_KINDS, Proposal
from engram.lifecycle.resolve import RESOLUTIONS
from engram.lifecycle.settings import lifecycle_settings
from engram.mcp import models_lifecycle as m
from engram.mcp.models import UNTRUSTED_FRAME, Held
from engram.mcp.registry import ADD, CHANGE, READ, OptionalText, Toolbox
from engram.store.model import ENGRAM_KINDS

Ref = Annotated[str, Field(description="An item id (or its first 6+ characters), vault-relative path, or exact title.")]
Confidence = Annotated[float, Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1: scales the importance change.")]
Note = Annotated[OptionalText, Field(description="Why, in a sentence (kept in the audit log).")]
PropRef = Annotated[str, Field(description="The proposal id (prop-…), or its first 8+ characters.")]

#: Questions asked over the modern protocol, by their text: when they were first asked,
#: so an answer that arrives after the budget is not used.
_ASKED: dict[str, float] = {}


def _learn_out(result: LearnResult) -> m.LearnOut:
    item, target, verdict = result.item, result.target, result.verdict
    return m.LearnOut(
        action=result.action, relation=verdict.relation, decided_by=verdict.decided_by,
        id=item.id if item else None, path=item.path if item else None,
        version=item.version if item else None, target=target.id if target else None,
        target_status=target.status if target else None, proposal=result.proposal,
        reasons=list(verdict.reasons), comparisons=[c.to_json() for c in verdict.comparisons],
        message=result.message,
        quarantined=Held(**result.quarantine.to_json()) if result.quarantine else None,
        question=result.question.to_json() if result.question else None,
    )


def _question(lesson: str, existing: str) -> str:
    return (
        "Two statements from a team's knowledge base. Answer YES if the NEW statement "
        "contradicts the EXISTING one (both cannot be true at once, so NEW should replace it), "
        "or NO if they can both hold. Answer with YES or NO, then one short reason.\n\n"
        f"EXISTING: {existing[:2000]}\n\nNEW: {lesson[:2000]}"
    )


def _answer(result: CreateMessageResult, target: str, relation: str, started: float) -> Confirmation:
    text = result.content.text if isinstance(result.content, TextContent) else ""
    word = text.strip().split(None, 1)[0].strip(".,:!").upper() if text.strip() else ""
    seconds = round(time.monotonic() - started, 3)
    if word not in ("YES", "NO"):
        return Confirmation(target, relation, "error", text[:200], seconds)
    return Confirmation(target, relation, "agree" if word == "YES" else "disagree", text[:500], seconds)


def _offline(box: Toolbox, content: str, situation: str | None) -> tuple[str, str, float] | None:
    """(target, its text, sampling budget) when the offline verdict is destructive."""
    with box.holder.use() as vault:
        if vault is None:
            return None
        state = vault.state
        settings = lifecycle_settings(state)
        found = candidates_of(state, content, situation, settings.candidates)
        verdict = classify(Lesson(content, situation), lessons_of(found))
        if verdict.relation != "contradicts" or verdict.target is None:
            return None
        text = next(compared_text(c) for c, _ in found if c.id == verdict.target)
        return verdict.target, text, settings.sampling_budget_seconds


def _box(ctx: Context) -> Toolbox:
    box: Toolbox = ctx.mcp_server.engram_toolbox  # type: ignore[attr-defined]
    return box


async def ask_model(content: str, ctx: Context, situation: str | None = None, confirm: bool = True) -> Any:
    """Resolver: the model's answer about a destructive verdict, or why there is none."""
    if not confirm or not content.strip():
        return None
    box = _box(ctx)
    try:
        found = await anyio.to_thread.run_sync(lambda: _offline(box, content, situation))
    except Exception:  # noqa: BLE001 - the tool body reports real errors; no question then
        return None
    if found is None:
        return None
    target, existing, budget = found
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        return Confirmation(target, "contradicts", "unavailable")
    question = _question(content, existing)
    sample = Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=question))],
        max_tokens=100, system_prompt="You check facts for consistency. Be brief.",
    )
    if (ctx.protocol_version or "") >= "2026-07-28":
        # Modern protocol: the SDK carries the question in an input-required round trip;
        # the budget runs from when it was first asked.
        for asked, since in list(_ASKED.items()):  # questions nobody answered
            if time.monotonic() - since > 10 * max(budget, 1.0):
                _ASKED.pop(asked, None)
        first = _ASKED.setdefault(question, time.monotonic())
        if time.monotonic() - first > budget:
            _ASKED.pop(question, None)
            return Confirmation(target, "contradicts", "timeout", seconds=budget)
        return sample
    started = time.monotonic()
    with anyio.move_on_after(budget) as scope:
        result = await ctx.session.send_request(
            CreateMessageRequest(params=sample.params), CreateMessageResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
        return _answer(result, target, "contradicts", started)
    if scope.cancelled_caught:
        return Confirmation(target, "contradicts", "timeout", seconds=budget)
    return None  # pragma: no cover - move_on_after either returns above or is cancelled


async def confirmation(
    content: str, ctx: Context, answer: Annotated[Any, Resolve(ask_model)], situation: str | None = None
) -> Confirmation | None:
    """Resolver: the answer as a :class:`Confirmation` (a sampled result is judged here)."""
    if answer is None or isinstance(answer, Confirmation):
        return answer
    if isinstance(answer, CreateMessageResult):
        box = _box(ctx)
        found = await anyio.to_thread.run_sync(lambda: _offline(box, content, situation))
        if found is None:
            return None
        asked = _ASKED.pop(_question(content, found[1]), time.monotonic())
        if time.monotonic() - asked > found[2]:
            return Confirmation(found[0], "contradicts", "timeout", seconds=found[2])
        return _answer(answer, found[0], "contradicts", asked)
    return None


def register(box: Toolbox) -> None:
    @box.tool("engram_learn", title="Learn a lesson", profile="minimal", annotations=CHANGE)
    def engram_learn(
        content: Annotated[str, Field(description="The lesson, in a sentence or a few: what is true or what to do.")],
        situation: Annotated[OptionalText, Field(description="When it holds, e.g. 'deploying the API to staging'.")] = None,
        title: Annotated[OptionalText, Field(description="Title for a new item (default: the first sentence).")] = None,
        domain: Annotated[str | None, Field(description="Domain for a new item, e.g. 'ops/postgres' (default: the related item's).")] = None,
        kind: Annotated[str | None, Field(description="Kind for a new item.", json_schema_extra={"enum": [*ENGRAM_KINDS, None]})] = None,
        dry_run: Annotated[bool, Field(description="Only classify; write nothing.")] = False,
        confirm: Annotated[bool, Field(description="Ask your model to confirm before superseding (when the client supports sampling).")] = True,
        judge: Annotated[bool, Field(description="When engram is unsure, ask you instead of guessing: the answer is action needs_judgment with a question, and nothing is written until you call again with judgment.")] = True,
        judgment: Annotated[m.JudgmentIn | None, Field(description="Your answer to a needs_judgment question, with the same content.")] = None,
        answer: Annotated[Confirmation | None, Resolve(confirmation)] = None,
    ) -> m.LearnOut:
        """Record what you learned; engram decides whether it is new, known, an extension or a correction.

        Use it instead of engram_create for lessons and facts the vault may hold in some
        form. Against the closest items: a duplicate reinforces the original (new
        sentences appended); a contradiction supersedes the old item (kept as history,
        linked) or, for another author's item, records a disputed draft for a curator;
        anything else is inserted and linked to the nearest related item. Unsure verdicts
        never replace anything. A lesson written as instructions to future agents is
        quarantined (action quarantined): kept for a curator, acting on no other item,
        with the screen's rules in `quarantined`. The result says what happened, why, and
        what decided. When engram is unsure (a supersession, or a lesson close in meaning
        to an item the rules call different), the action is needs_judgment: read
        `question`, decide, and call again with the same content and `judgment`
        (relation, target, version); it is applied only if the target is unchanged.
        """
        vault = box.vault()
        result = vault.learn(
            content, situation, title=title, domain=domain or None, kind=kind, dry_run=dry_run,
            confirmation=answer if judgment is None else None, judge=judge,
            judgment=judging.judgment(judgment.model_dump()) if judgment is not None else None,
        )
        return _learn_out(result)

    def _feedback(ref: str, outcome: str, confidence: float, note: str | None) -> m.FeedbackOut:
        result = box.vault().feedback(ref, outcome, confidence=confidence, note=note)
        data = result.to_json()
        return m.FeedbackOut(
            id=result.id, outcome=result.outcome, confidence=result.confidence, changes=data["changes"],
            proposals=list(result.proposals), success_rate=result.success_rate, pending=True,
            message=result.message,
        )

    @box.tool("engram_reinforce", title="It helped", profile="full", annotations=ADD)
    def engram_reinforce(ref: Ref, confidence: Confidence = 1.0, note: Note = None) -> m.FeedbackOut:
        """Say that an item helped: its importance rises (a bounded step scaled by confidence),
        strongly linked items share a little, and for a skill its success count grows.

        Use it after acting on knowledge from engram_search / engram_get that worked.
        Not for editing the item (engram_update) or for things that failed
        (engram_report_failure). Applied to the files at the next flush or sync.
        """
        return _feedback(ref, "helped", confidence, note)

    @box.tool("engram_report_failure", title="It did not help", profile="full", annotations=ADD)
    def engram_report_failure(ref: Ref, confidence: Confidence = 1.0, note: Note = None) -> m.FeedbackOut:
        """Say that an item was used and did not help (or was wrong): its importance falls.

        Repeated failure proposes archiving it (a proposal; nothing is archived unasked).
        If the item is wrong rather than unhelpful, also record the correct lesson with
        engram_learn, which supersedes it.
        """
        return _feedback(ref, "failed", confidence, note)

    @box.tool("close_learning_loop", title="Report how knowledge worked out", profile="standard", annotations=ADD)
    def close_learning_loop(
        id: Ref,
        outcome: Annotated[str, Field(json_schema_extra={"enum": ["success", "partial", "failure"]})],
        effectiveness: Annotated[float | None, Field(ge=0.0, le=1.0, description="How well it worked (default 1 success, 0.5 partial, 0 failure).")] = None,
        reason: Note = None,
    ) -> m.FeedbackOut:
        """Report how an item you relied on worked out: success or partial raises its
        importance (scaled by effectiveness; partial counts half), failure lowers it
        (scaled by 1 − effectiveness).

        Use it at the end of a task that used an item from engram_search / engram_get. If
        the item was wrong, not just unhelpful, also record the right lesson with
        engram_learn (it supersedes the item). Not for editing it: engram_update.
        """
        if outcome not in ("success", "partial", "failure"):
            from engram.errors import InvalidInput

            raise InvalidInput(f"outcome must be success, partial or failure, not {outcome!r}.", field="outcome",
                               hint="e.g. outcome='success'.")
        eff = effectiveness if effectiveness is not None else {"success": 1.0, "partial": 0.5, "failure": 0.0}[outcome]
        if outcome == "failure":
            return _feedback(id, "failed", round(1.0 - eff, 6), reason)
        return _feedback(id, "helped", round(eff * (0.5 if outcome == "partial" else 1.0), 6), reason)

    @box.tool("get_evolution_lineage", title="Where an item came from", profile="full", annotations=READ)
    def get_evolution_lineage(ref: Ref) -> m.LineageOut:
        """An item's lineage: what it superseded, absorbed or derives from (ancestors), and
        what superseded, absorbed or derives from it (descendants).

        Also names the current item of its chain. Use it before relying on an old item,
        or to see why one changed. Not a search tool.
        """
        data = box.vault().lineage(ref).to_json()
        return m.LineageOut(**data)

    @box.tool("verify_entry", title="Confirm an item still holds", profile="full", annotations=CHANGE)
    def verify_entry(
        id: Ref,
        note: Note = None,
        valid_while: Annotated[OptionalText, Field(description="The premise it holds under, e.g. 'while we run Postgres 15'.")] = None,
    ) -> m.VerifyOut:
        """Record that you checked the item and it still holds.

        lastVerifiedAt is stamped and it becomes verified. Use it when stale_report lists
        something you confirmed. Disputed items need contradiction_resolve instead.
        """
        item = box.vault().verify_entry(id, note, valid_while=valid_while)
        return m.VerifyOut(id=item.id, path=item.path, version=item.version,
                           verification_status=item.verification_status,
                           last_verified_at=item.last_verified_at, message=f"{item.id} verified.")

    @box.tool("upgrade_verification", title="Raise an item's verification", profile="full", annotations=CHANGE)
    def upgrade_verification(ref: Ref, evidence: Annotated[str, Field(description="What shows it holds.")]) -> m.VerifyOut:
        """Move an item one verification step up on evidence.

        unverified → plausible → probable → verified (stale → plausible); each step is an
        event in its verifications list. Use it when something shows the item holds; to
        confirm a stale item you checked yourself, use verify_entry. A refuted item is
        refused: only verify_entry (a new check) lifts it.
        """
        item = box.vault().upgrade_verification(ref, evidence)
        return m.VerifyOut(id=item.id, path=item.path, version=item.version,
                           verification_status=item.verification_status,
                           last_verified_at=item.last_verified_at,
                           message=f"{item.id} is now {item.verification_status}.")

    @box.tool("refute_entry", title="Record that an item was found false", profile="full", annotations=CHANGE)
    def refute_entry(
        id: Ref,
        evidence: Annotated[str, Field(description="What shows it is false, e.g. 'the bucket deletes logs after 7 days'.")],
    ) -> m.VerifyOut:
        """Mark an item refuted on evidence that it is false.

        The item and its text are kept (it records what was found false) and the
        evidence becomes an event in its verifications list. Use it when you find a
        stored claim wrong and have no corrected lesson; when you do, engram_learn the
        correction instead (it supersedes the old item). Only verify_entry lifts a
        refuted item again.
        """
        item = box.vault().refute(id, evidence)
        return m.VerifyOut(id=item.id, path=item.path, version=item.version,
                           verification_status=item.verification_status,
                           last_verified_at=item.last_verified_at,
                           message=f"{item.id} is refuted: {evidence.strip()}")

    @box.tool("contradiction_resolve", title="Settle two items that disagree", profile="full", annotations=CHANGE)
    def contradiction_resolve(
        old: Annotated[str, Field(description="The item that was there first.")],
        new: Annotated[str, Field(description="The item that contradicts it (e.g. a disputed lesson).")],
        resolution: Annotated[str, Field(description="keep_new, keep_old, merge or archive.", json_schema_extra={"enum": list(RESOLUTIONS)})],
        note: Note = None,
    ) -> m.ResolveOut:
        """Settle two items that contradict each other.

        keep_new supersedes the old item; keep_old freezes the new one; merge folds the new
        one's text into the old, keeping any claim of new that contradicts old beside old's
        in a marked conflict block (the item is flagged for review); archive freezes both.
        Nothing is deleted. Use it for dispute proposals and contradicts warnings.
        """
        done = box.vault().contradiction_resolve(old, new, resolution, note=note)
        data = done.to_json()
        message = f"{resolution}: kept {len(done.kept)}, retired {len(done.retired)}."
        if done.disputed:
            message += (f" {len(done.disputed)} claim(s) in dispute were kept in a conflict block in"
                        f" {done.kept[0].id}, flagged for review: edit it to what is right.")
        return m.ResolveOut(**data, message=message)

    @box.tool("stale_report", title="Knowledge that may be out of date", profile="full", annotations=READ)
    def stale_report(
        include_fresh: Annotated[bool, Field(description="List every shared item, not only stale ones.")] = False,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many.")] = 50,
    ) -> m.StaleOut:
        """Shared items past their freshness half-life, oldest verified first.

        The half-life depends on kind and importance; each entry names the premises it
        holds under (validWhile). Reports only: confirm with verify_entry, correct with
        engram_learn.
        """
        report = box.vault().stale_report(include_fresh=include_fresh, limit=limit)
        data = report.to_json()
        return m.StaleOut(**data, message=f"{len(report.entries)} item(s) of {report.checked} checked.")

    @box.tool("engram_maintain", title="Run a maintenance stage", profile="full", annotations=ADD)
    def engram_maintain(
        stage: Annotated[str, Field(description="light (fold usage and feedback), deep (+ duplicates, clusters), rem (+ proposals).", json_schema_extra={"enum": ["light", "deep", "rem"]})] = "light",
    ) -> m.MaintainOut:
        """Run a maintenance stage: light, deep or rem.

        It folds journals and writes proposals; it never rewrites knowledge — review the
        proposals with engram_list_proposals. Slow on large vaults (deep, rem).
        """
        report = box.vault().maintain(stage)
        data = report.to_json()
        return m.MaintainOut(**data, message=f"{stage}: {len(report.proposed)} proposal(s) written or refreshed.")

    def _prop(p: Proposal) -> m.ProposalOut:
        return m.ProposalOut(
            id=p.id, kind=p.kind, status=p.status, title=p.title, reason=p.reason, targets=list(p.targets),
            payload=dict(p.payload), score=p.score, path=p.path, created_by=p.created_by,
            created_at=p.created_at, decided_by=p.decided_by, decided_at=p.decided_at, note=p.note,
        )

    @box.tool("engram_list_proposals", title="Changes maintenance proposes", profile="full", annotations=READ)
    def engram_list_proposals(
        status: Annotated[str | None, Field(description="open (default), accepted, dismissed, or null for all.", json_schema_extra={"enum": ["open", "accepted", "dismissed", None]})] = "open",
        kind: Annotated[str | None, Field(description="Only this kind.", json_schema_extra={"enum": [*PROPOSAL_KINDS, None]})] = None,
    ) -> m.ProposalList:
        """Proposals waiting for a decision, highest score first.

        Kinds: archive, forget, merge, pattern, link, retype, verify, stale, dispute.
        Accept or dismiss each with engram_accept_proposal / engram_dismiss_proposal.
        """
        found = box.vault().proposals(status=status, kind=kind)
        return m.ProposalList(proposals=[_prop(p) for p in found], count=len(found),
                              message=f"{len(found)} proposal(s).")

    @box.tool("engram_accept_proposal", title="Carry out a proposal", profile="full", annotations=CHANGE)
    def engram_accept_proposal(
        id: PropRef,
        note: Note = None,
        resolution: Annotated[str | None, Field(description="For a dispute: keep_new (default), keep_old, merge or archive.", json_schema_extra={"enum": [*RESOLUTIONS, None]})] = None,
    ) -> m.ProposalOut:
        """Carry out a proposal and record it accepted.

        Archive, merge, link, verify, … — every change goes through the normal write path
        and is audited. Read it first with engram_list_proposals.
        """
        return _prop(box.vault().accept(id, note=note, resolution=resolution)).model_copy(
            update={"frame": UNTRUSTED_FRAME})

    @box.tool("engram_dismiss_proposal", title="Decline a proposal", profile="full", annotations=CHANGE)
    def engram_dismiss_proposal(id: PropRef, note: Note = None) -> m.ProposalOut:
        """Record a proposal dismissed; nothing else changes.

        It will not be proposed again. Dismissing a dispute keeps the old item (the
        disputed draft is frozen).
        """
        return _prop(box.vault().dismiss(id, note=note)).model_copy(update={"frame": UNTRUSTED_FRAME})

    def _skill(s: Any) -> m.SkillOut:
        return m.SkillOut(id=s.id, title=s.title, path=s.path, steps=list(s.steps),
                          preconditions=list(s.preconditions), successes=s.successes, failures=s.failures,
                          success_rate=s.success_rate, score=s.score, composed_of=list(s.composed_of))

    @box.tool("engram_find_skill", title="Find the skill for a task", profile="standard", annotations=READ)
    def engram_find_skill(
        task: Annotated[str, Field(description="What you are about to do, in a sentence.")],
        limit: Annotated[int, Field(ge=1, le=20, description="At most this many skills.")] = 3,
    ) -> m.SkillList:
        """The team's recorded procedures for a task, best first.

        Ranked by relevance × success rate, with their steps and preconditions. Use it
        before a multi-step task; report how it went with close_learning_loop.
        """
        found = box.vault().find_skill(task, limit=limit)
        return m.SkillList(skills=[_skill(s) for s in found],
                           message=f"{len(found)} skill(s)." if found else "No recorded skill fits; record one with engram_create_skill when you have done it.")

    @box.tool("engram_create_skill", title="Record a skill", profile="standard", annotations=ADD)
    def engram_create_skill(
        title: Annotated[str, Field(description="What the skill does, in one line.")],
        steps: Annotated[list[str], Field(description="The steps, in order; 'skill:ID' inlines a skill there.")],
        preconditions: Annotated[list[str] | None, Field(description="What must hold before it applies.")] = None,
        content: Annotated[str, Field(description="Explanation (default: the numbered steps).")] = "",
        domain: Annotated[str, Field(description="Domain path (default 'skills').")] = "skills",
        components: Annotated[list[str] | None, Field(description="Skills it is made of (ids), in order.")] = None,
    ) -> m.SkillOut:
        """Record a procedure that worked, as a skill with ordered steps and preconditions.

        engram_find_skill offers it next time. Deduplicated like engram_create.
        """
        vault = box.vault()
        made = vault.create_skill(title, steps, content=content, preconditions=preconditions or (),
                                  components=components or (), domain=domain)
        listed = next((s for s in vault.skills(limit=10_000) if s.id == made.id), None)
        if listed is None:
            item = made.item
            return m.SkillOut(id=item.id, title=item.title, path=item.path, steps=list(item.steps or ()),
                              preconditions=list(item.preconditions or ()), successes=0, failures=0, success_rate=0.5,
                              composed_of=list(item.composed_of or ()), frame=UNTRUSTED_FRAME)
        return _skill(listed).model_copy(update={"frame": UNTRUSTED_FRAME})

    @box.tool("skill_invoke", title="Run a skill: its steps, expanded", profile="full", annotations=ADD)
    def skill_invoke(
        id: Ref,
        outcome: Annotated[str | None, Field(description="success or failure, once you know; leave out to start.",
                                             json_schema_extra={"enum": ["success", "failure", None]})] = None,
        note: Note = None,
    ) -> m.SkillInvokeOut:
        """Invoke a skill: its steps with its component skills' steps inlined, in order.

        Records the invocation; pass outcome (success or failure) to feed its success
        rate, in the same call after you ran it, or in a second call. A composed skill
        that reaches itself is refused, naming the cycle. Find skills with
        engram_find_skill.
        """
        run = box.vault().invoke_skill(id, outcome=outcome, note=note)
        s = run.skill
        ask = "" if outcome else " Report how it went: skill_invoke again with outcome success or failure."
        return m.SkillInvokeOut(
            id=s.id, title=s.title, path=s.path, preconditions=list(s.preconditions), successes=s.successes,
            failures=s.failures, success_rate=s.success_rate, composed_of=list(s.composed_of),
            steps=[m.SkillStep(step=x.text, skill=x.skill, title=x.title) for x in run.steps], outcome=outcome,
            frame=UNTRUSTED_FRAME,
            message=f"{len(run.steps)} step(s), success rate {s.success_rate:.0%} of {s.successes + s.failures} "
                    f"reported use(s).{ask}")
