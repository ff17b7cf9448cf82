"""Search primitives of the derived index: what :mod:`engram.recall.search` composes.

Each :class:`~engram.index.catalog.Index` owns one :class:`SearchPrimitives` as
``index.search`` (it keeps the word-count cache for that database). Every statement runs
through the index's :meth:`~engram.index.catalog.Index.fts_tuples` /
:meth:`~engram.index.catalog.Index.fts_rows`, which hold the index lock and translate
``sqlite3`` errors (a bad raw FTS5 query becomes :class:`~engram.errors.InvalidInput`,
anything else :class:`~engram.errors.StorageError`); this module never imports
``sqlite3``.

Ranking cost: FTS5 computes BM25 for every row that contains any term of the MATCH, about
a microsecond each, and keeps no top-k shortcut. Callers therefore choose which terms
select candidates (see ``candidatePostings`` in :mod:`engram.recall.search`); here, ranking
happens inside the FTS table (faster than sorting a join), and filters and row reads run
on that shortlist in one statement.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram.index.query import quote
from engram.index.wikilinks import LINK_KIND, LINK_WEIGHT

if TYPE_CHECKING:
    from engram.index.catalog import Index

#: Items counted per word before the rest are estimated (see ``SearchPrimitives._count``);
#: at least the default ``candidatePostings``, so choosing candidates sees exact counts.
COUNT_CAP = 1000

#: A search hit from the index: (rowid, score, the requested columns by name).
Hit = tuple[int, float, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Edge:
    """One synapse as the graph sees it."""

    source: str
    target: str
    kind: str
    weight: float


class SearchPrimitives:
    """Read-only search queries over one index's tables (see the module docstring)."""

    def __init__(self, index: Index) -> None:
        self._index = index
        #: Item counts per query word, valid at the (``changes`` tally, schema version)
        #: they were counted at: the tally moves with every item written or removed, and
        #: a rebuild, which starts the tally again, changes the schema version.
        self._word_counts: tuple[tuple[int, int], dict[str, int]] | None = None

    def doc_counts(self, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(number of items, {word: number of items whose word index holds it}), stemmed
        as the word index stems. One statement counts the words not seen since the last
        item change and reads the item tally; counts are cached until the ``changes``
        tally moves (any item written or removed, by any process) or the index is
        rebuilt."""
        cached = self._word_counts
        wanted = list(dict.fromkeys(words))
        known = cached[1] if cached is not None else {}
        total, changes, counts = self._count([w for w in wanted if w not in known])
        if cached is not None and cached[0] != changes:
            # Items changed since the cache was filled: count every word in one snapshot.
            if any(w not in counts for w in wanted):
                total, changes, counts = self._count(wanted)
            known = {}
        if cached is not None and known is cached[1] and len(known) < 50_000:
            known.update(counts)  # same snapshot as the cache's: still one consistent set
        else:
            known = dict(counts)
        self._word_counts = (changes, known)
        return total, {w: known[w] for w in words}

    def _count(self, words: Sequence[str]) -> tuple[int, tuple[int, int], dict[str, int]]:
        # count(*) walks a posting list without decoding positions (as cheap as fts5vocab)
        # and the word goes through the index's own tokenizer (no second stemmer). A walk
        # stops after COUNT_CAP items; a commoner word's count is estimated from how far
        # into the rowids its first COUNT_CAP items reach. On the 100k scale vault that
        # moves IDFs (under 4.6 there) by 0.02 at the median and 0.04 at the 90th
        # percentile, and a walk of 90,000 items would have cost 6 ms.
        counts = ", ".join(
            ["(SELECT count(*) || ' ' || coalesce(max(r), 0) FROM (SELECT rowid AS r FROM items_fts"
             " WHERE items_fts MATCH ? ORDER BY rowid LIMIT ?))"] * len(words)
        )
        params: list[Any] = []
        for word in words:
            params += [quote(word), COUNT_CAP]
        row = self._index.fts_tuples(
            "SELECT (SELECT n FROM tally WHERE key = 'items'),"
            " (SELECT n FROM tally WHERE key = 'changes'),"
            " (SELECT schema_version FROM pragma_schema_version()), (SELECT max(rowid) FROM items)"
            + (", " + counts if counts else ""),
            params,
            False,
        )[0]
        total, changes, top = int(row[0]), (int(row[1]), int(row[2])), int(row[3] or 0)
        out: dict[str, int] = {}
        for word, cell in zip(words, row[4:], strict=True):
            n, _, last = str(cell).partition(" ")
            count = int(n)
            if count >= COUNT_CAP and last and int(last) > 0:
                count = min(total, max(count, round(count * top / int(last))))
            out[word] = count
        return total, changes, out

    def word_hits(
        self,
        match: str,
        weights: Sequence[float],
        where: str,
        params: Sequence[Any],
        limit: int,
        *,
        columns: str = "rowid",
        raw: bool = False,
    ) -> list[Hit]:
        """The best ``limit`` items for an FTS5 query on the word index that pass the SQL
        filter ``where``, as (rowid, score, row of ``columns``); score = −BM25 with
        per-column weights (title, summary, tags, body), higher is better.

        FTS5 ranks inside the virtual table first (much faster than sorting a join), and
        the filters apply to that shortlist in the same query that reads the rows; when
        filters leave too few, the query is run again as a join that filters first.
        """
        return self._ranked("items_fts", (match,), weights, where, params, limit, columns, raw=raw)[0]

    def word_hits_many(
        self,
        matches: Sequence[str],
        weights: Sequence[float],
        where: str,
        params: Sequence[Any],
        limit: int,
        *,
        columns: str = "rowid",
        last: int | None = None,
    ) -> tuple[list[Hit], dict[int, int]]:
        """:meth:`word_hits` for several queries ranked together (their BM25 scores share
        the index's statistics; an item found by more than one keeps its best score), and
        for each hit a bit mask of the queries whose shortlist held it. Rows are read
        once, for the merged best. ``last`` N ranks only the last N items in index order
        (by rowid) that each query matches: a bounded cost however long its lists are,
        unless the filters leave too few of those, when the filtered set is ranked whole."""
        return self._ranked("items_fts", matches, weights, where, params, limit, columns, last=last)

    def trigram_hits(
        self,
        match: str,
        weights: Sequence[float],
        where: str,
        params: Sequence[Any],
        limit: int,
        *,
        columns: str = "rowid",
    ) -> list[Hit]:
        """Like :meth:`word_hits` on the trigram index (title, tags, identifiers)."""
        return self._ranked("items_tri", (match,), weights, where, params, limit, columns)[0]

    def _ranked(
        self,
        table: str,
        matches: Sequence[str],
        weights: Sequence[float],
        where: str,
        params: Sequence[Any],
        limit: int,
        columns: str,
        *,
        raw: bool = False,
        last: int | None = None,
    ) -> tuple[list[Hit], dict[int, int]]:
        # bm25() as a column sorted by SQLite's top-k sorter: a third faster than FTS5's
        # own ``ORDER BY rank``, which runs a nested statement to sort every match.
        rank = f"bm25({table}, " + ", ".join(f"{float(w):.4f}" for w in weights) + ")"
        inner = max(limit * 2, 40)  # room for filters; too few left runs the join below
        score: dict[int, float] = {}
        found: dict[int, int] = {}
        full = False
        # FTS5 walks a doclist backwards from its end and seeks to a rowid bound, so the
        # last N matches cost about N postings to find and to rank.
        floors = [0] * len(matches)
        if last:
            for i, match in enumerate(matches):
                edge = self._index.fts_tuples(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                    (match, last - 1),
                    raw,
                )
                floors[i] = int(edge[0][0]) if edge else 0
        for i, match in enumerate(matches):
            bound = " AND rowid >= ?" if floors[i] else ""
            ranked = self._index.fts_tuples(
                f"SELECT rowid, {rank} AS r_ FROM {table} WHERE {table} MATCH ?{bound} ORDER BY r_ LIMIT ?",
                (match, *([floors[i]] if floors[i] else []), inner),
                raw,
            )
            full = full or len(ranked) == inner
            for rowid, r in ranked:
                rowid, value = int(rowid), -float(r)
                found[rowid] = found.get(rowid, 0) | (1 << i)
                if value > score.get(rowid, -math.inf):
                    score[rowid] = value
        order = sorted(score, key=lambda r: -score[r])
        hits: list[Hit] = []
        start = 0
        while len(hits) < limit and start < len(order):
            # Rows of the best ``limit`` first; the rest only if filters turned some away
            # (a row read is most of the cost once BM25 has ranked).
            batch = order[start : start + (limit if start == 0 else len(order))]
            start += len(batch)
            rows = self._index.fts_rows(
                f"SELECT rowid AS rowid_, {columns} FROM items"
                f" WHERE rowid IN ({','.join('?' * len(batch))}) AND {where}",
                (*batch, *params),
            )
            hits += [(r["rowid_"], score[r["rowid_"]], r) for r in rows]
        if len(hits) < limit and (full or (any(floors) and len(hits) < len(order))):
            # Filters emptied a shortlist (or a bounded sample): rank the filtered set
            # itself (slower), the whole of it even when only the last matches were asked
            # for, since a filter that leaves too few of those is narrow enough that the
            # bound buys nothing.
            best: dict[int, Hit] = {}
            for i, match in enumerate(matches):
                rows = self._index.fts_rows(
                    f"SELECT f.r AS rowid_, f.score_ AS score_, {columns}"
                    f" FROM (SELECT rowid AS r, -{rank} AS score_ FROM {table}"
                    f" WHERE {table} MATCH ?) f JOIN items ON items.rowid = f.r"
                    f" WHERE {where} ORDER BY f.score_ DESC LIMIT ?",
                    (match, *params, limit),
                    raw,
                )
                for r in rows:
                    rowid = int(r["rowid_"])
                    found[rowid] = found.get(rowid, 0) | (1 << i)
                    if rowid not in best or float(r["score_"]) > best[rowid][1]:
                        best[rowid] = (rowid, float(r["score_"]), r)
            hits = list(best.values())
        return sorted(hits, key=lambda h: -h[1])[:limit], found

    def scan_hits(
        self, needle: str, where: str, params: Sequence[Any], limit: int, *, columns: str = "rowid"
    ) -> list[Hit]:
        """Items whose title, summary, tags or body contain ``needle`` (case-insensitive for
        ASCII): the path for fragments too short for trigrams. A table scan that stops at
        ``limit`` hits; a title hit scores 3, tags 2, summary 1.5, body 1."""
        rows = self._index.fts_rows(
            "SELECT rowid AS rowid_, (CASE WHEN instr(lower(title), lower(?1)) THEN 3.0 ELSE 0 END)"
            " + (CASE WHEN instr(lower(tags_text), lower(?1)) THEN 2.0 ELSE 0 END)"
            " + (CASE WHEN instr(lower(summary), lower(?1)) THEN 1.5 ELSE 0 END)"
            " + (CASE WHEN instr(lower(body), lower(?1)) THEN 1.0 ELSE 0 END) AS score_,"
            f" {columns} FROM items WHERE score_ > 0 AND {where} LIMIT ?",
            (needle, *params, limit),
        )
        return sorted(((r["rowid_"], float(r["score_"]), r) for r in rows), key=lambda h: -h[1])

    def matching(
        self, match: str, rowids: Sequence[int], *, trigram: bool = False, df: int | None = None
    ) -> set[int]:
        """Which of ``rowids`` match the FTS5 query ``match`` (one term); see
        :meth:`matching_many`."""
        return self.matching_many([(match, trigram, df, rowids)])[0]

    def matching_many(
        self, terms: Sequence[tuple[str, bool, int | None, Sequence[int]]]
    ) -> list[set[int]]:
        """For each ``(match, trigram, df, rowids)``, which of ``rowids`` match the FTS5
        query ``match`` on the word (or trigram) index; one statement for all of them.

        ``df``, the term's item count when known, picks the cheaper plan per term: FTS5
        answers ``rowid IN (…)`` by one lookup per rowid (about 15 µs each on the word
        index), while reading a posting list whole costs about 0.07 µs an item, so a list
        shorter than a few hundred items per wanted rowid is read whole. On the trigram
        index a lookup seeks every trigram of the phrase, so it is always read whole."""
        out: list[set[int]] = [set() for _ in terms]
        parts: list[str] = []
        params: list[Any] = []
        for i, (match, trigram, df, rowids) in enumerate(terms):
            if not rowids:
                continue
            table = "items_tri" if trigram else "items_fts"
            # ``+rowid`` keeps the rowid test out of FTS5 (no per-rowid lookups). A trigram
            # phrase is always read whole: one lookup seeks every trigram's list (~4 ms
            # for an identifier at 100k items), the whole phrase costs about one lookup.
            whole = trigram or (df is not None and df <= 200 * len(rowids))
            column = "+rowid" if whole else "rowid"
            parts.append(
                f"SELECT {i}, rowid FROM {table} WHERE {table} MATCH ?"
                f" AND {column} IN ({','.join('?' * len(rowids))})"
            )
            params += [match, *rowids]
        if parts:
            for i, rowid in self._index.fts_tuples(" UNION ALL ".join(parts), params, False):
                out[int(i)].add(int(rowid))
        return out

    def degrees(self, ids: Iterable[str], skip_kinds: Collection[str]) -> dict[str, int]:
        """How many edges touch each of ``ids`` (none: absent), leaving out ``skip_kinds``:
        synapse files from the (node, kind) indexes alone, resolved wikilinks by pair.
        :meth:`edges` would return as many, less a self-loop or a duplicated synapse file
        (never more). Counted in SQLite: a hub's thousands of edges never reach Python."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        skip = sorted(skip_kinds)
        skip_sql = f" AND kind NOT IN ({','.join('?' * len(skip))})" if skip else ""
        sql = (
            f"SELECT source, count(*) FROM synapses WHERE source IN ({marks}){skip_sql} GROUP BY source"
            f" UNION ALL SELECT target, count(*) FROM synapses WHERE target IN ({marks}){skip_sql} GROUP BY target"
            f" UNION ALL SELECT src_id, count(DISTINCT target_id) FROM links"
            f" WHERE status = 'ok' AND src_id IN ({marks}) AND src_id != target_id GROUP BY src_id"
            f" UNION ALL SELECT target_id, count(DISTINCT src_id) FROM links"
            f" WHERE status = 'ok' AND target_id IN ({marks}) AND src_id != target_id GROUP BY target_id"
        )
        out: dict[str, int] = {}
        for node, n in self._index.fts_tuples(sql, [*wanted, *skip, *wanted, *skip, *wanted, *wanted], False):
            out[str(node)] = out.get(str(node), 0) + int(n)
        return out

    def top_edges(self, node: str, top: int, rank: Mapping[str, float], skip_kinds: Collection[str]) -> list[Edge]:
        """At most ``top`` edges touching ``node`` (self-loops and ``skip_kinds`` left
        out), ranked as spreading activation ranks them: ``rank[kind]`` × weight, highest
        first, then source, target and kind. SQLite sorts; Python sees ``top`` per side."""
        kinds = sorted(rank)
        score = ("CASE kind " + " ".join("WHEN ? THEN ?" for _ in kinds) + " ELSE 0.0 END") if kinds else "0.0"
        score_params: list[Any] = [x for k in kinds for x in (k, float(rank[k]))]
        skip = sorted(skip_kinds)
        skip_sql = f" AND kind NOT IN ({','.join('?' * len(skip))})" if skip else ""
        found: dict[tuple[str, str, str], Edge] = {}
        for column in ("source", "target"):
            sql = (
                f"SELECT source, target, kind, weight FROM synapses WHERE {column} = ?{skip_sql} AND source != target"
                f" ORDER BY ({score}) * weight DESC, source, target, kind LIMIT ?"
            )
            for a, b, kind, weight in self._index.fts_tuples(sql, [node, *skip, *score_params, top], False):
                found.setdefault((a, b, kind), Edge(a, b, kind, float(weight)))
        for column in ("src_id", "target_id"):
            sql = (
                f"SELECT DISTINCT src_id, target_id FROM links WHERE status = 'ok' AND {column} = ?"
                " AND src_id != target_id ORDER BY src_id, target_id LIMIT ?"
            )
            for a, b in self._index.fts_tuples(sql, [node, top], False):
                found.setdefault((a, b, LINK_KIND), Edge(a, b, LINK_KIND, LINK_WEIGHT))
        ranked = sorted(found.values(), key=lambda e: (-rank.get(e.kind, 0.0) * e.weight, e.source, e.target, e.kind))
        return ranked[:top]

    def edges(self, ids: Iterable[str], kinds: Sequence[str] | None = None) -> list[Edge]:
        """Every edge touching one of ``ids`` (either end), optionally of some kinds: the
        synapses, and the resolved wikilinks as ``links_to`` edges (one per pair of
        notes, however often one links the other)."""
        wanted = sorted(set(ids))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        typed = [k for k in kinds if k != LINK_KIND] if kinds else None
        out: list[Edge] = []
        if typed is None or typed:
            kind_sql = f" AND kind IN ({','.join('?' * len(typed))})" if typed else ""
            kind_params = list(typed or ())
            sql = (
                f"SELECT path, source, target, kind, weight FROM synapses WHERE source IN ({marks}){kind_sql}"
                f" UNION ALL SELECT path, source, target, kind, weight FROM synapses"
                f" WHERE target IN ({marks}){kind_sql}"
            )
            rows = self._index.fts_tuples(sql, [*wanted, *kind_params, *wanted, *kind_params], False)
            # An edge between two wanted ids comes back twice (UNION ALL skips a sort).
            unique = {r[0]: r for r in rows}
            out += [Edge(r[1], r[2], r[3], float(r[4])) for r in unique.values()]
        if kinds is None or LINK_KIND in kinds:
            sql = (
                f"SELECT src_id, target_id FROM links WHERE status = 'ok' AND src_id IN ({marks})"
                f" UNION SELECT src_id, target_id FROM links WHERE status = 'ok' AND target_id IN ({marks})"
            )
            pairs = self._index.fts_tuples(sql, [*wanted, *wanted], False)
            out += [Edge(a, b, LINK_KIND, LINK_WEIGHT) for a, b in sorted(pairs) if a != b]
        return out
