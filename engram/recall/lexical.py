"""Lexical candidates for recall: which items a query's words find, and how much of the
query each one holds.

:func:`candidates` runs the paths of :mod:`engram.index.search` — BM25 on the word index
(candidates chosen by the query's rarest terms, see :func:`word_match`), the trigram
index for identifiers, substrings and CJK, a bounded scan for fragments under three
characters — divides each path's scores by its best and adds them up, so the best
candidate has lexical relevance 1. :func:`judge` then computes each judged candidate's
*relevance*: the IDF-weighted share of the query's terms it holds, where the query's
IDF mass counts up to :data:`SATURATION` rare words' worth (the abstention signal and
the coverage factor of the ranking), asking the index only about terms the candidate
query did not already prove. A candidate holding one word of a question of several
counts only what it holds beyond chance (:func:`beyond_chance`).

Candidates are mutable :class:`Candidate` records that :mod:`engram.recall.search` goes on to
score, expand and disclose.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram.index.catalog import Index
from engram.index.query import ParsedQuery, Term, quote
from engram.index.search import Hit
from engram.recall.graph import Activation


@dataclass(slots=True)
class Candidate:
    """A candidate while it is being ranked (mutable; becomes a
    :class:`~engram.recall.results.SearchHit`)."""

    row: Mapping[str, Any]
    lexical: float = 0.0  # 0..1, best path's normalised BM25
    lexical_rank: int | None = None
    activation: Activation | None = None
    replaces: list[str] = field(default_factory=list)
    replaced_rowids: list[int] = field(default_factory=list)
    parts: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    relevance: float | None = None
    matched: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    similarity: float | None = None  # cosine with the query, when the encoder saw the item

    @property
    def id(self) -> str:
        return str(self.row["id"])


ROW_COLUMNS = (
    "rowid, id, path, title, kind, domain, status, tags_text, summary, importance,"
    " created_at, updated_at, activated_at, deactivated_at, superseded_by, retrieval_count,"
    " last_retrieved_at, reinforcement, effective_retrievals, failed_uses, visibility,"
    " updated_ts, retrieved_ts,"
    # the item a `supersedes` synapse names as this one's successor (index on target, kind)
    " (SELECT min(source) FROM synapses WHERE target = items.id AND kind = 'supersedes'"
    " AND source != items.id) AS successor_edge"
)


def rows(index: Index, where: str, params: Sequence[Any]) -> list[Mapping[str, Any]]:
    """Items passing the SQL condition ``where``, as dicts of :data:`ROW_COLUMNS`."""
    sql = f"SELECT {ROW_COLUMNS} FROM items WHERE {where}"
    return [dict(r) for r in index.query(sql, params)]


def sql_in(column: str, values: Sequence[Any]) -> str:
    """``column IN (?, …)`` with one placeholder per value."""
    return f"{column} IN ({','.join('?' * len(values))})"


def candidates(
    index: Index,
    parsed: ParsedQuery,
    raw_query: str | None,
    where: str,
    params: Sequence[Any],
    pool: int,
    weights: tuple[float, float, float, float],
    budget: int,
    stats: tuple[int, Mapping[str, int]],
) -> tuple[dict[str, Candidate], bool, dict[int, frozenset[Term]], dict[int, frozenset[Term]]]:
    """Lexical candidates by id, whether words were matched as fragments, the terms each
    word-index hit is known to hold (its query was one term, or an AND) and those it is
    known to lack (a hit of the fill: every item holding a rare term was found before).

    ``weights`` are the BM25 column weights (title, summary, tags, body); ``budget`` is
    ``candidatePostings`` (see :func:`word_match`)."""
    fragments = False
    known: dict[int, frozenset[Term]] = {}
    lacking: dict[int, frozenset[Term]] = {}
    title, summary, tags, text = weights
    word_weights = (title, summary, tags, text)
    tri_weights = (title, tags, text)
    paths: list[tuple[float, list[Hit]]] = []
    cols = ROW_COLUMNS
    every = frozenset(t for t in parsed.terms if t.kind in ("word", "phrase"))

    def whole(rowid: int) -> bool:
        return len(every) > 1 and every <= known.get(rowid, frozenset())

    if raw_query is not None:
        paths.append((1.0, index.search.word_hits(raw_query, word_weights, where, params, pool, columns=cols, raw=True)))
    else:
        wq = word_match(parsed, stats[1], budget, stats[0])
        hits: list[Hit] = []
        steps = [(step, False, False) for step in wq.steps] if wq is not None else []
        if wq is not None and wq.fill:
            steps.append((wq.fill, wq.sampled, True))
        for step, sampled, filling in steps:
            # A sampled fill costs ~FILL budgets of postings: only for a pool that cannot
            # fill the answer itself (the pool is at least twice the limit).
            if len(hits) >= (pool // 2 if sampled else pool):
                break
            # A later step adds what the ones before missed. Every step's score is BM25
            # over the same statistics, so they rank together.
            step_hits, masks = index.search.word_hits_many(
                [match for match, _ in step], word_weights, where, params, pool, columns=cols,
                last=FILL * budget if sampled else None,
            )
            for h in step_hits:
                if h[0] not in known:
                    held = [t for i, (_, t) in enumerate(step) if masks[h[0]] >> i & 1]
                    known[h[0]] = frozenset().union(*held)
                    if filling and wq is not None:
                        lacking[h[0]] = wq.rare
                    hits.append(h)
            # Items holding every term keep their place however low their BM25.
            hits = sorted(hits, key=lambda h: (not whole(h[0]), -h[1]))[:pool]
        if wq is not None:
            paths.append((1.0, hits))
    if raw_query is None:
        tri = parsed.trigram_match(lambda t: stats[1].get(t.text, 0) > 0)
        if tri:
            paths.append((0.5, index.search.trigram_hits(tri, tri_weights, where, params, pool, columns=cols)))
        short = list(parsed.short_fragments())
        if not any(hits for _, hits in paths):
            # Nothing as typed: try word fragments as substrings ("atabas" → database).
            pieces = [t for t in parsed.words if len(t.text) >= 3]
            if pieces:
                fragments = True
                substrings = " OR ".join(quote(t.text) for t in pieces)
                paths.append((0.5, index.search.trigram_hits(substrings, tri_weights, where, params, pool, columns=cols)))
            short += [t for t in parsed.words if len(t.text) < 3]
        for term in short:
            paths.append((0.5, index.search.scan_hits(term.text, where, params, pool, columns=cols)))
    combined: dict[int, float] = {}
    rows: dict[int, Mapping[str, Any]] = {}
    for weight, hits in paths:
        top = max((score for _, score, _ in hits), default=0.0)
        for rowid, score, row in hits:
            if top > 0:
                combined[rowid] = combined.get(rowid, 0.0) + weight * score / top
                rows[rowid] = row
    if not combined:
        return {}, fragments, known, lacking
    order = sorted(combined, key=lambda r: (not whole(r), -combined[r]))[:pool]
    best = combined[order[0]]
    out: dict[str, Candidate] = {}
    for rank, rowid in enumerate(order, start=1):
        found = rows[rowid]
        if found["id"] not in out:
            out[found["id"]] = Candidate(found, lexical=combined[rowid] / best, lexical_rank=rank)
    return out, fragments, known, lacking


@dataclass(frozen=True, slots=True)
class WordQuery:
    """The word-index queries that select candidates (see :func:`word_match`). A step is
    one or more FTS5 queries ranked together, each with the terms every item it finds
    holds; a step runs only while the ones before found fewer than the candidate pool."""

    steps: tuple[tuple[tuple[str, frozenset[Term]], ...], ...]
    #: The commoner terms alone, for a pool the steps left short, and whether their
    #: lists are too long to rank whole (then only the last FILL budgets' worth of items
    #: in index order are ranked: an arbitrary but fixed sample).
    fill: tuple[tuple[str, frozenset[Term]], ...] = ()
    sampled: bool = False
    #: The rare terms the steps select by: a pool they leave short holds every item
    #: that has one, so the fill's items have none.
    rare: frozenset[Term] = frozenset()


#: How many rare words' worth of a query's IDF a whole answer needs (see :func:`judge`).
SATURATION = 4.0
#: Queries of at most this many terms first ask for the items holding all of them.
ALL_TERMS_MAX = 8
#: Commoner terms scored together with the rare ones (the commonest weigh least).
COMMON_MAX = 8
#: How many ``candidatePostings`` budgets the items holding only commoner terms may cost
#: when the rare terms found too few candidates.
FILL = 2


def word_match(
    parsed: ParsedQuery, df: Mapping[str, int], budget: int, total: int
) -> WordQuery | None:
    """The word-index queries that select candidates.

    First, for a query of two to :data:`ALL_TERMS_MAX` terms, the items holding every
    term (an AND seeks into the long lists instead of walking them, so this costs about
    what walking the rarest list costs): a known item is found however common its words.

    Then FTS5 computes BM25 for every item that contains any term of an OR query (about
    a microsecond each), so candidates are selected by the rarest terms whose combined
    item counts stay within ``budget`` (``candidatePostings``); commoner terms are left
    out of the selection — they would cost thousands of rows for a weight near zero —
    but every item holding a rare term is scored by all the terms it holds: ranked
    together are the items holding a rare term alone and those holding a rare and a
    commoner term (``(rare) AND (common)``, up to :data:`COMMON_MAX` commoner terms).
    The top of that union is what an uncapped BM25 gives the items holding a rare term
    (exactly, when no more than :data:`COMMON_MAX` commoner terms are left). When that
    union is smaller than the pool (a narrow filter, one rare word beside common ones),
    the items holding only commoner terms are added, ranked by the same BM25 (``fill``):
    all of them when their lists hold at most :data:`FILL` budgets' worth of items, else
    the last that many in index order (``sampled``), so ``limit`` N returns N whenever N
    items match, at a bounded cost; an item holding only common terms is what the cap
    can miss.

    When even the rarest term is over budget, the candidates are the items holding all
    of the fewest rarest terms expected (as if words were independent) to share at most
    ``budget`` items. If that finds too few, the items holding the two rarest terms,
    then the rarest alone, then (the fill) the others, are added."""
    terms = [t for t in parsed.terms if t.kind in ("word", "phrase")]
    if not terms:
        return None
    ordered = sorted(terms, key=lambda t: (df.get(t.text, 0), t.kind != "phrase"))
    cost = [df.get(t.text, 0) for t in ordered]
    steps: list[tuple[tuple[str, frozenset[Term]], ...]] = []
    if 2 <= len(ordered) <= ALL_TERMS_MAX and all(cost):
        steps.append(((" AND ".join(t.fts for t in ordered), frozenset(ordered)),))
    if cost[0] > budget and len(ordered) > 1:
        expected = float(cost[0])
        k = 1
        while k < len(ordered) and k < 4 and expected > budget:
            expected *= cost[k] / max(total, 1)
            k += 1
        widths = sorted({k, 2, 1}, reverse=True)
        steps += [((" AND ".join(t.fts for t in ordered[:w]), frozenset(ordered[:w])),) for w in widths]
        return _with_fill(steps, ordered[:1], ordered[1:], df, budget)
    chosen: list[Term] = []
    spent = 0
    for term, n in zip(ordered, cost, strict=True):
        if chosen and spent + n > budget:
            break
        chosen.append(term)
        spent += n
    rare = " OR ".join(t.fts for t in chosen)
    holds = frozenset(chosen) if len(chosen) == 1 else frozenset()
    left = [t for t, n in zip(ordered[len(chosen):], cost[len(chosen):], strict=True) if n][:COMMON_MAX]
    if not left:
        steps.append(((rare, holds),))
        return WordQuery(tuple(steps))
    common = " OR ".join(t.fts for t in left)
    both = holds | (frozenset(left) if len(left) == 1 else frozenset())
    steps.append(((f"({rare}) AND ({common})", both), (rare, holds)))
    return _with_fill(steps, chosen, left, df, budget)


def _with_fill(
    steps: list[tuple[tuple[str, frozenset[Term]], ...]], rare: Sequence[Term], others: Sequence[Term],
    df: Mapping[str, int], budget: int,
) -> WordQuery:
    """The steps, then the fill: the commoner terms alone, for a pool the steps leave
    short (their last step finds every item holding a ``rare`` term, so the fill's have
    none)."""
    left = [t for t in others if df.get(t.text, 0)][:COMMON_MAX]
    if not left:
        return WordQuery(tuple(steps))
    fill = ((" OR ".join(t.fts for t in left), frozenset(left) if len(left) == 1 else frozenset()),)
    sampled = sum(df.get(t.text, 0) for t in left) > FILL * budget
    return WordQuery(tuple(steps), fill, sampled, frozenset(rare))


def judge(
    index: Index,
    parsed: ParsedQuery,
    cands: Sequence[Candidate],
    stats: tuple[int, Mapping[str, int]],
    known: Mapping[int, frozenset[Term]],
    *,
    fragments: bool,
    dated: tuple[frozenset[str], set[int]] = (frozenset(), set()),
    lacking: Mapping[int, frozenset[Term]] | None = None,
) -> None:
    """Matched terms and IDF-weighted query coverage for lexical candidates (``fragments``:
    words were looked up as substrings, so a substring match counts; ``known``: terms
    the word-index query already showed a row to hold, which need no lookup; ``dated``:
    the words naming a period the query asks about, and the rows written then, which
    hold those words whatever their text says; ``lacking``: terms a row is known not to
    hold, which need no lookup either)."""
    if not cands or not parsed.terms:
        return
    total, df = stats
    rowids = sorted({int(c.row["rowid"]) for c in cands} | {r for c in cands for r in c.replaced_rowids})
    matched: dict[Term, set[int]] = {}
    specs: list[tuple[Term, tuple[str, bool, int | None, Sequence[int]]]] = []
    date_words, written_then = dated
    absent = lacking or {}
    for term in informative(parsed.terms, df, total):
        if term.text in date_words:
            matched[term] = {r for r in rowids if r in written_then}
            continue
        matched[term] = {r for r in rowids if term in known.get(r, ())}
        todo = [r for r in rowids if r not in matched[term]]
        if not todo:
            continue
        # What the word index showed a row to lack needs no word-index lookup; a
        # substring (trigram) match is another question, still asked.
        words = [r for r in todo if term not in absent.get(r, ())]
        if term.kind == "word":
            if words:
                specs.append((term, (term.fts, False, df.get(term.text, 0), words)))
            if fragments and len(term.text) >= 3:
                specs.append((term, (term.fts, True, None, todo)))
        elif term.kind == "phrase":
            specs += [(term, (term.fts, False, None, words))] if words else []
            specs.append((term, (term.fts, True, None, todo)))
        elif len(term.text) >= 3:
            specs.append((term, (term.fts, True, None, todo)))
        else:
            hits = index.search.scan_hits(term.text, sql_in("rowid", todo), todo, len(todo))
            matched[term] |= {r for r, _, _ in hits}
    found = index.search.matching_many([spec for _, spec in specs])
    for (term, _), rowset in zip(specs, found, strict=True):
        matched[term] |= rowset

    def holding(term: Term) -> int:
        return df.get(term.text, len(matched.get(term, ()))) if term.kind != "substring" else len(matched.get(term, ()))

    counts = {t: holding(t) for t in matched}
    weights = {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in counts.items()}
    # Evidence saturates: matching about SATURATION rare words' worth of the query is a
    # whole answer, so a long question whose best item holds its rarest words is
    # confident, while a short one must be matched nearly whole.
    denominator = min(sum(weights.values()), SATURATION * math.log(1 + total)) or 1.0
    for cand in cands:
        # A successor answers for the superseded text it stands in for.
        own = [int(cand.row["rowid"]), *cand.replaced_rowids]
        best: tuple[float, tuple[Term, ...]] = (-1.0, ())
        for rid in own:
            got = tuple(t for t in matched if rid in matched[t])
            share = sum(weights[t] for t in got) / denominator
            if len(got) == 1 and len(matched) > 1:
                share = beyond_chance(share, got[0], weights, counts, total, denominator)
            if share > best[0]:
                best = (share, got)
        cand.matched = tuple(t.text for t in best[1])
        cand.missing = tuple(t.text for t in matched if t not in best[1])
        cand.relevance = round(min(1.0, best[0]), 4)


def beyond_chance(
    share: float, held: Term, weights: Mapping[Term, float], counts: Mapping[Term, int], total: int,
    denominator: float,
) -> float:
    """The ``share`` of an item holding one word (``held``) of a question of several,
    beyond what chance gives any item: the share of the query the vault's *other* items
    hold on average (each term weighted by the fraction of them holding it), rescaled so
    a whole answer stays 1. In a vault of twelve, "twice" held by two items is 0.28 of
    "charge a customer twice" but 0.20 beyond chance, below the default floor; the only
    item holding a word keeps its weight for it (its own word is not chance)."""
    others = max(total - 1, 1)
    chance = sum(w * max(0, counts[t] - (t == held)) for t, w in weights.items()) / others / denominator
    chance = min(chance, 0.5)  # a question of words most items hold keeps half its scale
    return max(0.0, share - chance) / (1 - chance)


def informative(terms: Sequence[Term], df: Mapping[str, int], total: int, most: int = 32) -> list[Term]:
    """The query's rarest terms (explaining 32 terms per hit would cost more than it says)."""
    if len(terms) <= most:
        return list(terms)
    return sorted(terms, key=lambda t: df.get(t.text, 0) if t.kind != "substring" else -1)[:most]
