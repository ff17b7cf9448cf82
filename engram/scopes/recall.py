"""One search over every scope: this vault (private and team items) and the org vault.

:func:`search` runs the recall pipeline (:func:`engram.recall.search.search`) on this
vault and, when an org vault is configured and cloned, on the org clone's own index,
then merges the two ranked lists by score. Each hit says its scope: ``private`` or
``team`` for this vault's items (their visibility), ``org`` for the org vault's. An item
this team promoted lives in both; it is returned once, as this vault's copy (its body
and links are the team's), with scope ``org``.

Scores are comparable because both pipelines use the same settings and the same blend.
Each pipeline scales lexical relevance to its own best match; the merge rescales the
relevance part of the scope whose best match covers less of the query (the IDF-weighted
share of its terms, an absolute measure) by that ratio, so an org vault that only half
answers a query does not rank its best half-answer level with a full answer here. Each vault
answers in full and the token budget is kept once, over the merged list, exactly as for one
vault (:func:`engram.recall.disclosure.fit`).

Cost: the org index is a second SQLite file; a query pays one more pipeline run over it
(the org clone is kept fresh the same way as the vault: a watcher in long-lived
processes). Nothing reaches the network: the clone is as fresh as the last
:func:`engram.scopes.org.sync_org`. Org hits are not journaled (usage is this team's).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from types import MappingProxyType

from engram.errors import InvalidInput, NotFound
from engram.items import reading
from engram.items.state import VaultState
from engram.recall.disclosure import Fit, fit, hit_chars, shapes_of
from engram.recall.results import SearchHit, SearchResult
from engram.recall.search import search as recall_search
from engram.recall.settings import recall_settings
from engram.recall.usage import journal_for
from engram.scopes.org import org_state
from engram.store import rules
from engram.store.model import VISIBILITIES, Engram, now

SCOPES = VISIBILITIES  # private, team, org
UNBOUNDED = 10**9  # tokens: a vault's answer before the merged list is fitted to the budget


def search(
    state: VaultState,
    query: str,
    *,
    limit: int | None = None,
    domain: str | Sequence[str] | None = None,
    kinds: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    statuses: Iterable[str] | None = None,
    visibility: Iterable[str] | None = None,
    min_importance: float | None = None,
    include_hidden: bool = False,
    as_of: str | None = None,
    tier: str = "auto",
    budget: int | None = None,
    expand: bool = True,
    raw: bool = False,
    record: bool = True,
    min_relevance: float | None = None,
) -> SearchResult:
    """Graph-expanded recall over this vault and the org vault (see the module
    docstring); the arguments are those of :func:`engram.recall.search.search`, and
    ``visibility`` doubles as the scope filter (``["org"]``: org knowledge only). Each
    hit's ``scope`` says where it lives. Raises InvalidInput."""
    started = time.perf_counter()
    wanted = tuple(visibility) if visibility is not None else None
    for scope in wanted or ():
        if scope not in SCOPES:
            raise InvalidInput(f"scope {scope!r} is not one of {', '.join(SCOPES)}.", field="visibility",
                               hint="Use private, team or org.")
    common = dict(
        limit=limit, domain=domain, kinds=kinds, tags=tags, statuses=statuses, min_importance=min_importance,
        include_hidden=include_hidden, as_of=as_of, tier=tier, expand=expand, raw=raw,
        min_relevance=min_relevance,
    )
    org = org_state(state) if wanted is None or "org" in wanted else None
    here, there = state, org
    if as_of is not None:  # time travel searches each vault as it was then: its versions at T
        from engram.team import past

        when = rules.timestamp("as_of", as_of)
        here = past.snapshot(state, when)
        there = past.snapshot(org, when) if org is not None else None
    if there is None:
        mine = recall_search(here, query, visibility=wanted, record=False, budget=budget, **common)  # type: ignore[arg-type]
        _journal(state, mine.hits, record)
        return mine
    # Each vault answers in full; the budget is kept once, over the merged list.
    mine = recall_search(here, query, visibility=wanted, record=False, budget=UNBOUNDED, **common)  # type: ignore[arg-type]
    theirs = recall_search(there, query, visibility=("team", "org"), record=False, budget=UNBOUNDED, **common)  # type: ignore[arg-type]
    merged = _merge(mine, theirs, limit or recall_settings(state).limit)
    s = recall_settings(state)
    budget = budget if budget is not None else s.token_budget
    ok = mine.status == "ok" or theirs.status == "ok"
    hits, fitted = _fit(merged if ok else [], tier, budget)
    mine_ids = {h.id for h in mine.hits}
    _journal(state, tuple(h for h in hits if h.id in mine_ids), record)
    near: list[SearchHit] = []
    if not ok:
        near, _ = _fit(sorted((*mine.near_misses, *_as_org(theirs.near_misses)), key=lambda h: -h.score)[:3],
                       "catalog", budget, bounded=tier == "auto")
    return replace(
        mine,
        status="ok" if ok else "no_confident_match",
        hits=tuple(hits),
        near_misses=tuple(near),
        best_relevance=max((r for r in (mine.best_relevance, theirs.best_relevance) if r is not None), default=None),
        expanded=mine.expanded or theirs.expanded,
        tokens=fitted.tokens,
        budget_reached=fitted.reached,
        left_out=fitted.left_out,
        needed_budget=fitted.needed,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _as_org(hits: Iterable[SearchHit]) -> tuple[SearchHit, ...]:
    return tuple(replace(h, scope="org") for h in hits)


def _calibrated(result: SearchResult, top: float) -> tuple[SearchHit, ...]:
    """Hits whose relevance part is rescaled from "relative to this scope's best" to
    "relative to the best of both scopes", by the absolute coverage of each best match."""
    best = result.best_relevance
    if best is None or top <= 0 or best >= top:
        return result.hits
    factor = best / top
    out = []
    for hit in result.hits:
        part = float(hit.explanation.parts.get("relevance", 0.0))
        parts = MappingProxyType({**hit.explanation.parts, "relevance": round(part * factor, 4)})
        out.append(replace(hit, score=round(hit.score - part * (1 - factor), 4),
                           explanation=replace(hit.explanation, parts=parts)))
    return tuple(out)


def _merge(mine: SearchResult, theirs: SearchResult, limit: int) -> list[SearchHit]:
    top = max((r for r in (mine.best_relevance, theirs.best_relevance) if r is not None), default=0.0)
    org_ids = {h.id for h in theirs.hits}
    out: dict[str, SearchHit] = {}
    for hit in _calibrated(mine, top):
        out[hit.id] = replace(hit, scope="org") if hit.id in org_ids else hit
    for hit in _as_org(_calibrated(theirs, top)):
        if hit.id not in out:
            out[hit.id] = hit
        elif hit.score > out[hit.id].score:
            out[hit.id] = replace(out[hit.id], score=hit.score)
    ranked = sorted(out.values(), key=lambda h: (-h.score, h.scope == "org", h.id))
    return ranked[:limit]


def _fit(hits: Sequence[SearchHit], tier: str, budget: int, *, bounded: bool | None = None) -> tuple[
        list[SearchHit], Fit]:
    """Keep the token budget over the merged list, as
    :func:`engram.recall.disclosure.disclose` does for one list (the same
    :func:`~engram.recall.disclosure.fit`): each vault disclosed its hits within the whole
    budget, so the merged list steps hits down — or, under ``tier=auto``, leaves them out."""
    shapes = [shapes_of(h) for h in hits]
    chosen = fit([{t: hit_chars(h) for t, h in shape.items()} for shape in shapes], tier, budget, bounded=bounded)
    return [shape[t] for shape, t in zip(shapes, chosen.tiers, strict=False)], chosen


def _journal(state: VaultState, hits: Sequence[SearchHit], record: bool) -> None:
    if record and hits:
        journal_for(state).record([(h.id, h.score) for h in hits], now(), by=state.actor)


def get_any(state: VaultState, ref: str) -> tuple[Engram, str]:
    """The item ``ref`` names and its scope: this vault first, then the org clone (so an
    org hit of :func:`search` can be read in full). Raises NotFound, InvalidInput."""
    try:
        item = reading.get(state, ref)
        return item, item.visibility
    except NotFound:
        org = org_state(state)
        if org is None:
            raise
        try:
            return reading.get(org, ref), "org"
        except NotFound:
            raise NotFound(
                f"no item matches {ref!r} in this vault or the org vault.", ref=ref,
                hint="Pass an id from a search; `engram scopes sync` brings the org vault up to date.",
            ) from None
