"""Skills: procedural memory — items of kind ``skill`` with ordered steps, preconditions
and a success record.

A skill's ``steps`` (an ordered list) and ``preconditions`` (a set) are frontmatter; its
body explains it. Its success and failure counts are ``effectiveRetrievals`` and
``failedUses``, moved by feedback like any item's, so the success rate is
``(successes + 1) / (successes + failures + 2)`` (a new skill starts at 50 %, and one
lucky run does not make it 100 %).

:func:`find_skill` ranks skills for a task by the vault's own recall (kinds ``skill``)
blended with the success rate: ``score × (0.5 + success rate)``.

Composition. A skill may be made of skills: ``composedOf`` lists its component skills'
ids in order, and a step ``skill:ID`` names one where its steps belong. Expanding a skill
(:func:`expand`) walks its steps and inlines each named component's expansion there;
components no step names come first, in ``composedOf`` order. :func:`create_skill`
resolves every named skill (id, id prefix, path or exact title) to its id, refuses one
that is not a skill, and writes ``composedOf`` as the components given, then the skills
steps name, in order. A cycle (a skill that reaches itself through its components, which
only an edit or a merge can make) is refused when expanded, naming the path it takes.

Invocation. :func:`invoke_skill` expands the skill, then records the invocation — a
retrieval in the usage journal (``retrievalCount`` at the next fold) and an ``invoke``
audit line — and, given an outcome (``success`` or ``failure``), journals feedback on the
skill like ``engram feedback`` (its success rate). The outcome is the invoked skill's:
a composed skill's components keep their own records, moved when they are invoked.
A refused invocation (bad outcome, cycle, missing component) records nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput, NotFound
from engram.items.state import VaultState
from engram.items.writing import CreateResult
from engram.lifecycle import creating
from engram.lifecycle.feedback import FeedbackResult, feedback, pending
from engram.recall.search import run as recall_run
from engram.recall.usage import journal_for
from engram.store import rules
from engram.store.model import Engram, now

#: A step that names a component skill: ``skill:`` then an id (or, when written, a title).
SKILL_STEP = re.compile(r"^skill:\s*(?P<ref>\S.*?)\s*$")
OUTCOMES = {"success": "helped", "failure": "failed"}
#: How deep components may nest: far beyond any real procedure, a bound on the walk.
MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Skill:
    id: str
    title: str
    path: str | None
    steps: tuple[str, ...]
    preconditions: tuple[str, ...]
    successes: int
    failures: int
    success_rate: float
    score: float | None = None  # find_skill: relevance blended with the success rate
    summary: str = ""
    composed_of: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "path": self.path, "steps": list(self.steps),
                "preconditions": list(self.preconditions), "successes": self.successes,
                "failures": self.failures, "successRate": self.success_rate, "score": self.score,
                "summary": self.summary, "composedOf": list(self.composed_of)}


@dataclass(frozen=True, slots=True)
class Step:
    """One expanded step: its text and the skill it comes from (the invoked one or a component)."""

    text: str
    skill: str
    title: str

    def to_json(self) -> dict[str, Any]:
        return {"step": self.text, "skill": self.skill, "title": self.title}


@dataclass(frozen=True, slots=True)
class Invocation:
    """What :func:`invoke_skill` did: the skill (its record after this outcome), its steps
    expanded, the outcome reported (None: none yet) and the feedback it journaled."""

    skill: Skill
    steps: tuple[Step, ...]
    outcome: str | None
    feedback: FeedbackResult | None

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.skill.to_json(), "steps": [s.to_json() for s in self.steps],
                "outcome": self.outcome, "feedback": self.feedback.to_json() if self.feedback else None}


def success_rate(successes: int, failures: int) -> float:
    return round((successes + 1) / (successes + failures + 2), 4)


def _skill(state: VaultState, item: Engram, score: float | None = None) -> Skill:
    waiting = pending(state).get(item.id)
    ok = item.effective_retrievals + (waiting.effective if waiting else 0)
    bad = item.failed_uses + (waiting.failed if waiting else 0)
    return Skill(item.id, item.title, item.path, tuple(item.steps or ()), tuple(item.preconditions or ()),
                 ok, bad, success_rate(ok, bad), score, item.summary, tuple(item.composed_of or ()))


def _a_skill(state: VaultState, ref: str, within: str = "") -> Engram:
    """The skill ``ref`` names. Raises InvalidInput (not a skill, or gone when ``within``
    names the skill that lists it) or NotFound."""
    try:
        item = state.read(state.resolve(ref))[0]
    except NotFound:
        if not within:
            raise
        raise InvalidInput(f"skill {within} names component {ref!r}, which is gone.",
                           hint=f"Restore it (`engram restore {ref}`) or edit the steps and composedOf of {within}.") from None
    if item.kind != "skill":
        raise InvalidInput(f"{item.id} ({item.title!r}) is {item.kind}, not a skill: only skills compose.",
                           field="components", hint="Name a skill (`engram skills` lists them), or record it with add-skill first.")
    return item


def expand(state: VaultState, item: Engram, _path: tuple[str, ...] = ()) -> list[Step]:
    """The skill's steps with its components' inlined (see the module docstring).
    Raises InvalidInput on a cycle or a component that is gone or not a skill."""
    path = (*_path, item.id)
    if len(path) > MAX_DEPTH:
        raise InvalidInput(f"skill {path[0]} nests components more than {MAX_DEPTH} deep.",
                           hint="Flatten the composition.")
    named = [m.group("ref") for m in map(SKILL_STEP.match, item.steps or ()) if m]
    out: list[Step] = []

    def inline(ref: str) -> None:
        component = _a_skill(state, ref, within=item.id)
        if component.id in path:
            cycle = " → ".join((*path[path.index(component.id):], component.id))
            raise InvalidInput(f"skill {path[0]} cannot be expanded: {cycle} is a cycle.",
                               hint=f"Edit the steps and composedOf of {item.id} so it does not name {component.id}.")
        out.extend(expand(state, component, path))

    for ref in item.composed_of or ():
        if ref not in named:
            inline(ref)
    for text in item.steps or ():
        match = SKILL_STEP.match(text)
        if match:
            inline(match.group("ref"))
        else:
            out.append(Step(text, item.id, item.title))
    return out


def invoke_skill(state: VaultState, ref: str, *, outcome: str | None = None, note: str | None = None) -> Invocation:
    """Expand the skill, record the invocation and any outcome (see the module docstring).
    Raises InvalidInput (bad outcome, not a skill, a cycle), NotFound."""
    if outcome is not None and outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be success or failure, not {outcome!r}.", field="outcome",
                           hint="Leave it out to invoke only, and report how it went later.")
    state.ensure_fresh()
    item = _a_skill(state, ref)
    steps = tuple(expand(state, item))
    journal_for(state).record([(item.id, 1.0)], now(), by=state.actor)
    state.audit.record(state.actor, "invoke", item.id, path=item.path, outcome=outcome,
                       note=f"{len(steps)} step(s)")
    result = feedback(state, item.id, OUTCOMES[outcome], note=note) if outcome else None
    return Invocation(_skill(state, item), steps, outcome, result)


def create_skill(
    state: VaultState,
    title: str,
    steps: Sequence[str],
    *,
    content: str = "",
    preconditions: Sequence[str] = (),
    components: Sequence[str] = (),
    domain: Sequence[str] | str = ("skills",),
    tags: Sequence[str] = (),
    summary: str = "",
    visibility: str = "team",
) -> CreateResult:
    """Record a skill (deduplicated like any create), composed of ``components`` (refs of
    skills, in order) and of the skills its ``skill:REF`` steps name. Raises InvalidInput
    (no step and no component; a component that is not a skill), NotFound."""
    checked = list(rules.text_list("steps", list(steps), keep_repeats=True))
    wanted = list(rules.text_list("components", list(components)))
    if not checked and not wanted:
        raise InvalidInput("a skill needs at least one step or a component (steps and components are empty).", field="steps",
                           hint="e.g. --step 'check the lock', or --component ID of a skill it is made of")
    state.ensure_fresh()
    composed = [_a_skill(state, ref).id for ref in wanted]
    for i, text in enumerate(checked):
        match = SKILL_STEP.match(text)
        if match:
            component = _a_skill(state, match.group("ref")).id
            checked[i] = f"skill:{component}"
            if component not in composed:
                composed.append(component)
    if not checked:
        checked = [f"skill:{c}" for c in composed]
    fields: dict[str, Any] = {"steps": checked}
    if composed:
        fields["composed_of"] = composed
    if preconditions:
        fields["preconditions"] = list(rules.text_list("preconditions", list(preconditions)))
    body = content or "\n".join(f"{i}. {s}" for i, s in enumerate(checked, 1))
    return creating.create(
        state, title, body, domain=rules.domain_tags(domain), kind="skill", tags=tags, summary=summary,
        visibility=visibility, fields=fields,
    )


def _check_limit(limit: int) -> None:
    if limit < 1:  # a slice would return nothing (0) or drop the last skill (-1), silently
        raise InvalidInput(f"limit must be at least 1, not {limit!r}.", field="limit", hint="e.g. 5")


def skills(state: VaultState, *, domain: str | None = None, limit: int = 50) -> list[Skill]:
    """Every visible skill, best success rate first (then most used). Raises InvalidInput."""
    _check_limit(limit)
    state.ensure_fresh()
    where, params = rules.Filters.of(kinds=["skill"], domain=domain).sql()
    found = [_skill(state, item) for item in state.index.items(where, params)]
    found.sort(key=lambda s: (-s.success_rate, -(s.successes + s.failures), s.title))
    return found[:limit]


def find_skill(state: VaultState, task: str, *, limit: int = 5) -> list[Skill]:
    """Skills for ``task``, best first: recall over skills × (0.5 + success rate).
    Raises InvalidInput."""
    _check_limit(limit)
    state.ensure_fresh()
    result = recall_run(state, task, rules.Filters.of(kinds=["skill"]), limit=max(limit * 2, 10),
                        tier="catalog", expand=False, record=True)
    ids = [h.id for h in result.hits]
    scores = {h.id: h.score for h in result.hits}
    items = {i.id: i for i in state.index.items(f"id IN ({','.join('?' * len(ids))})", ids)} if ids else {}
    ranked = [
        _skill(state, items[i], None) for i in ids if i in items
    ]
    ranked = [
        Skill(**{**{f: getattr(s, f) for f in Skill.__dataclass_fields__},
                 "score": round(scores[s.id] * (0.5 + s.success_rate), 4)})
        for s in ranked
    ]
    ranked.sort(key=lambda s: (-(s.score or 0.0), s.id))
    return ranked[:limit]
