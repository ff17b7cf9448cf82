"""``learn(content, situation?)``: fold a lesson into what the vault knows, and explain it.

One call, one hold of the vault lock, so concurrent learners (one MCP server per agent
session) serialise and each sees the last one's result:

1. candidates: the vault's own recall (:func:`engram.recall.search.run`, words and
   meaning, no graph expansion, nothing journaled) over active and draft items, each
   with its cosine with the lesson — a superseded hit hands its place to its
   successor, so a lesson meets the *current* item of a chain;
2. a verdict: :func:`engram.lifecycle.classify.classify`, offline and deterministic,
   optionally confirmed by the client's model (a :class:`Confirmation` the MCP adapter
   obtains by sampling; the answer says which path decided). With ``judge``, a verdict
   engram is unsure of is not acted on but asked about (``needs_judgment``,
   :mod:`engram.lifecycle.judging`), and the caller's ``judgment`` decides the next call;
3. the action, through :mod:`engram.items.writing` (so every screen on the write path
   applies):

   ============ ==============================================================================
   duplicate    reinforce the item (``reinforcementScore`` + 1); any sentence of the lesson
                it lacks is appended — its own text is kept byte for byte
   extends      the same, with the new sentences appended (outcome ``extended``)
   contradicts  insert the lesson and supersede the item (:func:`~engram.lifecycle.
                succession.supersede`: ``supersedes`` edge, ``supersededBy``,
                ``deactivatedAt``, provenance) — or, when the actor may not overturn the
                item's author, insert it as a ``disputed`` draft linked ``contradicts``
                with a ``dispute`` proposal for a curator
   novel        insert; link ``similar_to`` to the nearest related item (``contradicts``
                when a conflict was seen but not trusted enough to act on)
   ============ ==============================================================================

   A person's note (:func:`engram.store.notes.persons_note`: with or without an id of
   its own) is never written into: a duplicate reinforces it beside the note
   (:mod:`engram.items.sidecar`), an extension becomes an item of its own linked
   ``extends`` to it, a contradiction a ``disputed`` draft for a person to decide; the
   links show on the new item only (:func:`engram.items.links.link`).

4. one audit entry ``learn`` per call, whose note states the verdict, the action, the
   target and who decided — so the log accounts for every call, even a duplicate.

``dry_run`` stops after step 2. A novel lesson never changes another item.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from engram.errors import InvalidInput, VersionConflict
from engram.items import links, writing
from engram.items.state import VaultState
from engram.items.writing import CreateResult
from engram.lifecycle import proposals
from engram.lifecycle.classify import (
    COVERED,
    SAME_CLAIM,
    Lesson,
    Verdict,
    classify,
    compared_text,
    lesson_of,
)
from engram.lifecycle.judging import Judgment, Question, question, unsure
from engram.lifecycle.settings import lifecycle_settings
from engram.lifecycle.signals import analyse, sentences
from engram.lifecycle.succession import may_overturn, supersede
from engram.recall.search import run as recall_run
from engram.store import rules
from engram.store.model import Engram, Synapse, now
from engram.store.notes import persons_note
from engram.trust import policy
from engram.trust.policy import Event

Action = Literal[
    "reinforced", "extended", "superseded", "disputed", "linked", "inserted", "quarantined", "none",
    "needs_judgment",
]
DEFAULT_DOMAIN = ("lessons",)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What the client's model said about a destructive verdict (see the MCP adapter).

    ``outcome``: ``agree`` / ``disagree`` (the model answered), ``timeout`` (no answer
    within the budget), ``unavailable`` (the client cannot sample), ``error``.
    """

    target: str | None
    relation: str
    outcome: Literal["agree", "disagree", "timeout", "unavailable", "error"]
    answer: str = ""
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LearnResult:
    """What learn did and why (frozen; ``to_json`` for adapters)."""

    action: Action
    verdict: Verdict
    item: Engram | None  # the item that holds the lesson now (None on a dry run)
    target: Engram | None  # the existing item acted on or linked to
    link: Synapse | None = None
    proposal: str | None = None
    message: str = ""
    #: The screen's verdict when the lesson was held back (action ``quarantined``).
    quarantine: Event | None = None
    #: What the caller's model is asked (action ``needs_judgment``; engram.lifecycle.judging).
    question: Question | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "verdict": self.verdict.to_json(),
            "item": _brief(self.item),
            "target": _brief(self.target),
            "link": self.link.id if self.link else None,
            "proposal": self.proposal,
            "message": self.message,
            "quarantined": self.quarantine.to_json() if self.quarantine else None,
            **({"question": self.question.to_json()} if self.question else {}),
        }


def _brief(item: Engram | None) -> dict[str, Any] | None:
    if item is None:
        return None
    return {"id": item.id, "title": item.title, "path": item.path, "status": item.status,
            "version": item.version}


# Markup a title drops, and only markup: emphasis is a matched pair of ``*``/``_`` runs
# that opens after no word character and closes before none (nor before ``.`` + a word,
# as in ``__init__.py``), so ``db_url_v2``, ``MAX_WORKERS``, ``*.py`` and ``2*3`` keep
# every character — identifiers are the words people search for.
_EMPHASIS = re.compile(r"(?<![\w\\])(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1(?![\w*])(?!\.\w)")
_LINE_MARKUP = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:#{1,6}(?=[ \t]|$))?[ \t]*", re.MULTILINE)


def lesson_title(content: str) -> str:
    """A one-line title from a lesson's first sentence (at most 120 characters).

    Markdown markup is dropped (emphasis pairs, code backticks, link brackets, heading
    and quote markers at a line's start); every other character is kept.
    """
    text = _LINE_MARKUP.sub("", re.sub(r"[`\[\]]", "", content)).strip()
    # The title comes from the first line; bounding it keeps the pair search linear.
    text = text.split("\n", 1)[0][:2000]
    for _ in range(3):  # ***nested*** emphasis peels one pair per pass
        text = _EMPHASIS.sub(r"\2", text)
    text = text.strip()
    first = (sentences(text) or [text])[0].splitlines()[0] if text else ""
    first = first.strip().rstrip(".")
    if len(first) > 120:
        first = first[:117].rsplit(" ", 1)[0] + "…"
    return first or "Lesson"


def find_candidates(
    state: VaultState, text: str, situation: str | None, limit: int, *, exclude: Sequence[str] = ()
) -> list[Engram]:
    """Current items that may be about the same thing as ``text`` (see step 1)."""
    return [item for item, _ in candidates_of(state, text, situation, limit, exclude=exclude)]


def candidates_of(
    state: VaultState, text: str, situation: str | None, limit: int, *, exclude: Sequence[str] = ()
) -> list[tuple[Engram, float | None]]:
    """:func:`find_candidates` with each item's cosine with ``text`` (None when the
    sentence encoder did not see it): the candidates come from words and meaning alike,
    since recall's meaning stage (:mod:`engram.recall.meaning`) runs on the query."""
    query = f"{text}\n{situation}" if situation else text
    try:
        found = recall_run(
            state, query[:4000], rules.Filters.of(statuses=("active", "draft")), limit=limit,
            tier="catalog", expand=False, record=False, min_relevance=0.0,
        )
    except InvalidInput:  # no searchable words: nothing can be about the same thing
        return []
    hits = {h.id: h.explanation.similarity for h in (*found.hits, *found.near_misses) if h.id not in exclude}
    if not hits:
        return []
    marks = ",".join("?" * len(hits))
    items = {i.id: i for i in state.index.items(f"id IN ({marks})", list(hits))}
    return [(items[i], cos) for i, cos in hits.items() if i in items]


def lessons_of(found: Sequence[tuple[Engram, float | None]]) -> list[Lesson]:
    """The candidates as the classifier compares them, each with its meaning."""
    return [lesson_of(c, cos) for c, cos in found]


def learn(
    state: VaultState,
    content: str,
    situation: str | None = None,
    *,
    title: str | None = None,
    domain: str | Sequence[str] | None = None,
    kind: str | None = None,
    tags: Sequence[str] = (),
    importance: float = 0.5,
    confidence: float = 0.5,
    visibility: str = "team",
    dry_run: bool = False,
    confirmation: Confirmation | None = None,
    judge: bool = False,
    judgment: Judgment | None = None,
) -> LearnResult:
    """Classify a lesson against the vault and act on it (see the module docstring).

    ``situation`` says when the lesson holds; ``title``, ``domain``, ``kind``, ``tags``
    describe the item an insert creates (the title defaults to the first sentence, the
    domain and kind to the related item's, else ``lessons`` and ``fact``). With ``judge``,
    a verdict engram is unsure of is not acted on: the result is ``needs_judgment`` with
    the question for the caller's model (:mod:`engram.lifecycle.judging`), and
    ``judgment`` is its answer, applied if the target is unchanged. Raises InvalidInput
    before anything is written, VersionConflict when the judged item changed since.
    """
    content = rules.content_text(content)
    if not content.strip():
        raise InvalidInput("the lesson is empty.", field="content", hint="Pass the lesson's text.")
    if situation is not None:
        situation = rules.text("situation", situation, rules.MAX_SUMMARY_CHARS) or None
    heading = rules.text("title", title, rules.MAX_TITLE_CHARS, single_line=True) if title else None
    text = f"{heading}. {content}" if heading and not content.startswith(heading) else content
    settings = lifecycle_settings(state)
    with state.lock.hold():
        state.ensure_fresh()
        found = candidates_of(state, text, situation, settings.candidates)
        by_id = {c.id: c for c, _ in found}
        verdict = classify(Lesson(text, situation, title=heading or ""), lessons_of(found))
        if judgment is not None:
            verdict = judged(verdict, judgment, by_id)
        else:
            verdict = confirmed(verdict, confirmation)
            why = unsure(verdict, {c.id: cos for c, cos in found}) if judge and not dry_run else None
            if why is not None:
                asked = question(text, verdict, {c.id: (c.version, compared_text(c)) for c, _ in found}, why)
                return LearnResult(
                    "needs_judgment", verdict, None, by_id.get(verdict.target or verdict.related or ""),
                    message=f"Not written: engram is unsure ({why}). Answer the question and call again with"
                    " the same lesson and your judgment.", question=asked,
                )
        target = by_id.get(verdict.target or verdict.related or "")
        spec = _Spec(
            title=heading or lesson_title(content), content=content, situation=situation,
            domain=domain, kind=kind, tags=tuple(tags), importance=importance,
            confidence=confidence, visibility=visibility,
        )
        held = spec.held(state, target)
        if dry_run:
            return LearnResult("none", verdict, None, target, message=_dry_message(verdict, target, held))
        result = _hold(state, verdict, target, spec) if held else _act(state, verdict, target, spec)
        state.audit.record(
            state.actor, "learn", result.item.id if result.item else "", path=result.item.path if result.item else None,
            note=f"{verdict.relation} -> {result.action}"
            + (f" target={result.target.id}" if result.target else "")
            + f" decided_by={verdict.decided_by}",
        )
        return result


@dataclass(frozen=True, slots=True)
class _Spec:
    title: str
    content: str
    situation: str | None
    domain: str | Sequence[str] | None
    kind: str | None
    tags: tuple[str, ...]
    importance: float
    confidence: float
    visibility: str

    def _args(self, state: VaultState, like: Engram | None, fields: Mapping[str, Any] | None) -> dict[str, Any]:
        extra: dict[str, Any] = dict(fields or {})
        if self.situation:
            extra["situation"] = self.situation
        # The origin record: sync settles only decisions learn made (reconcile.after_merge).
        extra["provenance"] = [{"action": "learned", "by": state.actor, "at": now()}]
        return {
            "domain": self.domain if self.domain is not None else (like.domain_tags if like else DEFAULT_DOMAIN),
            "kind": self.kind or (like.kind if like else "fact"), "tags": self.tags,
            "importance": self.importance, "confidence": self.confidence,
            "visibility": self.visibility if like is None or like.visibility != "private" else "private",
            "fields": extra,
        }

    def held(self, state: VaultState, like: Engram | None) -> bool:
        """Whether the instruction screen would quarantine the item an insert writes
        (nothing written; secrets are the insert's to refuse, and audit)."""
        args = self._args(state, like, None)
        fields = args.pop("fields")
        item = writing.build(state, self.title, self.content, **args)
        item = rules.apply_changes(item, rules.normalize_changes(fields))
        return policy.admit(item, None, state.trust, check_sensitive=False, encoder=state.encoder).quarantined

    def create(
        self, state: VaultState, like: Engram | None, fields: Mapping[str, Any] | None = None
    ) -> CreateResult:
        return writing.create(state, self.title, self.content, dedupe=False, **self._args(state, like, fields))

    def insert(
        self, state: VaultState, like: Engram | None, fields: Mapping[str, Any] | None = None
    ) -> Engram:
        return self.create(state, like, fields).item


def _hold(state: VaultState, verdict: Verdict, near: Engram | None, spec: _Spec) -> LearnResult:
    """Instruction-shaped text is kept for audit as a quarantined item of its own and
    acts on nothing: it never reinforces, extends, supersedes, disputes or links to
    another item (an attack could otherwise hide or retire what the vault knows)."""
    created = spec.create(state, near)
    if created.quarantine is None:  # a redaction took away what the screen flagged
        return LearnResult("inserted", verdict, created.item, None, message=f"New knowledge: recorded as {created.item.path}.")
    return LearnResult(
        "quarantined", verdict, created.item, None, message=created.note or "", quarantine=created.quarantine
    )


def _act(state: VaultState, verdict: Verdict, target: Engram | None, spec: _Spec) -> LearnResult:
    if target is not None and persons_note(target) and verdict.relation in ("duplicate", "extends"):
        return _beside(state, verdict, target, spec)
    if target is not None and persons_note(target) and verdict.relation == "contradicts":
        return _dispute(state, verdict, target, spec)  # a person's note is never superseded unasked
    if verdict.relation in ("duplicate", "extends") and target is not None:
        return _reinforce(state, verdict, target, spec)
    if verdict.relation == "contradicts" and target is not None:
        if may_overturn(state, target):
            new = spec.insert(state, target)
            succession = supersede(state, target.id, new.id, reason="; ".join(verdict.reasons))
            return LearnResult(
                "superseded", verdict, succession.new, succession.old, succession.edge,
                message=f"Contradicts {target.id} ({target.path}): recorded as {succession.new.path}"
                f" and superseded the old item (status superseded, its text kept). {_why(verdict)}",
            )
        return _dispute(state, verdict, target, spec)
    new = spec.insert(state, target)
    if target is None:
        return LearnResult("inserted", verdict, new, None, message=f"New knowledge: recorded as {new.path}.")
    kind = "contradicts" if verdict.warn else "similar_to"
    edge = links.link(state, new.id, kind, target.id, weight=0.5, evidence="; ".join(verdict.reasons)[:2000],
                      adopt=False)
    note = (
        f"possibly contradicts {target.id} — linked as a warning for a person to check"
        if verdict.warn else f"related to {target.id} ({target.path}), linked similar_to"
    )
    return LearnResult(
        "linked", verdict, state.read(new.path or "")[0], target, edge,
        message=f"New knowledge: recorded as {new.path}; {note}. The existing item is unchanged.",
    )


def _fresh(verdict: Verdict, target: Engram, spec: _Spec) -> list[str]:
    """The lesson's sentences that are new detail against ``target``: a sentence is new
    detail when it brings content words the item lacks — one for an extension, two for a
    duplicate (a reworded word is not detail)."""
    if verdict.relation == "duplicate" and (verdict.decided_by == "judge" or _in_other_words(verdict, target)):
        return []  # the same claim in other words: its words are synonyms, not detail
    known = analyse(compared_text(target)).stems
    least = 1 if verdict.relation == "extends" else 2
    return [s for s in sentences(spec.content) if len(analyse(s).stems - known) >= least]


def _in_other_words(verdict: Verdict, target: Engram) -> bool:
    """Whether the duplicate was seen by meaning rather than by shared words."""
    c = next((c for c in verdict.comparisons if c.id == target.id), None)
    return c is not None and c.covers_new < COVERED and (c.meaning or 0.0) >= SAME_CLAIM


def _beside(state: VaultState, verdict: Verdict, target: Engram, spec: _Spec) -> LearnResult:
    """A duplicate or an extension of a person's note: the note is never written into.
    The reinforcement is kept beside it; new detail becomes an item of its own, linked
    ``extends`` to the note (the link names its id, derived or its own)."""
    kept = writing.reinforce_beside(state, target)
    fresh = _fresh(verdict, target, spec)
    if not fresh:
        return LearnResult("reinforced", verdict, target, target, message=f"Already known: {kept} {_why(verdict)}")
    new = spec.insert(state, target)
    edge = links.link(state, new.id, "extends", target.id, weight=0.5, evidence="; ".join(verdict.reasons)[:2000],
                      adopt=False)
    return LearnResult(
        "linked", verdict, state.read(new.path or "")[0], target, edge,
        message=f"Extends {target.id} ({target.path}), a note a person wrote, so it is left as"
        f" it is: recorded as {new.path} and linked extends to it. {_why(verdict)}",
    )


def _reinforce(state: VaultState, verdict: Verdict, target: Engram, spec: _Spec) -> LearnResult:
    fresh = _fresh(verdict, target, spec)
    changes: dict[str, Any] = {"reinforcement_score": round(target.reinforcement_score + 1.0, 6)}
    if fresh:
        addition = "\n".join(fresh)
        changes["content"] = target.content.rstrip("\n") + "\n\n" + addition + "\n" if target.content else addition
    if spec.situation and not target.situation:
        changes["situation"] = spec.situation
    updated = writing.update(state, target.id, changes, expected_version=target.version)
    action: Action = "extended" if fresh else "reinforced"
    detail = f" and appended {len(fresh)} new sentence(s) after its text" if fresh else ""
    return LearnResult(
        action, verdict, updated, target,
        message=f"{'Extends' if verdict.relation == 'extends' else 'Already known'}: reinforced"
        f" {updated.id} ({updated.path}){detail}; nothing of it was removed. {_why(verdict)}",
    )


def _dispute(state: VaultState, verdict: Verdict, target: Engram, spec: _Spec) -> LearnResult:
    new = spec.insert(state, target, {"status": "draft", "verification_status": "disputed"})
    edge = links.link(state, new.id, "contradicts", target.id, weight=0.5,
                      evidence="; ".join(verdict.reasons)[:2000], adopt=False)
    proposal, _ = proposals.propose(
        state, "dispute", [target.id, new.id],
        title=f"Does {new.title!r} overturn {target.title!r}?",
        reason=f"{state.actor} contradicts an item by {target.created_by or 'an unknown author'}: "
        + "; ".join(verdict.reasons),
        payload={"old": target.id, "new": new.id}, score=verdict.confidence,
    )
    return LearnResult(
        "disputed", verdict, state.read(new.path or "")[0], target, edge, proposal.id,
        message=f"Contradicts {target.id}, which {target.created_by or 'another author'} wrote: recorded as a"
        f" disputed draft at {new.path} for a curator (proposal {proposal.id}); the existing item stays"
        f" current. {_why(verdict)}",
    )


def _why(verdict: Verdict) -> str:
    return "Why: " + "; ".join(verdict.reasons) + f" (decided by {verdict.decided_by})."


def _dry_message(verdict: Verdict, target: Engram | None, held: bool = False) -> str:
    where = f" {target.id} ({target.path})" if target else ""
    if held:
        return (f"Would be quarantined: it reads like instructions to an AI reader, so it would be held back"
                f" for a curator and act on no other item (as text: {verdict.relation}{' of' if target else ''}"
                f"{where}). {_why(verdict)}")
    return f"Would be {verdict.relation}{' of' if target else ''}{where}. {_why(verdict)}"


def judged(verdict: Verdict, judgment: Judgment, candidates: Mapping[str, Engram]) -> Verdict:
    """The verdict the caller's judge gave, checked against the vault as it is now: the
    target must still be a candidate, at the version the judge read."""
    target = candidates.get(judgment.target or "") if judgment.target else None
    if judgment.target is not None and target is None:
        raise InvalidInput(
            f"the judgment names {judgment.target}, which is not a candidate for this lesson (any more).",
            field="judgment.target", hint="Call again without a judgment to get the current question.",
        )
    if target is not None and judgment.version is not None and target.version != judgment.version:
        raise VersionConflict(target.id, judgment.version, target.version, "it changed after the question was asked",
                              target.path or "")
    reason = f"judged by the caller's model: {judgment.reason}" if judgment.reason else "judged by the caller's model"
    if judgment.relation == "novel":
        return replace(verdict, relation="novel", target=None, confidence=1.0, reasons=(reason,), warn=False,
                       related=verdict.related or verdict.target, decided_by="judge")
    return replace(verdict, relation=judgment.relation, target=judgment.target, confidence=1.0, reasons=(reason,),
                   related=None, warn=False, decided_by="judge")


def confirmed(verdict: Verdict, confirmation: Confirmation | None) -> Verdict:
    """Apply the client model's answer to a destructive verdict it was asked about.

    Only a ``contradicts`` verdict on the same target is affected: agreement keeps it
    (decided by sampling); disagreement makes it novel, linked ``contradicts`` as a
    warning; no answer keeps the offline verdict and says why.
    """
    if confirmation is None or verdict.relation != "contradicts":
        return verdict
    if confirmation.target != verdict.target or confirmation.relation != verdict.relation:
        return replace(verdict, decided_by="offline (the model was asked about another candidate)")
    if confirmation.outcome == "agree":
        return replace(verdict, decided_by="sampling", reasons=(*verdict.reasons, f"the model agreed: {confirmation.answer[:200]}"))
    if confirmation.outcome == "disagree":
        return replace(
            verdict, relation="novel", target=None, related=verdict.target, warn=True, decided_by="sampling",
            reasons=(*verdict.reasons, f"the model disagreed: {confirmation.answer[:200]}"),
        )
    why = {
        "timeout": f"sampling timed out after {confirmation.seconds:.1f} s",
        "unavailable": "the client cannot sample",
        "error": "sampling failed",
    }[confirmation.outcome]
    return replace(verdict, decided_by=f"offline ({why})")
