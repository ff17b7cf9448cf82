"""What a search returns: hits with their explanation and warnings, and the answer.

Frozen values with ``to_json`` in the camelCase the CLI's ``--json`` and the MCP tools
share. A hit's ``tier`` says how much of the item it carries: ``catalog`` (id, title,
path), ``digest`` (+ summary or the start of the body, and tags), ``content`` (+ body).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engram.recall.graph import Step

Tier = Literal["catalog", "digest", "content", "auto"]
TIERS: tuple[str, ...] = ("catalog", "digest", "content", "auto")
Status = Literal["ok", "no_confident_match"]
#: How a hit was found: its words, its meaning (the sentence encoder), or a link.
Via = Literal["lexical", "meaning", "graph"]


@dataclass(frozen=True, slots=True)
class HitWarning:
    """A ``contradicts`` neighbour of a hit: knowledge that disagrees with it."""

    kind: str
    id: str
    title: str
    path: str
    weight: float


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a hit is where it is."""

    matched_terms: tuple[str, ...]
    missing_terms: tuple[str, ...]
    parts: Mapping[str, float]  # relevance, recency, importance, reinforcement, heat, graph
    lexical_rank: int | None  # 1-based rank among lexical candidates, None for graph hits
    path: tuple[Step, ...]  # expansion path from a seed hit (empty for lexical hits)
    replaces: tuple[str, ...] = ()  # superseded items this hit stands in for
    similarity: float | None = None  # cosine with the query (engram.recall.vectors), when known

    def to_json(self) -> dict[str, Any]:
        return {
            "matchedTerms": list(self.matched_terms),
            "missingTerms": list(self.missing_terms),
            "parts": dict(self.parts),
            "lexicalRank": self.lexical_rank,
            "path": [
                {"from": s.source, "to": s.target, "kind": s.kind, "direction": s.direction,
                 "weight": s.weight, "activation": s.activation}
                for s in self.path
            ],
            "replaces": list(self.replaces),
            "similarity": self.similarity,
        }


@dataclass(frozen=True, slots=True)
class SearchHit:
    id: str
    path: str
    title: str
    kind: str
    domain: str
    status: str
    score: float
    relevance: float | None  # share of the query found in the item (None for graph hits)
    via: Via
    tier: str
    explanation: Explanation
    tags: tuple[str, ...] = ()
    summary: str | None = None
    content: str | None = None
    warnings: tuple[HitWarning, ...] = ()
    #: private / team (this vault) or org (the org vault, :mod:`engram.scopes.recall`).
    scope: str = "team"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "path": self.path, "title": self.title, "kind": self.kind,
            "domain": self.domain, "status": self.status, "score": self.score,
            "relevance": self.relevance, "via": self.via, "tier": self.tier, "scope": self.scope,
        }
        if self.tier != "catalog":
            data["tags"] = list(self.tags)
            data["summary"] = self.summary
        if self.content is not None:
            data["content"] = self.content
        data["warnings"] = [
            {"kind": w.kind, "id": w.id, "title": w.title, "path": w.path, "weight": w.weight}
            for w in self.warnings
        ]
        data["explanation"] = self.explanation.to_json()
        return data

    def brief(self) -> dict[str, Any]:
        """The hit as an agent receives it (``engram_search`` without ``explain``): what is
        empty or implied is left out — ``status`` when active, ``via`` for a lexical hit,
        ``tier`` when the hit carries its body, ``scope`` for a team item, empty lists.
        The token budget counts hits in this form (:mod:`engram.recall.disclosure`)."""
        data: dict[str, Any] = {"id": self.id, "path": self.path, "title": self.title, "kind": self.kind}
        if self.status != "active":
            data["status"] = self.status
        data["score"] = round(self.score, 3)  # the order is the ranking; three places tell hits apart
        if self.relevance is not None:
            data["relevance"] = round(self.relevance, 3)
        if self.via != "lexical":
            data["via"] = self.via
        if self.tier != "content":
            data["tier"] = self.tier
        if self.scope != "team":
            data["scope"] = self.scope
        if self.tags:
            data["tags"] = list(self.tags)
        if self.summary:
            data["summary"] = self.summary
        if self.content is not None:
            data["content"] = self.content
        if self.warnings:
            data["warnings"] = [
                {"kind": w.kind, "id": w.id, "title": w.title, "path": w.path, "weight": w.weight}
                for w in self.warnings
            ]
        return data


@dataclass(frozen=True, slots=True)
class Meaning:
    """What the search's meaning stage could do: ``on`` (every item has a vector),
    ``partial`` (``missing`` of ``items`` have none yet: they were found by words only),
    ``off`` (``recall.meaning`` is 0, or a raw query) or ``unavailable`` (the encoder
    cannot run here; ``problem`` says why and how to fix it)."""

    state: Literal["on", "partial", "off", "unavailable"] = "off"
    items: int = 0
    missing: int = 0
    problem: str = ""
    #: The sentence encoder that ran ("" when none did).
    model: str = ""
    #: Why the better model ``recall.model: auto`` prefers did not run ("" when it did):
    #: it has not embedded the vault yet, or it cannot run here.
    instead: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"state": self.state}
        if self.model:
            data["model"] = self.model
        if self.state == "partial":
            data |= {"items": self.items, "missing": self.missing}
        if self.instead:
            data["instead"] = self.instead
        if self.problem:
            data["problem"] = self.problem
        return data

    def note(self) -> str | None:
        """One line on what the stage could not do (None when it searched every item with
        the best model here, or is off)."""
        if self.state == "partial":
            return (f"{self.missing} of {self.items} items have no vector yet and were searched by their words"
                    " only; `engram serve` embeds them in the background, or run `engram reindex --embed`.")
        if self.state == "unavailable":
            return f"searched by words only: {self.problem}"
        if self.instead:
            return f"{self.instead}, so {self.model} searched by meaning instead."
        return None


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    status: Status
    hits: tuple[SearchHit, ...]
    near_misses: tuple[SearchHit, ...] = ()
    terms: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    truncated: bool = False
    floor: float = 0.0
    best_relevance: float | None = None
    expanded: bool = True
    tokens: int = 0
    budget_reached: bool = False  # some hit came at a lower tier, or was left out, for want of budget
    elapsed_ms: float = 0.0
    #: ``tier=auto``: hits the budget could not carry even as catalog lines, and the
    #: budget that carries every hit (0 when none was left out).
    left_out: int = 0
    needed_budget: int = 0
    meaning: Meaning = Meaning()

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query, "status": self.status,
            "hits": [h.to_json() for h in self.hits],
            "nearMisses": [h.to_json() for h in self.near_misses],
            "terms": list(self.terms), "ignored": list(self.ignored),
            "truncated": self.truncated, "floor": self.floor,
            "bestRelevance": self.best_relevance, "expanded": self.expanded,
            "tokens": self.tokens, "budgetReached": self.budget_reached, "leftOut": self.left_out,
            "neededBudget": self.needed_budget or None, "elapsedMs": self.elapsed_ms,
            "meaning": self.meaning.to_json(),
        }
