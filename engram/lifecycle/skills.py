"""Skills: procedural memory — items of kind ``skill`` with ordered steps, preconditions
and a success record.

A skill's ``steps`` (an ordered list) and ``preconditions`` (a set) are frontmatter; its
body explains it. Its success and failure counts are ``effectiveRetrievals`` and
``failedUses``, moved by feedback like any item's, so the success rate is
``(successes + 1) / (successes + failures + 2)`` (a new skill starts at 50 %, and one
lucky run does not make it 100 %).

:func:`find_skill` ranks skills for a task by the vault's own recall (kinds ``skill``)
blended with the success rate: ``score × (0.5 + success rate)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.items.state import VaultState
from engram.items.writing import CreateResult
from engram.lifecycle import learning
from engram.lifecycle.feedback import pending
from engram.recall.search import run as recall_run
from engram.store import rules
from engram.store.model import Engram


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

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "path": self.path, "steps": list(self.steps),
                "preconditions": list(self.preconditions), "successes": self.successes,
                "failures": self.failures, "successRate": self.success_rate, "score": self.score,
                "summary": self.summary}


def success_rate(successes: int, failures: int) -> float:
    return round((successes + 1) / (successes + failures + 2), 4)


def _skill(state: VaultState, item: Engram, score: float | None = None) -> Skill:
    waiting = pending(state).get(item.id)
    ok = item.effective_retrievals + (waiting.effective if waiting else 0)
    bad = item.failed_uses + (waiting.failed if waiting else 0)
    return Skill(item.id, item.title, item.path, tuple(item.steps or ()), tuple(item.preconditions or ()),
                 ok, bad, success_rate(ok, bad), score, item.summary)


def create_skill(
    state: VaultState,
    title: str,
    steps: Sequence[str],
    *,
    content: str = "",
    preconditions: Sequence[str] = (),
    domain: Sequence[str] | str = ("skills",),
    tags: Sequence[str] = (),
    summary: str = "",
    visibility: str = "team",
) -> CreateResult:
    """Record a skill (deduplicated like any create). Raises InvalidInput without steps."""
    checked = rules.text_list("steps", list(steps), keep_repeats=True)
    if not checked:
        raise InvalidInput("a skill needs at least one step.", field="steps", hint="e.g. --step 'check the lock'")
    fields: dict[str, Any] = {"steps": list(checked)}
    if preconditions:
        fields["preconditions"] = list(rules.text_list("preconditions", list(preconditions)))
    body = content or "\n".join(f"{i}. {s}" for i, s in enumerate(checked, 1))
    return learning.create(
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
