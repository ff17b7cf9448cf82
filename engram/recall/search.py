"""Recall: lexical relevance blended with what the vault knows about each item, expanded
along synapses, with honest abstention, disclosure tiers and an explanation per hit.

The pipeline for one query (every step reads the derived index, never Markdown):

1. :mod:`engram.index.query` turns the text into quoted terms (any input is safe).
2. Candidates: BM25 on the word index with column weights (title > tags > summary >
   body), the trigram index for identifiers, substrings and CJK, and a bounded scan for
   fragments under three characters. Each path's scores are divided by its best, so the
   top candidate has lexical relevance 1.
3. Succession: a candidate with a visible successor (``supersededBy``, or a
   ``supersedes`` edge from an item the filters admit at the query's instant) hands its
   place to that successor; one deactivated with no successor is dropped. ``as_of``
   before the succession sees the old item, because the successor is not yet active.
4. Score = relevance·r + recency·2^(−age/halfLife) + importance·i
   + reinforcement·tanh((reinforcementScore + ½·effectiveRetrievals − failedUses)/3)
   + heat·(1 − e^(−retrievals/10))·2^(−sinceLastRetrieval/heatHalfLife)
   (weights from the ``recall`` section of ``engram.yaml``, see :class:`RecallSettings`).
5. Graph expansion (:mod:`engram.recall.graph`) from the best hits adds ``graph·activation`` to
   the items it reaches, which may enter the results without sharing a word with the
   query. ``contradicts`` neighbours become warnings on the hit.
6. Abstention: a hit's *relevance* is the IDF-weighted share of the query's terms it
   contains. When no lexical hit reaches ``minRelevance`` the answer is
   ``no_confident_match`` with the closest items as ``near_misses``; hits below it are
   left out. Expansion hits are exempt: they hang off a confident hit.
7. Tiers: ``catalog`` (id, title, path), ``digest`` (+ summary, tags), ``content`` (+ the
   body), or ``auto``, which upgrades hits in rank order while a token budget lasts.
8. The returned hits are journaled (:mod:`engram.recall.usage`) — never written to Markdown.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from engram.errors import InvalidInput
from engram.index.query import ParsedQuery, parse
from engram.index.search import Edge
from engram.recall.graph import SpreadSettings, Step, spread
from engram.recall.lexical import Candidate, candidates, judge, rows, sql_in
from engram.recall.usage import Usage, journal_for
from engram.store import rules
from engram.store.model import HIDDEN_STATUSES, instant, now

if TYPE_CHECKING:
    from engram.store.settings import Settings
    from engram.vault import Vault

Tier = Literal["catalog", "digest", "content", "auto"]
TIERS: tuple[str, ...] = ("catalog", "digest", "content", "auto")
Status = Literal["ok", "no_confident_match"]
MAX_LIMIT = 200
_DAY = 86_400.0

DEFAULT_EDGE_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "extends": 0.9,
        "part_of": 0.8,
        "consolidates": 0.8,
        "depends_on": 0.7,
        "derives_from": 0.7,
        "exemplifies": 0.7,
        "similar_to": 0.6,
        "causes": 0.6,
        "follows": 0.5,
        "contextualizes": 0.5,
        "contradicts": 0.0,  # reported as warnings, never spread
        "supersedes": 0.0,  # handled by succession, never spread
    }
)


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """The ``recall`` section of ``engram.yaml`` (camelCase keys there); see docs/recall.md."""

    title_weight: float = 5.0
    tags_weight: float = 3.0
    summary_weight: float = 2.0
    body_weight: float = 1.0
    relevance: float = 1.0
    coverage: float = 0.5
    recency: float = 0.05
    importance: float = 0.1
    reinforcement: float = 0.05
    heat: float = 0.05
    graph: float = 0.6
    recency_half_life_days: float = 180.0
    heat_half_life_days: float = 14.0
    min_relevance: float = 0.3
    candidates: int = 20
    candidate_postings: int = 1000
    expansion_seeds: int = 5
    max_hops: int = 2
    hop_decay: float = 0.6
    min_activation: float = 0.05
    fan_limit: int = 4
    edge_weights: Mapping[str, float] = field(default_factory=lambda: DEFAULT_EDGE_WEIGHTS)
    limit: int = 10
    token_budget: int = 2000
    freshness: str = "auto"


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
    via: Literal["lexical", "graph"]
    tier: str
    explanation: Explanation
    tags: tuple[str, ...] = ()
    summary: str | None = None
    content: str | None = None
    warnings: tuple[HitWarning, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "path": self.path, "title": self.title, "kind": self.kind,
            "domain": self.domain, "status": self.status, "score": self.score,
            "relevance": self.relevance, "via": self.via, "tier": self.tier,
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
    elapsed_ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query, "status": self.status,
            "hits": [h.to_json() for h in self.hits],
            "nearMisses": [h.to_json() for h in self.near_misses],
            "terms": list(self.terms), "ignored": list(self.ignored),
            "truncated": self.truncated, "floor": self.floor,
            "bestRelevance": self.best_relevance, "expanded": self.expanded,
            "tokens": self.tokens, "elapsedMs": self.elapsed_ms,
        }


def read_settings(settings: Settings) -> RecallSettings:
    """The ``recall`` section of ``engram.yaml``, validated."""
    recall = settings.section("recall", RecallSettings)
    if recall.freshness not in ("auto", "walk"):
        raise InvalidInput(
            f"engram.yaml: recall.freshness is {recall.freshness!r}.",
            field="recall.freshness", hint="Use auto or walk.",
        )
    return recall


def recall_settings(vault: Vault) -> RecallSettings:
    """The vault's ``recall`` settings (read once per opened vault)."""
    return vault.recall_settings


class _Edges:
    """Synapses by item id, fetched once per search: succession, expansion and warnings
    all read the same candidates' edges, so one query serves the three."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.by_id: dict[str, list[Edge]] = {}

    def __call__(self, ids: Iterable[str]) -> list[Edge]:
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in self.by_id]
        for i in missing:
            self.by_id[i] = []
        for edge in self.vault.index.edges(missing):
            for end in {edge.source, edge.target}:
                if end in self.by_id and end in missing:
                    self.by_id[end].append(edge)
        seen: dict[tuple[str, str, str], Edge] = {}
        for i in wanted:
            for edge in self.by_id[i]:
                seen[(edge.source, edge.target, edge.kind)] = edge
        return list(seen.values())

    def contradicts(self, ids: Iterable[str]) -> list[Edge]:
        """The ``contradicts`` synapses of ``ids``: from the cache where an item's edges
        were read, else by an indexed lookup of that kind alone."""
        wanted = list(dict.fromkeys(ids))
        found = [e for e in self([i for i in wanted if i in self.by_id]) if e.kind == "contradicts"]
        rest = [i for i in wanted if i not in self.by_id]
        found += self.vault.index.edges(rest, kinds=("contradicts",))
        return list({(e.source, e.target, e.kind): e for e in found}.values())


def search(
    vault: Vault,
    query: str,
    filters: rules.Filters = rules.Filters(),  # noqa: B008 - frozen, shared safely
    *,
    limit: int | None = None,
    as_of: str | None = None,
    tier: str = "auto",
    budget: int | None = None,
    expand: bool = True,
    raw: bool = False,
    record: bool = True,
    min_relevance: float | None = None,
) -> SearchResult:
    """Search the vault (the caller has brought the index up to date). See the module
    docstring. Raises InvalidInput for a bad filter, tier, limit or raw query."""
    started = time.perf_counter()
    s = recall_settings(vault)
    limit = s.limit if limit is None else limit
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be 1 to {MAX_LIMIT}, not {limit!r}.", field="limit", hint="e.g. 10")
    if tier not in TIERS:
        raise InvalidInput(f"tier {tier!r} is not one of {', '.join(TIERS)}.", field="tier", hint="Use auto.")
    floor = s.min_relevance if min_relevance is None else rules.unit("min_relevance", min_relevance)
    parsed = ParsedQuery(query, ()) if raw else parse(query)
    if (raw and not query.strip()) or (not raw and not parsed.terms):
        raise InvalidInput(
            "the query has no words to search for.", field="query",
            hint='Search for words, e.g. `engram search "vacuum lock"`.',
        )
    at = rules.timestamp("as_of", as_of) if as_of is not None else now()
    where, params = filters.sql()
    if as_of is not None:  # what existed then; retirement is decided by succession below
        where += " AND COALESCE(activated_at, created_at) <= ?"
        params = [*params, at]
    pool = max(s.candidates, limit * 2)
    stats = vault.index.doc_counts([t.text for t in parsed.words])
    cands, fragments, known = candidates(
        vault, parsed, query if raw else None, where, params, pool,
        (s.title_weight, s.summary_weight, s.tags_weight, s.body_weight), s.candidate_postings, stats,
    )
    edges = _Edges(vault)
    cands = _succession(vault, cands, where, params, at)
    if not raw and cands:
        # Coverage first: it is the abstention signal and it re-weighs BM25, which lets a
        # document repeating one query word outrank one that answers the whole question.
        # Only the best candidates are judged; the rest could not make the cut anyway.
        judged = sorted(cands.values(), key=lambda c: -c.lexical)[: limit + 2]
        cands = {c.id: c for c in judged}
        judge(vault, parsed, judged, stats, known, fragments=fragments)
        if s.coverage > 0:
            for cand in cands.values():
                cand.lexical *= 1 - s.coverage + s.coverage * (cand.relevance or 0.0)
            top = max(c.lexical for c in cands.values()) or 1.0
            for cand in cands.values():
                cand.lexical /= top
    now_ts = instant(at).timestamp()
    pending = journal_for(vault).pending()
    for cand in cands.values():
        _score(cand, s, now_ts, pending.get(cand.id))
    expanded = expand and s.max_hops > 0 and bool(cands)
    if expanded:
        # Scores only grow during expansion, so the limit-th score of the hits that will
        # be kept bounds what a newly reached item must be able to beat.
        kept = sorted((c.score for c in cands.values() if raw or (c.relevance or 0.0) >= floor), reverse=True)
        cutoff = kept[limit - 1] if len(kept) >= limit else -math.inf
        _expand(
            vault, cands, where, params, at, s, now_ts, pending, edges,
            current=as_of is None, cutoff=cutoff, floor=0.0 if raw else floor,
        )
    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.id))
    best: float | None = None
    if not raw:
        best = max((c.relevance or 0.0 for c in ranked if c.lexical_rank is not None), default=0.0)
    status: Status = "ok"
    near: list[Candidate] = []
    if best is not None and best < floor:
        status, near, ranked = "no_confident_match", ranked[:3], []
    elif not raw:
        # Weak lexical matches go, unless a confident hit links to them.
        ranked = [c for c in ranked if c.relevance is None or c.relevance >= floor or c.activation]
    chosen = ranked[:limit]
    hits, tokens = _disclose(vault, chosen, tier, budget if budget is not None else s.token_budget, edges)
    misses, _ = _disclose(vault, near, "catalog", 10**9, edges)
    if record and hits:
        journal_for(vault).record([(h.id, h.score) for h in hits], now())
    return SearchResult(
        query=query, status=status, hits=tuple(hits), near_misses=tuple(misses),
        terms=tuple(t.text for t in parsed.terms), ignored=parsed.stopwords,
        truncated=parsed.truncated, floor=floor,
        best_relevance=round(best, 4) if best is not None else None, expanded=expanded,
        tokens=tokens, elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _retired(row: Mapping[str, Any], at: str) -> bool:
    deactivated = row["deactivated_at"]
    return bool(deactivated) and str(deactivated) <= at


def _successor(row: Mapping[str, Any]) -> str | None:
    """The item named as this one's successor: ``supersededBy``, else a ``supersedes``
    synapse pointing at it."""
    return str(row["superseded_by"] or row["successor_edge"] or "") or None


def _succession(
    vault: Vault, cands: dict[str, Candidate], where: str, params: Sequence[Any], at: str
) -> dict[str, Candidate]:
    """Replace candidates that have a visible successor by it (see the module docstring)."""
    if not cands:
        return cands
    out: dict[str, Candidate] = {}
    for cand in sorted(cands.values(), key=lambda c: -c.lexical):
        current: Candidate | None = cand
        seen = {cand.id}
        nxt = _successor(cand.row)
        while nxt and nxt not in seen and current is not None:
            seen.add(nxt)
            found = cands.get(nxt)
            row = found.row if found else next(iter(rows(vault, f"id = ? AND {where}", [nxt, *params])), None)
            if row is None or _retired(row, at):
                break  # not visible (yet, or any more): the chain stops here
            current = Candidate(row, lexical=0.0, lexical_rank=None)
            nxt = _successor(row)
        if current is not None and current.id != cand.id:
            held = out.get(current.id) or cands.get(current.id) or current
            if cand.lexical > held.lexical:
                held.lexical, held.lexical_rank = cand.lexical, cand.lexical_rank
            held.replaces.append(cand.id)
            held.replaced_rowids.append(int(cand.row["rowid"]))
            out[held.id] = held
        elif not _retired(cand.row, at):
            out.setdefault(cand.id, cand)
    return out


# ---------------------------------------------------------------------- scoring


def _score(cand: Candidate, s: RecallSettings, now_ts: float, usage: Usage | None) -> None:
    row = cand.row
    recency = 0.0
    if row["updated_ts"] is not None and s.recency_half_life_days > 0:
        age = max(0.0, now_ts - float(row["updated_ts"])) / _DAY
        recency = 0.5 ** (age / s.recency_half_life_days)
    signal = float(row["reinforcement"]) + 0.5 * int(row["effective_retrievals"]) - int(row["failed_uses"])
    count = int(row["retrieval_count"]) + (usage.count if usage else 0)
    last = row["retrieved_ts"]
    if usage:
        pending_ts = _epoch(usage.last_at)
        if pending_ts is not None and (last is None or pending_ts > last):
            last = pending_ts
    heat = 0.0
    if last is not None and s.heat_half_life_days > 0:
        since = max(0.0, now_ts - float(last)) / _DAY
        heat = (1 - math.exp(-count / 10)) * 0.5 ** (since / s.heat_half_life_days)
    cand.parts = {
        "relevance": round(s.relevance * cand.lexical, 4),
        "recency": round(s.recency * recency, 4),
        "importance": round(s.importance * float(row["importance"]), 4),
        "reinforcement": round(s.reinforcement * math.tanh(signal / 3), 4),
        "heat": round(s.heat * heat, 4),
        "graph": 0.0,
    }
    cand.score = round(sum(cand.parts.values()), 4)


def _epoch(stamp: str) -> float | None:
    try:
        return instant(stamp).timestamp()
    except ValueError:
        return None


def _expand(
    vault: Vault,
    cands: dict[str, Candidate],
    where: str,
    params: Sequence[Any],
    at: str,
    s: RecallSettings,
    now_ts: float,
    pending: Mapping[str, Usage],
    edges: _Edges,
    *,
    current: bool,
    cutoff: float,
    floor: float,
) -> None:
    # Only confident hits spread: a weak match below the relevance floor is not shown,
    # so what it links to would surface without a reason the reader can see.
    seeds = sorted(
        (
            c for c in cands.values()
            if c.lexical_rank is not None and (c.relevance is None or c.relevance >= floor)
        ),
        key=lambda c: (-c.score, c.id),
    )[: s.expansion_seeds]
    fetched: dict[str, Mapping[str, Any]] = {}
    # The most any part but the graph's can add (each factor is at most 1).
    priors = s.recency + s.importance + s.reinforcement + s.heat

    def admit(reached: Mapping[str, float], final: bool) -> set[str]:
        known = {i for i in reached if i in cands}
        rest = sorted(set(reached) - known)
        if final:
            # Nothing spreads from the last hop: an item whose best possible score is
            # below the limit-th hit's cannot be returned, so its row is not read.
            rest = [i for i in rest if s.graph * min(1.0, reached[i]) + priors + 1e-3 >= cutoff]
        for i in range(0, len(rest), 500):
            chunk = rest[i : i + 500]
            for row in rows(vault, f"{sql_in('id', chunk)} AND {where}", [*chunk, *params]):
                # Superseded items do not surface by association: their successor may.
                if not _retired(row, at) and not (current and _successor(row)):
                    fetched[row["id"]] = row
        return known | (set(rest) & set(fetched))

    settings = SpreadSettings(
        kind_weights=s.edge_weights, max_hops=s.max_hops, decay=s.hop_decay,
        min_activation=s.min_activation, fan_limit=s.fan_limit,
    )
    reached = spread({c.id: c.lexical for c in seeds}, edges, admit, settings)
    for node, activation in reached.items():
        cand = cands.get(node)
        if cand is None:
            row = fetched.get(node)
            if row is None:
                continue
            cand = cands[node] = Candidate(row)
            _score(cand, s, now_ts, pending.get(node))
        cand.activation = activation
        cand.parts["graph"] = round(s.graph * activation.value, 4)
        cand.score = round(sum(cand.parts.values()), 4)


# ---------------------------------------------------------------------- disclosure


def _tokens(text: str | None) -> int:
    return 0 if not text else (len(text) + 3) // 4  # ~4 characters a token in English


def _disclose(
    vault: Vault, cands: Sequence[Candidate], tier: str, budget: int, edges: _Edges
) -> tuple[list[SearchHit], int]:
    """Hits at the requested tier; ``auto`` upgrades in rank order while the budget lasts
    (every hit first gets its catalog line, so the list is never cut for a long body)."""
    if not cands:
        return [], 0
    ids = [c.id for c in cands]
    bodies: dict[int, str] = {}
    tag_lists: dict[int, str] = {}
    if tier != "catalog":  # a catalog line needs neither the body nor the tags
        rowids = [int(c.row["rowid"]) for c in cands]
        # SQLite picks the tags out of the frontmatter JSON: parsing all of it here cost
        # more than the rest of disclosure.
        sql = f"SELECT rowid, body, json_extract(meta, '$.tags') AS tags FROM items WHERE {sql_in('rowid', rowids)}"
        for r in vault.index.query(sql, rowids):
            bodies[r["rowid"]], tag_lists[r["rowid"]] = r["body"], r["tags"] or ""
    warnings = _warnings(vault, ids, edges)
    costs = [_tokens(f"{c.id} {c.row['title']} {c.row['path']} {c.row['kind']}") + 4 for c in cands]
    used = 0
    hits: list[SearchHit] = []
    for i, cand in enumerate(cands):
        reserve = sum(costs[i + 1 :]) if tier == "auto" else 0
        body = bodies.get(int(cand.row["rowid"]), "")
        digest = _digest(cand, body)
        options = (
            ["content", "digest", "catalog"] if tier == "auto" else [tier]
        )
        for option in options:
            extra = _tokens(digest) if option == "digest" else _tokens(body) + _tokens(digest) if option == "content" else 0
            cost = costs[i] + extra
            if used + cost + reserve <= budget or (option == "catalog" and not hits):
                tags = tag_lists.get(int(cand.row["rowid"]), "")
                hits.append(_hit(cand, option, digest, body, warnings.get(cand.id, ()), tags))
                used += cost
                break
        else:
            break  # an explicit tier that no longer fits: stop (the budget is a limit)
    return hits, used


def _digest(cand: Candidate, body: str) -> str:
    summary = str(cand.row["summary"] or "").strip()
    if summary:
        return summary
    text = " ".join(body.split())
    return text[:280] + ("…" if len(text) > 280 else "")


def _hit(
    cand: Candidate, tier: str, digest: str | None, body: str, warnings: tuple[HitWarning, ...], tags_json: str
) -> SearchHit:
    row = cand.row
    tags = tuple(json.loads(tags_json)) if tier != "catalog" and tags_json else ()
    explanation = Explanation(
        matched_terms=cand.matched,
        missing_terms=cand.missing,
        parts=MappingProxyType(dict(cand.parts)),
        lexical_rank=cand.lexical_rank,
        path=cand.activation.path if cand.activation else (),
        replaces=tuple(cand.replaces),
    )
    return SearchHit(
        id=cand.id, path=str(row["path"]), title=str(row["title"]), kind=str(row["kind"]),
        domain=str(row["domain"]), status=str(row["status"]), score=cand.score,
        relevance=cand.relevance, via="lexical" if cand.lexical_rank is not None else "graph",
        tier=tier, explanation=explanation, tags=tags,
        summary=digest if tier != "catalog" else None,
        content=body if tier == "content" else None, warnings=warnings,
    )


def _warnings(vault: Vault, ids: Sequence[str], cache: _Edges) -> dict[str, tuple[HitWarning, ...]]:
    edges = cache.contradicts(ids)
    if not edges:
        return {}
    others = sorted({e.source for e in edges} | {e.target for e in edges})
    visible = {
        r["id"]: r
        for r in vault.index.query(
            f"SELECT id, title, path FROM items WHERE {sql_in('id', others)}"
            f" AND status NOT IN ({','.join('?' * len(HIDDEN_STATUSES))})",
            [*others, *HIDDEN_STATUSES],
        )
    }
    out: dict[str, list[HitWarning]] = {}
    wanted = set(ids)
    for edge in edges:
        for mine, other in ((edge.source, edge.target), (edge.target, edge.source)):
            if mine in wanted and other in visible:
                row = visible[other]
                out.setdefault(mine, []).append(
                    HitWarning("contradicts", other, str(row["title"]), str(row["path"]), edge.weight)
                )
    return {k: tuple(v) for k, v in out.items()}


__all__ = [
    "DEFAULT_EDGE_WEIGHTS",
    "Explanation",
    "HitWarning",
    "RecallSettings",
    "SearchHit",
    "SearchResult",
    "recall_settings",
    "search",
]
