"""Recall: lexical relevance blended with what the vault knows about each item, expanded
along synapses, with honest abstention, disclosure tiers and an explanation per hit.

The pipeline for one query, each stage a function :func:`run` calls in turn (every step
reads the derived index, never Markdown):

1. ``_request``: :mod:`engram.index.query` turns the text into quoted terms (any input
   is safe); the filters become SQL.
2. :func:`from_words`, candidates from words: BM25 on the word index with column
   weights (title > tags > summary > body) — first the items holding every term of a short query, then those holding its
   rarest terms (:func:`engram.recall.lexical.word_match`) — the trigram index for what
   the word index cannot match (substrings, CJK), and a bounded scan for fragments under
   three characters. Each path's scores are divided by its best, so the top candidate
   has lexical relevance 1.
   :func:`from_meaning`, candidates from vectors (:mod:`engram.recall.meaning`, started
   on a worker thread before the words): the query's vector is compared with every
   item's (one product, :mod:`engram.recall.vectors`); the nearest the words did not
   find join the candidates.
3. Succession (both sources): a candidate with a visible successor (``supersededBy``, or a
   ``supersedes`` edge from an item the filters admit at the query's instant) hands its
   place to that successor; one deactivated with no successor is dropped. ``as_of``
   before the succession sees the old item, because the successor is not yet active.
4. :func:`fuse`: every candidate gets its similarity, and one score; with meaning
   beside them, word matches below the relevance floor count only as far as their
   meaning agrees. Score = relevance·r + recency·2^(−age/halfLife) + importance·i
   + reinforcement·tanh((reinforcementScore + ½·effectiveRetrievals − failedUses)/3)
   + heat·(1 − e^(−retrievals/10))·2^(−sinceLastRetrieval/heatHalfLife)
   + complete·[holds every query term] + time·[written in a period the query names]
   + meaning·closeness(cos) (the sentence encoder, on by default)
   + semantic·max(0, cos(query, item)) when the optional static model is on
   (:mod:`engram.recall.semantic`; weights from the ``recall`` section of ``engram.yaml``, see
   :class:`~engram.recall.settings.RecallSettings`; dates: :mod:`engram.recall.when`).
   A person's note adds the counters kept beside it (:mod:`engram.items.sidecar`) to
   those its file gives.
5. :func:`spread_from_hits`, graph expansion (:mod:`engram.recall.graph`) from the best
   hits adds ``graph·activation`` to the items it reaches, which may enter the results
   without sharing a word with the query. ``contradicts`` neighbours become warnings on the hit.
6. :func:`abstain`, on the fused evidence: a hit's *relevance* is the IDF-weighted share
   of the query's terms it contains (the query counting up to four rare words' worth); a
   hit is also confident when it is close enough in meaning (``minSimilarity``, or the
   nearest item standing out). When no hit is confident either way the answer is
   ``no_confident_match`` with the closest items
   as ``near_misses``. The floor decides the answer, never the list: a confident answer
   keeps its weaker hits, so ``limit`` N returns N whenever N items match (and, under
   ``tier=auto``, fit the token budget); a hit that shares one word with a question of
   several and is below the floor comes after the items expansion reached
   (:func:`_lone_words_after_links`).
7. Tiers (:mod:`engram.recall.disclosure`): ``catalog``, ``digest``, ``content``, or
   ``auto``, whose token budget is a bound: catalog lines in rank order while they fit,
   then upgrades in rank order; hits that do not fit are left out, and the answer says
   how many and the budget that carries them. An explicit tier lists every hit.
8. The returned hits are journaled (:mod:`engram.recall.usage`) — never written to Markdown.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.index.query import ParsedQuery, parse
from engram.items import sidecar
from engram.items.sidecar import Kept
from engram.items.state import VaultState
from engram.recall.disclosure import disclose
from engram.recall.graph import EdgeCache, SpreadSettings, spread
from engram.recall.lexical import Candidate, candidates, judge, rows, sql_in
from engram.recall.meaning import Sense, foresee
from engram.recall.results import TIERS, Meaning, SearchResult, Status
from engram.recall.semantic import Meaning as StaticMeaning
from engram.recall.semantic import meaning as static
from engram.recall.settings import RecallSettings, recall_settings
from engram.recall.usage import Usage, journal_for
from engram.recall.when import Period, date_words, dated_in, periods
from engram.store import rules
from engram.store.model import instant, now

MAX_LIMIT = 200
_DAY = 86_400.0


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
    """Graph-expanded recall: lexical hits blended with recency, importance,
    reinforcement and heat, expanded along synapses (see the module docstring).

    Filters are those of :func:`engram.items.reading.list_items`; ``as_of`` recalls what
    the vault held at an instant; ``tier`` is catalog, digest, content or auto (with a
    token ``budget``); ``expand=False`` turns graph expansion off; ``raw`` takes FTS5
    syntax as is; ``record=False`` leaves the usage journal alone. Below the relevance
    floor the result's status is ``no_confident_match``. Raises InvalidInput.
    """
    state.ensure_fresh()
    filters = rules.Filters.of(
        domain=domain, kinds=kinds, tags=tags, statuses=statuses, visibility=visibility,
        min_importance=min_importance, include_hidden=include_hidden,
    )
    return run(
        state, query, filters, limit=limit, as_of=as_of, tier=tier, budget=budget,
        expand=expand, raw=raw, record=record, min_relevance=min_relevance,
    )


def run(
    state: VaultState,
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
    """Search with validated ``filters`` (the caller has brought the index up to date). Raises InvalidInput for a bad filter, tier, limit or raw query.

    One query, top to bottom, a stage a function (the module docstring says what each does).
    """
    started = time.perf_counter()
    s = recall_settings(state)
    q = _request(query, filters, s, limit=limit, as_of=as_of, tier=tier, raw=raw, min_relevance=min_relevance)
    # The meaning stage (the query's vector, its product with every item's) runs beside the words.
    early = foresee(state, query, s) if not raw and s.meaning > 0 else None
    world = _World(
        s, instant(q.at).timestamp(), journal_for(state).pending(), sidecar.load(state.state_dir),
        EdgeCache(state.index), static(query, s.semantic) if not raw else None,
    )
    words, complete = from_words(state, q, s)
    sense, meant = early.result() if early is not None else (None, Meaning("off"))
    found = from_meaning(state, q, world, sense, words)
    cands = fuse(state, q, world, words, complete, found, sense)
    expanded = expand and s.max_hops > 0 and bool(cands)
    if expanded:
        spread_from_hits(state, q, world, cands, sense, current=as_of is None)
    ranked, status, near, best = abstain(q, cands, sense)
    budget = budget if budget is not None else s.token_budget
    shown = disclose(state.index, ranked[: q.limit], tier, budget, world.edges)
    # Near misses stand in for hits: under ``auto`` the budget bounds them too.
    misses = disclose(state.index, near, "catalog", budget, world.edges, bounded=tier == "auto").hits
    if record and shown.hits:
        journal_for(state).record([(h.id, h.score) for h in shown.hits], now(), by=state.actor)
    return SearchResult(
        query=query, status=status, hits=tuple(shown.hits), near_misses=tuple(misses),
        terms=tuple(t.text for t in q.parsed.terms), ignored=q.parsed.stopwords,
        truncated=q.parsed.truncated, floor=q.floor,
        best_relevance=round(best, 4) if best is not None else None, expanded=expanded,
        tokens=shown.tokens, budget_reached=shown.budget_reached, left_out=shown.left_out,
        needed_budget=shown.needed, elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        meaning=meant,
    )


# ---------------------------------------------------------------------- the stages


@dataclass(frozen=True, slots=True)
class _Request:
    """One validated query: what every stage reads of it."""

    text: str
    parsed: ParsedQuery
    raw: bool
    limit: int
    floor: float  # minRelevance, or the caller's
    at: str  # the instant recalled (now, or ``as_of``)
    where: str  # the filters as SQL, quarantine and ``as_of`` included
    params: tuple[Any, ...]
    pool: int  # how many candidates a source brings
    when: tuple[Period, ...]  # periods the query names
    dated: frozenset[str]  # its words that name them (answered by an item's time, not its text)


@dataclass(frozen=True, slots=True)
class _World:
    """What scoring reads of the vault besides the candidates, read once per query."""

    s: RecallSettings
    now_ts: float
    pending: Mapping[str, Usage]  # usage journaled since the last fold
    kept: Mapping[str, Kept]  # the counters of people's notes
    edges: EdgeCache
    flavour: StaticMeaning | None  # the optional static model's view of the query


def _request(
    query: str, filters: rules.Filters, s: RecallSettings, *, limit: int | None, as_of: str | None, tier: str,
    raw: bool, min_relevance: float | None,
) -> _Request:
    """Validate the arguments and parse the query. Raises InvalidInput."""
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
    # Quarantined text never reaches a reader, whatever the filters ask for (engram.trust):
    # curators review it with `engram quarantine list`.
    where += " AND status != 'quarantined'"
    if as_of is not None:  # what existed then; retirement is decided by succession
        where += " AND COALESCE(activated_at, created_at) <= ?"
        params = [*params, at]
    when = periods(query) if not raw and s.time > 0 else ()
    # An item's timestamp, not its text, answers for the words naming a date: an item
    # written in the period holds them, the others do not (a query that is nothing but
    # a date keeps matching it as text).
    dated = date_words(query) if when else frozenset()
    if all(t.text in dated for t in parsed.terms):
        dated = frozenset()
    return _Request(
        query, parsed, raw, limit, floor, at, where, tuple(params), max(s.candidates, limit * 2), when, dated,
    )


def from_words(state: VaultState, q: _Request, s: RecallSettings) -> tuple[dict[str, Candidate], set[str]]:
    """Candidates from words (step 2 and 3 of the module docstring), after succession,
    each judged for the share of the query's terms it holds; and the ids of those
    holding every term (a query of two words or more)."""
    stats = state.index.search.doc_counts([t.text for t in q.parsed.terms if t.kind != "substring"])
    cands, fragments, known, lacking = candidates(
        state.index, q.parsed, q.text if q.raw else None, q.where, list(q.params), q.pool,
        (s.title_weight, s.summary_weight, s.tags_weight, s.body_weight), s.candidate_postings, stats,
    )
    cands = _succession(state, cands, q.where, q.params, q.at)
    if q.raw or not cands:
        return cands, set()
    # Coverage first: it is the abstention signal, it re-weighs BM25 (``coverage``) and
    # an item holding every term of the query ranks ahead (``complete``). Only the best
    # candidates are judged, and those the index showed to hold every term.
    every = frozenset(t for t in q.parsed.terms if t.kind != "substring" and t.text not in q.dated)

    def whole(c: Candidate) -> bool:
        return bool(every) and every <= known.get(int(c.row["rowid"]), frozenset())

    judged = sorted(cands.values(), key=lambda c: (not whole(c), -c.lexical))[: q.limit + 2]
    cands = {c.id: c for c in judged}
    written = {
        int(c.row["rowid"]) for c in judged if q.dated and dated_in(_epoch(str(c.row["created_at"])), q.when)
    }
    judge(state.index, q.parsed, judged, stats, known, fragments=fragments, dated=(q.dated, written), lacking=lacking)
    if s.coverage > 0:
        for cand in cands.values():
            cand.lexical *= 1 - s.coverage + s.coverage * (cand.relevance or 0.0)
        top = max(c.lexical for c in cands.values()) or 1.0
        for cand in cands.values():
            cand.lexical /= top
    complete = {c.id for c in cands.values() if not c.missing and c.matched} if len(q.parsed.terms) > 1 else set()
    return cands, complete


def from_meaning(
    state: VaultState, q: _Request, world: _World, sense: Sense | None, words: Mapping[str, Candidate]
) -> dict[str, Candidate]:
    """Candidates from vectors: the items nearest the query in meaning that the words
    did not find (the filters and succession apply to them as to the others)."""
    if sense is None:
        return {}
    seen = {int(c.row["rowid"]) for c in words.values()} | {r for c in words.values() for r in c.replaced_rowids}
    near = {rid: cos for rid, cos in sense.nearest(max(world.s.meaning_candidates, q.pool)) if rid not in seen}
    if not near:
        return {}
    ids = list(near)
    found = {
        str(row["id"]): Candidate(row, similarity=near[int(row["rowid"])])
        for row in rows(state.index, f"{sql_in('rowid', ids)} AND {q.where}", [*ids, *q.params])
    }
    return {c.id: c for c in _succession(state, found, q.where, q.params, q.at).values() if c.id not in words}


def fuse(
    state: VaultState, q: _Request, world: _World, words: dict[str, Candidate], complete: set[str],
    found: Mapping[str, Candidate], sense: Sense | None,
) -> dict[str, Candidate]:
    """Fusion (step 4): one score per candidate of either source — relevance, the
    vault's priors, the meaning part — as a weighted sum of calibrated parts
    (:mod:`engram.recall.meaning` says why a sum and not rank fusion)."""
    s = world.s
    for cand in words.values():
        _score(cand, s, world.now_ts, world.pending.get(cand.id), cand.id in complete, q.when, world.kept.get(cand.id))
    for cand in found.values():
        # A period the question names is answered by an item's time whichever source found it.
        _score(cand, s, world.now_ts, world.pending.get(cand.id), when=q.when, kept=world.kept.get(cand.id))
    cands = {**words, **found}
    if world.flavour is not None:
        world.flavour.apply(state.index, cands.values())
    if sense is not None:
        sense.apply(cands.values())
        _weigh_chance(words.values(), q.floor, sense)
        for cand in words.values():
            if cand.id in complete:
                # An item holding every word of the question stays ahead of one that is
                # only close in meaning (known-item lookups: the note four of whose words
                # were typed); among such items meaning still orders.
                cand.parts["complete"] += sense.weight
                cand.score = round(sum(cand.parts.values()), 4)
    return cands


def spread_from_hits(
    state: VaultState, q: _Request, world: _World, cands: dict[str, Candidate], sense: Sense | None, *, current: bool
) -> None:
    """Graph expansion (step 5): activation spreads from the confident hits along
    synapses; what it reaches is scored like the rest."""
    s = world.s
    # Scores only grow during expansion, so the limit-th score of the hits that will be
    # kept bounds what a newly reached item must be able to beat.
    kept = sorted((c.score for c in cands.values() if q.raw or _confident(c, q.floor, sense)), reverse=True)
    cutoff = kept[q.limit - 1] if len(kept) >= q.limit else -math.inf
    flavour = world.flavour
    _expand(
        state, cands, q.where, q.params, q.at, s, world.now_ts, world.pending, world.edges, world.kept,
        current=current, cutoff=cutoff, floor=0.0 if q.raw else q.floor, sense=sense,
        bonus=(flavour.weight if flavour else 0.0) + (sense.weight if sense else 0.0),
    )
    if flavour is not None:  # the items expansion reached
        flavour.apply(state.index, cands.values())
    if sense is not None:
        sense.apply(cands.values())


def abstain(
    q: _Request, cands: Mapping[str, Candidate], sense: Sense | None
) -> tuple[list[Candidate], Status, list[Candidate], float | None]:
    """Abstention on the fused evidence (step 6): the ranked hits, the status, the near
    misses that stand in for hits when no hit is confident, and the best relevance."""
    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.id))
    if q.raw:
        return ranked, "ok", [], None
    ranked = _lone_words_after_links(ranked, q.floor)
    best = max((c.relevance or 0.0 for c in ranked if c.lexical_rank is not None), default=0.0)
    if best < q.floor and not (sense is not None and any(sense.sure(c) for c in ranked)):
        # The floor decides the answer, not the list: a confident answer keeps its
        # weaker hits (``limit`` N returns N when N match), each with its relevance.
        return [], "no_confident_match", ranked[:3], best
    return ranked, "ok", [], best


def _weigh_chance(cands: Iterable[Candidate], floor: float, sense: Sense) -> None:
    """With meaning beside the words, a word match below the relevance floor counts
    only as far as its meaning agrees: it shares a word or two with the question, which
    is what chance gives, and BM25's scores are relative (the best candidate has 1
    however little it matched), so without this an item sharing "day" and "use" with
    the question outranks the answer found by what it means. Its relevance part is
    scaled by its share of the floor and by its closeness (0 for unrelated text)."""
    if floor <= 0:
        return
    for cand in cands:
        if cand.relevance is not None and cand.relevance < floor and cand.parts.get("relevance"):
            agree = sense.closeness(cand.similarity) if cand.similarity is not None else 1.0
            cand.parts["relevance"] = round(cand.parts["relevance"] * cand.relevance / floor * agree, 4)
            cand.score = round(sum(cand.parts.values()), 4)


def _confident(cand: Candidate, floor: float, sense: Sense | None) -> bool:
    """Whether ``cand`` alone would make the answer confident: enough of the query's
    words, or close enough in meaning."""
    return (cand.relevance or 0.0) >= floor or (sense is not None and sense.sure(cand))


def _lone_words_after_links(ranked: list[Candidate], floor: float) -> list[Candidate]:
    """``ranked`` with each hit that shares one word with a question of several and is
    below the floor moved after the last item reached through a link: a link from a
    confident hit is a reason, one word in common is what chance gives (the demo's
    "twice"). Still listed: ``limit`` N returns N. Without links, nothing moves."""
    linked = [i for i, c in enumerate(ranked) if c.lexical_rank is None]
    if not linked:
        return ranked
    head = ranked[: linked[-1] + 1]

    def lone(c: Candidate) -> bool:
        return (
            c.lexical_rank is not None and c.activation is None and len(c.matched) == 1
            and bool(c.missing) and (c.relevance or 0.0) < floor
        )

    return [c for c in head if not lone(c)] + [c for c in head if lone(c)] + ranked[linked[-1] + 1 :]


def _retired(row: Mapping[str, Any], at: str) -> bool:
    deactivated = row["deactivated_at"]
    return bool(deactivated) and str(deactivated) <= at


def _successor(row: Mapping[str, Any]) -> str | None:
    """The item named as this one's successor: ``supersededBy``, else a ``supersedes``
    synapse pointing at it."""
    return str(row["superseded_by"] or row["successor_edge"] or "") or None


def _succession(
    state: VaultState, cands: dict[str, Candidate], where: str, params: Sequence[Any], at: str
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
            row = found.row if found else next(iter(rows(state.index, f"id = ? AND {where}", [nxt, *params])), None)
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


def _score(
    cand: Candidate, s: RecallSettings, now_ts: float, usage: Usage | None,
    complete: bool = False, when: tuple[Period, ...] = (), kept: Kept | None = None,
) -> None:
    row = cand.row
    recency = 0.0
    if row["updated_ts"] is not None and s.recency_half_life_days > 0:
        age = max(0.0, now_ts - float(row["updated_ts"])) / _DAY
        recency = 0.5 ** (age / s.recency_half_life_days)
    signal = float(row["reinforcement"]) + 0.5 * int(row["effective_retrievals"]) - int(row["failed_uses"])
    count = int(row["retrieval_count"]) + (usage.count if usage else 0)
    last = row["retrieved_ts"]
    importance = float(row["importance"])
    if kept is not None:  # a note's counters kept beside it (engram.items.sidecar)
        signal += kept.reinforcement + 0.5 * kept.effective - kept.failed
        count += kept.retrievals
        importance = min(1.0, max(0.0, importance + kept.importance))
        kept_ts = _epoch(kept.last_retrieved) if kept.last_retrieved else None
        if kept_ts is not None and (last is None or kept_ts > last):
            last = kept_ts
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
        "importance": round(s.importance * importance, 4),
        "reinforcement": round(s.reinforcement * math.tanh(signal / 3), 4),
        "heat": round(s.heat * heat, 4),
        "complete": s.complete if complete else 0.0,
        "time": s.time if when and dated_in(_epoch(str(row["created_at"])), when) else 0.0,
        "graph": 0.0,
    }
    cand.score = round(sum(cand.parts.values()), 4)


def _epoch(stamp: str) -> float | None:
    try:
        return instant(stamp).timestamp()
    except ValueError:
        return None


def _expand(
    state: VaultState,
    cands: dict[str, Candidate],
    where: str,
    params: Sequence[Any],
    at: str,
    s: RecallSettings,
    now_ts: float,
    pending: Mapping[str, Usage],
    edges: EdgeCache,
    kept: Mapping[str, Kept],
    *,
    current: bool,
    cutoff: float,
    floor: float,
    sense: Sense | None = None,
    bonus: float = 0.0,
) -> None:
    # Only confident hits spread: a weak match below the relevance floor is not shown,
    # so what it links to would surface without a reason the reader can see. A hit
    # close enough in meaning is confident too, and spreads its closeness.
    seeds = sorted(
        (
            c for c in cands.values()
            if (c.lexical_rank is not None and (c.relevance is None or c.relevance >= floor))
            or (sense is not None and sense.sure(c))
        ),
        key=lambda c: (-c.score, c.id),
    )[: s.expansion_seeds]
    fetched: dict[str, Mapping[str, Any]] = {}
    # The most any part but the graph's can add (each factor is at most 1; ``bonus`` is
    # the weight of the meaning parts, added after expansion).
    priors = s.recency + s.importance + s.reinforcement + s.heat + bonus

    def admit(reached: Mapping[str, float], final: bool) -> set[str]:
        known = {i for i in reached if i in cands}
        rest = sorted(set(reached) - known)
        if final:
            # Nothing spreads from the last hop: an item whose best possible score is
            # below the limit-th hit's cannot be returned, so its row is not read.
            rest = [i for i in rest if s.graph * min(1.0, reached[i]) + priors + 1e-3 >= cutoff]
        for i in range(0, len(rest), 500):
            chunk = rest[i : i + 500]
            for row in rows(state.index, f"{sql_in('id', chunk)} AND {where}", [*chunk, *params]):
                # Superseded items do not surface by association: their successor may.
                if not _retired(row, at) and not (current and _successor(row)):
                    fetched[row["id"]] = row
        return known | (set(rest) & set(fetched))

    settings = SpreadSettings(
        kind_weights=s.edge_weights, max_hops=s.max_hops, decay=s.hop_decay,
        min_activation=s.min_activation, fan_limit=s.fan_limit,
    )
    strength = {c.id: max(c.lexical, sense.closeness(c.similarity) if sense is not None and c.similarity is not None else 0.0) for c in seeds}
    reached = spread(strength, edges, admit, settings, around=edges.around)
    for node, activation in reached.items():
        cand = cands.get(node)
        if cand is None:
            row = fetched.get(node)
            if row is None:
                continue
            cand = cands[node] = Candidate(row)
            _score(cand, s, now_ts, pending.get(node), kept=kept.get(node))
        cand.activation = activation
        cand.parts["graph"] = round(s.graph * activation.value, 4)
        cand.score = round(sum(cand.parts.values()), 4)
