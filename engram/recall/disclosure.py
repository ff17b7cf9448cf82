"""Disclosure: how much of each hit an answer carries, within a token budget.

Tiers: ``catalog`` (id, title, path), ``digest`` (+ summary, or the start of the body,
and tags), ``content`` (+ the body), or ``auto``, which upgrades hits in rank order
while the budget lasts. The budget never shortens the list: every hit gets at least
its catalog line (those are reserved first), and a hit the budget can no longer carry
at the requested tier comes as a catalog line, the answer saying the budget was reached.
The first hit always gets the tier asked for (``auto``: the richest that fits, else its
digest). ``contradicts`` neighbours of a hit come with it as warnings, never as hits of
their own. Tokens are estimated at four characters each.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from engram.index.catalog import Index
from engram.recall.graph import EdgeCache
from engram.recall.lexical import Candidate, sql_in
from engram.recall.results import Explanation, HitWarning, SearchHit
from engram.store.model import HIDDEN_STATUSES


def _tokens(text: str | None) -> int:
    return 0 if not text else (len(text) + 3) // 4  # ~4 characters a token in English


@dataclass(frozen=True, slots=True)
class Disclosed:
    """The hits of an answer, the tokens they cost, and whether the budget ran out
    (some hit came as a catalog line where a richer tier was asked for)."""

    hits: list[SearchHit]
    tokens: int
    budget_reached: bool


def disclose(
    index: Index, cands: Sequence[Candidate], tier: str, budget: int, edges: EdgeCache
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
    costs = [_tokens(f"{c.id} {c.row['title']} {c.row['path']} {c.row['kind']}") + 4 for c in cands]
    # What upgrades may spend: the budget less every hit's catalog line.
    spare = budget - sum(costs)
    used = sum(costs)
    reached = False
    options: tuple[str, ...] = ("content", "digest") if tier == "auto" else () if tier == "catalog" else (tier,)
    hits: list[SearchHit] = []
    for i, cand in enumerate(cands):
        body = bodies.get(int(cand.row["rowid"]), "")
        digest = _digest(cand, body)
        chosen = "catalog"
        for option in options:
            # A content hit carries the body and its own summary, never an excerpt of
            # the body it already holds.
            extra = _tokens(body) + _tokens(_summary(cand)) if option == "content" else _tokens(digest)
            if extra <= spare or (i == 0 and (tier != "auto" or option == "digest")):
                chosen, spare, used = option, spare - extra, used + extra
                break
        reached = reached or (bool(options) and chosen != options[0])
        tags = tag_lists.get(int(cand.row["rowid"]), "")
        hits.append(_hit(cand, chosen, digest, body, warnings.get(cand.id, ()), tags))
    return Disclosed(hits, used, reached or used > budget)


def _summary(cand: Candidate) -> str:
    return str(cand.row["summary"] or "").strip()


def _digest(cand: Candidate, body: str) -> str:
    summary = _summary(cand)
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
        summary=(_summary(cand) or None) if tier == "content" else digest if tier == "digest" else None,
        content=body if tier == "content" else None, warnings=warnings,
        scope=str(row["visibility"] or "team"),
    )


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
