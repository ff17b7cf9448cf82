"""Retrieval quality: LoCoMo (session recall, MRR) and Cranfield (MAP, nDCG@10).

Both are measured through :meth:`engram.vault.Vault.search` with the default ``recall``
settings, next to a plain FTS5 BM25 baseline computed in the same run on the same
documents: one FTS5 table, default ``unicode61`` tokenizer, one text column, the question's
words OR-ed together (each quoted), ranked by ``bm25()``. Ranking metrics are taken with
the abstention floor off (``min_relevance=0``) and usage recording off (``record=False``,
so earlier questions cannot heat later answers); abstention is reported separately.

LoCoMo (``../shared/datasets/locomo-dev``). One vault holds the five conversations, each
under the domain ``locomo/<sample>``; a question searches its own conversation's domain.
Two granularities:

- ``session``: one item per session (title: the two speakers and the date; body: every
  turn as ``Speaker: text``, with the shared photo's caption).
- ``turn``: one item per dialogue turn (title: speaker and date, body: the text), each
  ``part_of`` a session item that holds nothing but its date and speakers, and each
  ``follows`` the previous turn. A session's rank is the rank of its first hit.
- ``hybrid``: as ``turn``, but the session item holds the whole session too (the way a
  team might keep a meeting's notes next to its individual decisions), so a session is
  found by its own text and by activation from its matching turns.

The baseline indexes the same documents (sessions, turns, or both).

Ground truth: the sessions named by a question's evidence ids (``D<session>:<turn>``);
malformed ids are skipped, and a question with none left is not scored. recall@k is the
share of a question's evidence sessions in the top k, averaged; MRR uses the first
relevant session. Category 5 (adversarial) is reported but left out of the headline.

Cranfield (``../shared/datasets/cranfield``): 1,400 abstracts as items (title = ``.T``,
body = ``.W``), 225 queries; relevance codes 1-4 are relevant (MAP), graded gain
``5 - code`` for nDCG@10; the top 100 are scored.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.index.query import STOPWORDS
from engram.store.model import new_id, now, synapse_id
from engram.vault import Vault
from mergedriver import codec

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
LOCOMO = DATASETS / "locomo-dev" / "locomo-dev.json"
CRANFIELD = DATASETS / "cranfield"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"^D(\d+):(\d+)$")
_WORDS = re.compile(r"[^\W_]+")


def settings_yaml() -> str:
    """The eval vaults' engram.yaml: defaults, or ``$ENGRAM_BENCH_SETTINGS`` (a YAML file) for
    trying other ``recall`` weights without editing code."""
    extra = os.environ.get("ENGRAM_BENCH_SETTINGS")
    return "formatVersion: 1\n" + (Path(extra).read_text(encoding="utf-8") if extra else "")


@dataclass(frozen=True, slots=True)
class Question:
    conv: str
    text: str
    category: int
    sessions: frozenset[int]


# ---------------------------------------------------------------------- writing items


def _write_item(root: Path, rel: str, title: str, body: str, domain: Sequence[str], **extra: Any) -> str:
    stamp = now()
    item_id = new_id()
    meta = {
        "id": item_id, "title": title, "domainTags": list(domain), "kind": "observation",
        "tags": [], "summary": "", "importance": 0.5, "confidence": 0.5,
        "sourceType": "import", "status": "active", "visibility": "team",
        "createdBy": "bench", "createdAt": stamp, "updatedBy": "bench", "updatedAt": stamp,
        "version": 1, "contentHash": codec.content_hash(body), "activatedAt": stamp, **extra,
    }
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(codec.render_engram(meta, body))
    return item_id


def _write_edge(root: Path, source: str, target: str, kind: str) -> None:
    sid = synapse_id(source, target, kind)
    stamp = now()
    data = {"id": sid, "from": source, "to": target, "kind": kind, "weight": 0.5, "evidence": [],
            "createdBy": "bench", "createdAt": stamp, "updatedAt": stamp}
    path = root / "synapses" / kind / f"{sid}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(codec.render_synapse(data))


# ---------------------------------------------------------------------- LoCoMo


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", ""))
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def locomo_questions(data: list[dict[str, Any]]) -> tuple[list[Question], int]:
    out: list[Question] = []
    skipped = 0
    for sample in data:
        for qa in sample["qa"]:
            sessions = {int(m.group(1)) for e in qa.get("evidence", []) if (m := _EVIDENCE.match(str(e).strip()))}
            if not sessions:
                skipped += 1
                continue
            out.append(Question(sample["sample_id"], qa["question"], int(qa["category"]), frozenset(sessions)))
    return out, skipped


def _sessions(sample: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    conv = sample["conversation"]
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            n = int(m.group(1))
            out.append((n, str(conv.get(f"session_{n}_date_time", "")), turns))
    return sorted(out)


def build_locomo(root: Path, data: list[dict[str, Any]], granularity: str) -> dict[str, tuple[str, int]]:
    """Write the LoCoMo vault; return item id → (conversation, session)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "engram.yaml").write_text(settings_yaml())
    where: dict[str, tuple[str, int]] = {}
    for sample in data:
        conv = sample["sample_id"]
        a, b = sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]
        domain = ("locomo", conv)
        for n, date, turns in _sessions(sample):
            title = f"{a} and {b}, session {n} ({date})"
            if granularity == "session":
                body = "\n\n".join(f"{t['speaker']}: {_turn_text(t)}" for t in turns)
                sid = _write_item(root, f"locomo/{conv}/s{n:02d}.md", title, body, domain)
                where[sid] = (conv, n)
                continue
            session_body = (
                "\n\n".join(f"{t['speaker']}: {_turn_text(t)}" for t in turns)
                if granularity == "hybrid" else f"Conversation on {date}."
            )
            session_id = _write_item(root, f"locomo/{conv}/s{n:02d}.md", title, session_body, domain)
            where[session_id] = (conv, n)
            previous: str | None = None
            for i, turn in enumerate(turns):
                tid = _write_item(
                    root, f"locomo/{conv}/s{n:02d}/t{i:03d}.md", f"{turn['speaker']}, {date}",
                    _turn_text(turn), domain,
                )
                where[tid] = (conv, n)
                _write_edge(root, tid, session_id, "part_of")
                if previous is not None:
                    _write_edge(root, tid, previous, "follows")
                previous = tid
    return where


def _metrics(ranked: Sequence[int], relevant: frozenset[int]) -> dict[str, float]:
    first = next((i for i, s in enumerate(ranked, start=1) if s in relevant), None)
    return {
        "recall@5": len(relevant & set(ranked[:5])) / len(relevant),
        "recall@10": len(relevant & set(ranked[:10])) / len(relevant),
        "mrr": 1.0 / first if first else 0.0,
    }


def _aggregate(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    def mean(cat: Callable[[int], bool]) -> dict[str, float]:
        chosen = [m for c, m in rows if cat(c)]
        if not chosen:
            return {}
        return {k: round(statistics.fmean(m[k] for m in chosen), 4) for k in chosen[0]} | {"n": len(chosen)}

    out: dict[str, Any] = {"overall": mean(lambda c: c != 5)}
    for cat, name in CATEGORIES.items():
        out[name] = mean(lambda c, cat=cat: c == cat)  # type: ignore[misc]
    return out


def _dedupe_sessions(hits: Iterable[tuple[str, int]], conv: str) -> list[int]:
    out: list[int] = []
    for c, s in hits:
        if c == conv and s not in out:
            out.append(s)
    return out


def eval_locomo_engram(vault: Vault, where: dict[str, tuple[str, int]], qs: list[Question], *, expand: bool) -> dict[str, Any]:
    rows: list[tuple[int, dict[str, float]]] = []
    latencies: list[float] = []
    for q in qs:
        started = time.perf_counter()
        result = vault.search(q.text, domain=f"locomo/{q.conv}", limit=60, expand=expand,
                              record=False, min_relevance=0.0, tier="catalog")
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = _dedupe_sessions((where[h.id] for h in result.hits if h.id in where), q.conv)
        rows.append((q.category, _metrics(ranked, q.sessions)))
    out = _aggregate(rows)
    out["latency_ms_p50"] = round(statistics.median(latencies), 3)
    return out


def abstention_locomo(vault: Vault, qs: list[Question]) -> dict[str, float]:
    """Share of questions answered ``no_confident_match`` at the default floor."""
    by: dict[str, list[bool]] = defaultdict(list)
    for q in qs:
        result = vault.search(q.text, domain=f"locomo/{q.conv}", record=False, tier="catalog")
        by["adversarial" if q.category == 5 else "answerable"].append(result.status != "ok")
    return {k: round(sum(v) / len(v), 4) for k, v in by.items()}


def _or_query(text: str) -> str:
    words = dict.fromkeys(w.lower() for w in _WORDS.findall(text))
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def eval_locomo_baseline(data: list[dict[str, Any]], qs: list[Question], granularity: str) -> dict[str, Any]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(conv UNINDEXED, session UNINDEXED, text)")
    for sample in data:
        for n, date, turns in _sessions(sample):
            if granularity in ("session", "hybrid"):
                conn.execute("INSERT INTO docs VALUES (?,?,?)", (sample["sample_id"], n, date + "\n" + "\n".join(
                    f"{t['speaker']}: {_turn_text(t)}" for t in turns)))
            if granularity in ("turn", "hybrid"):
                conn.executemany("INSERT INTO docs VALUES (?,?,?)", [
                    (sample["sample_id"], n, f"{t['speaker']}: {_turn_text(t)}") for t in turns])
    rows = []
    for q in qs:
        hits = conn.execute(
            "SELECT conv, session FROM docs WHERE docs MATCH ? AND conv = ? ORDER BY bm25(docs) LIMIT 60",
            (_or_query(q.text), q.conv),
        ).fetchall()
        ranked = _dedupe_sessions(((c, int(s)) for c, s in hits), q.conv)
        rows.append((q.category, _metrics(ranked, q.sessions)))
    return _aggregate(rows)


def run_locomo(work: Path, granularities: Sequence[str] = ("session", "turn")) -> dict[str, Any]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    qs, skipped = locomo_questions(data)
    out: dict[str, Any] = {"questions": len(qs), "skipped_malformed": skipped}
    for granularity in granularities:
        root = work / f"locomo-{granularity}"
        where = build_locomo(root, data, granularity)
        vault = Vault.open(root)
        try:
            started = time.perf_counter()
            vault.reindex()
            index_s = time.perf_counter() - started
            out[granularity] = {
                "items": len(where),
                "index_s": round(index_s, 2),
                "baseline_fts5_bm25": eval_locomo_baseline(data, qs, granularity),
                "engram_expand_on": eval_locomo_engram(vault, where, qs, expand=True),
                "engram_expand_off": eval_locomo_engram(vault, where, qs, expand=False),
                "abstention_at_default_floor": abstention_locomo(vault, qs),
            }
        finally:
            vault.close()
    return out


# ---------------------------------------------------------------------- Cranfield


def _smart(path: Path) -> dict[int, dict[str, str]]:
    records: dict[int, dict[str, str]] = {}
    current: dict[str, str] | None = None
    field = ""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I "):
            current = records.setdefault(len(records) + 1, {"id": line[3:].strip()})
            field = ""
        elif line[:2] in (".T", ".A", ".B", ".W") and line.strip() == line[:2]:
            field = line[1]
        elif current is not None and field:
            current[field] = (current.get(field, "") + " " + line.strip()).strip()
    return records


def cranfield_data() -> tuple[dict[int, dict[str, str]], dict[int, str], dict[int, dict[int, int]]]:
    docs = _smart(CRANFIELD / "cran.all.1400")
    queries = {n: r.get("W", "") for n, r in _smart(CRANFIELD / "cran.qry").items()}
    qrels: dict[int, dict[int, int]] = defaultdict(dict)
    for line in (CRANFIELD / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            q, d, code = (int(p) for p in parts)
            if 1 <= code <= 4:
                qrels[q][d] = code
    return docs, queries, dict(qrels)


def _ir_metrics(ranked: Sequence[int], rel: dict[int, int]) -> tuple[float, float]:
    hits, precisions = 0, []
    for i, doc in enumerate(ranked, start=1):
        if doc in rel:
            hits += 1
            precisions.append(hits / i)
    ap = sum(precisions) / len(rel) if rel else 0.0
    dcg = sum((5 - rel[d]) / math.log2(i + 1) for i, d in enumerate(ranked[:10], start=1) if d in rel)
    ideal = sorted((5 - c for c in rel.values()), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return ap, (dcg / idcg if idcg else 0.0)


def run_cranfield(work: Path) -> dict[str, Any]:
    docs, queries, qrels = cranfield_data()
    root = work / "cranfield"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "engram.yaml").write_text(settings_yaml())
    ids: dict[str, int] = {}
    for n, doc in docs.items():
        item_id = _write_item(root, f"cran/d{n:04d}.md", doc.get("T", f"Document {n}") or f"Document {n}",
                              doc.get("W", ""), ("cran",))
        ids[item_id] = n
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(n UNINDEXED, text)")
    conn.executemany("INSERT INTO docs VALUES (?, ?)", [(n, d.get("T", "") + "\n" + d.get("W", "")) for n, d in docs.items()])
    vault = Vault.open(root)
    base: list[tuple[float, float]] = []
    ours: list[tuple[float, float]] = []
    try:
        vault.reindex()
        for q, text in queries.items():
            rel = qrels.get(q)
            if not rel:
                continue
            hits = conn.execute(
                "SELECT n FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 100", (_or_query(text),)
            ).fetchall()
            base.append(_ir_metrics([int(h[0]) for h in hits], rel))
            result = vault.search(text, limit=100, record=False, min_relevance=0.0, tier="catalog")
            ours.append(_ir_metrics([ids[h.id] for h in result.hits if h.id in ids], rel))
    finally:
        vault.close()

    def summary(rows: list[tuple[float, float]]) -> dict[str, float]:
        return {"MAP": round(statistics.fmean(r[0] for r in rows), 4),
                "nDCG@10": round(statistics.fmean(r[1] for r in rows), 4), "queries": len(rows)}

    return {"baseline_fts5_bm25": summary(base), "engram": summary(ours)}


__all__ = ["STOPWORDS", "run_cranfield", "run_locomo"]
