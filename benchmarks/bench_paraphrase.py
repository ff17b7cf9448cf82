"""``python -m benchmarks run paraphrase``: recall of lessons asked for in other words.

The set (default ``benchmarks/data/blind-2026-12-06/recall.yaml``, frozen; ``--set`` for
another in the same format) holds a corpus of team lessons and three kinds of query:
``paraphrase`` (the lesson asked for without any of its content words, as a newcomer who
does not know the jargon asks), ``keyword`` (the control: the lesson's own distinctive
words) and ``absent`` (``answer: null``; nothing in the corpus answers it).

The vault is built the way a user builds one: :meth:`Vault.init` in a fresh temporary
folder, then :meth:`Vault.create` per lesson (title and body, in the set's one domain,
``dedupe=False`` so that every lesson is its own item whatever the near-duplicate check
thinks of its neighbours). Lessons the trust screen quarantines are counted and listed,
not dropped from the scoring: a memory that cannot return a lesson has missed it. Then
one ``engram serve`` session over stdio (:func:`benchmarks.mcp_search.stdio_search`, the
official client) answers every query with nothing but the query: the vault's default
limit, tier, token budget, relevance floor and usage recording. ``$ENGRAM_BENCH_SETTINGS``
names a YAML file appended to the vault's ``engram.yaml`` before the session, as for
:mod:`benchmarks.quality` (e.g. ``recall: {semantic: 0.5}``); the result records it.

Per kind: ``hit@1``, ``hit@5``, ``MRR`` (over the returned hits, best first; an answer
that abstained scores 0), ``abstained`` — answers with status ``no_confident_match``, the
tool's way of saying the vault does not know — while the lesson is in the corpus, and
``in_near_misses`` (the lesson came back among the near misses of such an answer). For
``absent`` queries: how many abstained (the right answer) and how many returned hits.

``--check`` verifies the set alone, before engram ever reads it (this module imports
engram only to build and search the vault): every answer key exists, ids and keys are
unique, and no paraphrase query shares a content word with its answer's title, body or
domain. Two words are shared when their Snowball stems are equal, or when one stem of
five letters or more begins the other (``config`` / ``configuration``); stopwords are
:data:`STOPWORDS`, English function words only, so a shared ordinary word counts.

    python -m benchmarks.bench_paraphrase [--set PATH] [--json OUT] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import snowballstemmer
import yaml

SET = Path(__file__).resolve().parent / "data" / "blind-2026-12-06" / "recall.yaml"
KINDS = ("paraphrase", "keyword", "absent")
#: The stopwords of the rule: English function words (articles, pronouns, prepositions,
#: auxiliaries, question words) and nothing else, so a word that carries meaning is a
#: content word even if it is common.
_FUNCTION_WORDS = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can cannot could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not of off on once
    only or other ought our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves may might must shall also s t d ll m re ve
"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+")
_STEMMER = snowballstemmer.stemmer("english")
#: A stem this long that begins another stem is the same word for the rule.
PREFIX = 5


@dataclass(frozen=True, slots=True)
class Lesson:
    key: str
    title: str
    body: str


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    kind: str
    query: str
    answer: str | None


@dataclass(frozen=True, slots=True)
class RecallSet:
    domain: str
    corpus: tuple[Lesson, ...]
    queries: tuple[Query, ...]


def load(path: Path) -> RecallSet:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return RecallSet(
        domain=str(data["domain"]),
        corpus=tuple(Lesson(str(c["key"]), str(c["title"]), str(c["body"])) for c in data["corpus"]),
        queries=tuple(
            Query(str(q["id"]), str(q["kind"]), str(q["query"]), None if q["answer"] is None else str(q["answer"]))
            for q in data["queries"]
        ),
    )


def stems(text: str) -> set[str]:
    """The Snowball stems of ``text``'s content words (lower case, split on anything that
    is not a letter or digit, so ``user_id`` and ``force-unlock`` are two words each)."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
    return {str(s) for s in _STEMMER.stemWords(words)}


def shared_words(query: str, text: str) -> list[tuple[str, str]]:
    """Pairs of (query stem, text stem) that count as one word under the rule."""
    ours, theirs = stems(query), stems(text)
    pairs = []
    for q in sorted(ours):
        for t in sorted(theirs):
            short, long = (q, t) if len(q) <= len(t) else (t, q)
            if q == t or (len(short) >= PREFIX and long.startswith(short)):
                pairs.append((q, t))
    return pairs


def check(data: RecallSet) -> list[str]:
    """Every way the set breaks its own rules, one line each (empty: it keeps them)."""
    problems: list[str] = []
    keys = [c.key for c in data.corpus]
    by_key = {c.key: c for c in data.corpus}
    problems += [f"corpus key {k!r} appears twice" for k in sorted({k for k in keys if keys.count(k) > 1})]
    ids = [q.id for q in data.queries]
    problems += [f"query id {i!r} appears twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for q in data.queries:
        if q.kind not in KINDS:
            problems.append(f"{q.id}: kind {q.kind!r} is none of {', '.join(KINDS)}")
        elif (q.kind == "absent") != (q.answer is None):
            problems.append(f"{q.id}: an {q.kind} query {'must' if q.kind == 'absent' else 'cannot'} have answer null")
        elif q.answer is not None and q.answer not in by_key:
            problems.append(f"{q.id}: answer {q.answer!r} is not a corpus key")
        elif q.kind == "paraphrase" and q.answer is not None:
            lesson = by_key[q.answer]
            shared = shared_words(q.query, f"{lesson.title}\n{lesson.body}\n{data.domain}")
            if shared:
                problems.append(f"{q.id}: shares {', '.join(f'{a}~{b}' for a, b in shared)} with {q.answer}")
        elif q.kind == "keyword" and q.answer is not None:
            lesson = by_key[q.answer]
            if len(shared_words(q.query, f"{lesson.title}\n{lesson.body}")) < 2:
                problems.append(f"{q.id}: a keyword control shares fewer than two words with {q.answer}")
    return problems


# ---------------------------------------------------------------------- measuring


def _auto() -> str:
    from engram.recall.models import AUTO, preferred

    return preferred(AUTO).name


def build_vault(data: RecallSet, root: Path) -> tuple[dict[str, str], list[str]]:
    """A fresh vault at ``root`` holding the corpus; the item id of each key, and the keys
    whose item the trust screen quarantined."""
    from engram.vault import Vault

    ids: dict[str, str] = {}
    quarantined: list[str] = []
    with Vault.init(root, actor="bench") as vault:
        for lesson in data.corpus:
            made = vault.create(lesson.title, lesson.body, domain=[data.domain], dedupe=False)
            ids[lesson.key] = made.item.id
            if made.item.status == "quarantined":
                quarantined.append(lesson.key)
    return ids, quarantined


def rank_of(item_id: str | None, hits: Iterable[str]) -> int | None:
    """1-based rank of ``item_id`` in ``hits`` (None when absent or not asked)."""
    for n, hit in enumerate(hits, 1):
        if hit == item_id:
            return n
    return None


def summarize(rows: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    mine = [r for r in rows if r["kind"] == kind]
    n = len(mine)
    if not n:
        return {"n": 0}
    abstained = sum(r["abstained"] for r in mine)
    if kind == "absent":
        return {"n": n, "abstained": abstained, "abstain_rate": round(abstained / n, 4),
                "answered_with_hits": sum(1 for r in mine if r["hits"])}
    ranks = [r["rank"] for r in mine]
    return {
        "n": n,
        "hit@1": round(sum(1 for k in ranks if k == 1) / n, 4),
        "hit@5": round(sum(1 for k in ranks if k is not None and k <= 5) / n, 4),
        "mrr": round(sum(1 / k for k in ranks if k is not None) / n, 4),
        "abstained": abstained,
        "in_near_misses": sum(1 for r in mine if r["near_miss_rank"] is not None),
        "found_anywhere": sum(1 for k in ranks if k is not None),
    }


def evaluate(path: Path) -> dict[str, Any]:
    from benchmarks.mcp_search import hit_ids, stdio_search

    data = load(path)
    problems = check(data)
    if problems:
        raise SystemExit(f"{path} breaks its own rules:\n  " + "\n  ".join(problems))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engram-paraphrase-") as tmp:
        root = Path(tmp) / "vault"
        ids, quarantined = build_vault(data, root)
        settings = os.environ.get("ENGRAM_BENCH_SETTINGS")
        if settings:
            with (root / "engram.yaml").open("a", encoding="utf-8") as out:
                out.write("\n" + Path(settings).read_text(encoding="utf-8"))
        keys = {v: k for k, v in ids.items()}
        rows: list[dict[str, Any]] = []
        with stdio_search(root) as search:
            for q in data.queries:
                answer = search(q.query)
                hits = hit_ids(answer)
                near = [str(h["id"]) for h in answer.get("near_misses") or []]
                want = ids.get(q.answer) if q.answer else None
                rows.append({
                    "id": q.id, "kind": q.kind, "answer": q.answer, "status": answer["status"],
                    "abstained": answer["status"] == "no_confident_match",
                    "rank": rank_of(want, hits), "near_miss_rank": rank_of(want, near),
                    "hits": [keys.get(h, h) for h in hits[:5]],
                    "near_misses": [keys.get(h, h) for h in near[:5]],
                    "best_relevance": answer.get("best_relevance"),
                })
    return {
        "set": str(path),
        "corpus": len(data.corpus),
        "quarantined_at_build": quarantined,
        "search_arguments": "query only",
        "settings": "vault defaults" if not settings else Path(settings).read_text(encoding="utf-8"),
        "encoder_auto": _auto(),  # what recall.model: auto ran on this machine
        "by_kind": {kind: summarize(rows, kind) for kind in KINDS},
        "queries": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def report(result: dict[str, Any]) -> None:
    print(f"  {result['corpus']} lessons ({len(result['quarantined_at_build'])} quarantined at build"
          f"{': ' + ', '.join(result['quarantined_at_build']) if result['quarantined_at_build'] else ''})")
    for kind, s in result["by_kind"].items():
        if not s["n"]:
            continue
        if kind == "absent":
            print(f"    {kind:<10} {s['n']:>3} queries  abstained {s['abstained']}/{s['n']}"
                  f"  answered with hits {s['answered_with_hits']}")
        else:
            print(f"    {kind:<10} {s['n']:>3} queries  hit@1 {s['hit@1']:.3f}  hit@5 {s['hit@5']:.3f}"
                  f"  MRR {s['mrr']:.3f}  abstained {s['abstained']}/{s['n']} (answer among near misses:"
                  f" {s['in_near_misses']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_paraphrase", description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=SET, help="a set in the format of the default one")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--check", action="store_true", help="only check the set's own rules (no engram)")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(load(args.set))
        print("\n".join(problems) if problems else f"{args.set}: every rule holds")
        return 1 if problems else 0
    result = evaluate(args.set)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
