"""Disclosure: how much of each hit an answer carries, within a token budget.

Tiers: ``catalog`` (id, title, path), ``digest`` (+ summary, or the start of the body,
and tags), ``content`` (+ the body), or ``auto``, which upgrades hits in rank order
while the budget lasts. Every hit first gets its catalog line, so a long body never
cuts the list. ``contradicts`` neighbours of a hit come with it as warnings, never as
hits of their own. Tokens are estimated at four characters each.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import MappingProxyType

from engram.index.catalog import Index
from engram.recall.graph import EdgeCache
from engram.recall.lexical import Candidate, sql_in
from engram.recall.results import Explanation, HitWarning, SearchHit
from engram.store.model import HIDDEN_STATUSES


def _tokens(text: str | None) -> int:
    return 0 if not text else (len(text) + 3) // 4  # ~4 characters a token in English


def disclose(
    index: Index, cands: Sequence[Candidate], tier: str, budget: int, edges: EdgeCache
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
        for r in index.query(sql, rowids):
            bodies[r["rowid"]], tag_lists[r["rowid"]] = r["body"], r["tags"] or ""
    warnings = _warnings(index, ids, edges)
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
