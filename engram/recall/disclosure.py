"""Disclosure: how much of each hit an answer carries, within a token budget.

Tiers: ``catalog`` (id, title, path), ``digest`` (+ summary, or the start of the body,
and tags), ``content`` (+ the body), or ``auto``, the richest that fits the budget.

``auto`` treats the budget as a bound: the hits it answers fit it. Catalog lines come
first, in rank order, as many as fit — breadth before depth, so the best hits are all
named — then the spare is spent upgrading hits in rank order (content if it fits, else
a digest; never a hit richer than a better-ranked one). Hits whose catalog line no longer fits are left out, and the answer says how
many and the budget that carries them all (``needed``: what was answered plus their
catalog lines, so asking again with it returns every hit). An explicit tier is what was
asked for: every hit is listed (``limit`` N returns N), the first at that tier, the rest
at it while the budget lasts and as catalog lines after.

A hit is counted as an agent receives it: :meth:`SearchHit.brief` as compact JSON,
``ceil(characters / 4)`` tokens (the project's estimate; no tokenizer ships), the list
it sits in included — so the ``hits`` of an ``engram_search`` answer (without
``explain``) are exactly what the budget bounds. The answer's envelope (query, terms,
message, the untrusted-data frame) is the same size whatever the hits and is not
counted. ``contradicts`` neighbours of a hit come with it as warnings, never as hits of
their own, and count as part of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from engram.index.catalog import Index
from engram.recall.graph import EdgeCache
from engram.recall.lexical import Candidate, sql_in
from engram.recall.results import Explanation, HitWarning, SearchHit, Via
from engram.store.model import HIDDEN_STATUSES

CHARS_PER_TOKEN = 4  # ~4 characters a token in English


def tokens(chars: int) -> int:
    """The project's estimate for ``chars`` characters of JSON."""
    return -(-chars // CHARS_PER_TOKEN)


def hit_chars(hit: SearchHit) -> int:
    """Characters of ``hit`` as an agent receives it (compact JSON of its brief)."""
    return len(json.dumps(hit.brief(), ensure_ascii=False, separators=(",", ":")))


@dataclass(frozen=True, slots=True)
class Fit:
    """How a ranked list is disclosed: the tier of each hit kept (a prefix of the list),
    the tokens they cost, whether the budget ran out (a hit came at a lower tier or was
    left out), and — for a bounded answer — how many hits were left out and the budget
    that carries them all."""

    tiers: tuple[str, ...]
    tokens: int
    reached: bool
    left_out: int = 0
    needed: int = 0


def fit(sizes: Sequence[Mapping[str, int]], tier: str, budget: int, *, bounded: bool | None = None) -> Fit:
    """Choose a tier for each hit (see the module docstring). ``sizes[i]`` maps the tiers
    hit ``i`` can take to its characters at each; ``catalog`` is always there.
    ``bounded`` (default: ``tier == "auto"``) leaves out what does not fit."""
    bounded = tier == "auto" if bounded is None else bounded
    if not sizes:
        return Fit((), 0, False)
    limit = budget * CHARS_PER_TOKEN
    lines = [size["catalog"] + 1 for size in sizes]  # +1: the comma or bracket beside it in the list
    used = 1  # "[" + hits joined by "," + "]" is 1 + sum(each hit + 1)
    kept = len(sizes)
    for i, line in enumerate(lines):
        if bounded and used + line > limit:
            kept = i
            break
        used += line
    options: tuple[str, ...] = ("content", "digest") if tier == "auto" else () if tier == "catalog" else (tier,)
    best = options[0] if options else "catalog"
    spare = limit - used
    chosen: list[str] = []
    for i in range(kept):
        pick = "catalog"
        for j, option in enumerate(options):
            if option not in sizes[i]:
                continue
            extra = sizes[i][option] - sizes[i]["catalog"]
            if extra <= spare or (i == 0 and not bounded):  # an explicit tier: the first hit always gets it
                pick, spare, used = option, spare - extra, used + extra
                # Best first: a hit never gets more than a better-ranked one did.
                options = options[j:]
                break
        else:
            options = ()
        chosen.append(pick)
    reached = kept < len(sizes) or used > limit or any(t != best for t in chosen)
    rest = sum(lines[kept:])
    return Fit(tuple(chosen), tokens(used) if kept else 0, reached, len(sizes) - kept,
               tokens(used + rest) if rest else 0)


@dataclass(frozen=True, slots=True)
class Disclosed:
    """The hits of an answer, the tokens they cost, whether the budget ran out, and
    (``tier=auto``) how many hits it left out and the budget that carries them all."""

    hits: list[SearchHit]
    tokens: int
    budget_reached: bool
    left_out: int = 0
    needed: int = 0


def disclose(
    index: Index, cands: Sequence[Candidate], tier: str, budget: int, edges: EdgeCache,
    *, bounded: bool | None = None,
) -> Disclosed:
    """Every candidate as a hit, at the requested tier while the budget lasts (see the
    module docstring)."""
    if not cands:
        return Disclosed([], 0, False)
    ids = [c.id for c in cands]
    bodies: dict[int, str] = {}
    tag_lists: dict[int, str] = {}
    if tier != "catalog":  # a catalog line needs neither the body nor the tags
        rowids = [int(c.row["rowid"]) for c in cands]
        # SQLite picks the tags out of the frontmatter JSON: parsing all of it here cost
        # more than the rest of disclosure.
        sql = f"SELECT rowid, body, json_extract(meta, '$.tags') AS tags FROM items WHERE {sql_in('rowid', rowids)}"
        for r in index.query(sql, rowids):
            bodies[r["rowid"]], tag_lists[r["rowid"]] = r["body"], r["tags"] or ""
    warnings = _warnings(index, ids, edges)
    wanted = ("catalog",) if tier == "catalog" else ("catalog", "digest", "content") if tier == "auto" else (
        "catalog", tier)
    shapes: list[dict[str, SearchHit]] = []
    for cand in cands:
        body = bodies.get(int(cand.row["rowid"]), "")
        tags = tag_lists.get(int(cand.row["rowid"]), "")
        digest = _digest(cand, body)
        shapes.append({t: _hit(cand, t, digest, body, warnings.get(cand.id, ()), tags) for t in wanted})
    chosen = fit([{t: hit_chars(h) for t, h in shape.items()} for shape in shapes], tier, budget, bounded=bounded)
    hits = [shape[t] for shape, t in zip(shapes, chosen.tiers, strict=False)]
    return Disclosed(hits, chosen.tokens, chosen.reached, chosen.left_out, chosen.needed)


def _summary(cand: Candidate) -> str:
    return str(cand.row["summary"] or "").strip()


def _digest(cand: Candidate, body: str) -> str:
    return digest_of(_summary(cand), body)


def digest_of(summary: str, body: str) -> str:
    """A digest hit's text: the summary, else the start of the body."""
    if summary:
        return summary
    text = " ".join(body.split())
    return text[:280] + ("…" if len(text) > 280 else "")


def shapes_of(hit: SearchHit) -> dict[str, SearchHit]:
    """``hit`` at each tier it can still take (never richer than it came)."""
    out = {"catalog": replace(hit, tier="catalog", summary=None, content=None, tags=())}
    if hit.tier == "content" and hit.content is not None:
        out["digest"] = replace(hit, tier="digest", content=None, summary=digest_of(hit.summary or "", hit.content))
        out["content"] = hit
    elif hit.tier == "digest":
        out["digest"] = hit
    return out


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
        similarity=None if cand.similarity is None else round(cand.similarity, 4),
    )
    return SearchHit(
        id=cand.id, path=str(row["path"]), title=str(row["title"]), kind=str(row["kind"]),
        domain=str(row["domain"]), status=str(row["status"]), score=cand.score,
        relevance=cand.relevance, via=_via(cand),
        tier=tier, explanation=explanation, tags=tags,
        summary=(_summary(cand) or None) if tier == "content" else digest if tier == "digest" else None,
        content=body if tier == "content" else None, warnings=warnings,
        scope=str(row["visibility"] or "team"),
    )


def _via(cand: Candidate) -> Via:
    """How a hit was found: by its words, else by meaning, else along a link."""
    if cand.lexical_rank is not None:
        return "lexical"
    return "meaning" if cand.activation is None and cand.similarity is not None else "graph"


def _warnings(index: Index, ids: Sequence[str], cache: EdgeCache) -> dict[str, tuple[HitWarning, ...]]:
    edges = cache.contradicts(ids)
    if not edges:
        return {}
    others = sorted({e.source for e in edges} | {e.target for e in edges})
    visible = {
        r["id"]: r
        for r in index.query(
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
