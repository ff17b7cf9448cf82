"""Retrieval evaluation on a vault's own golden set: what ``engram eval`` runs.

A golden set is a file of cases, each a query and the items that answer it::

    - query: how do we rotate the signing keys
      expect: [ops/keys/rotation.md]            # ids, id prefixes, paths or exact titles
    - query: retry policy for payments
      expect: {01J8ZQ3K: 2, Backoff with jitter: 1}   # graded: higher is more relevant
      domain: engineering                       # optional filters: domain, kinds, tags; a note
    - query: the office wifi password
      expect: []                                # no answer: the vault should abstain

YAML (a list, or a mapping with ``cases``), JSON, or JSON Lines (``.jsonl``, one case
per line). Every expected reference is resolved before any query runs (in this vault,
then in the org vault's clone), so a golden set naming an item the vault does not hold
is refused with the case and the reference: a renamed item cannot quietly turn into a
miss.

Each case runs through :func:`engram.scopes.recall.search` with the vault's own recall
settings (the path ``engram_search`` takes for an agent: the org vault too, when set up) and usage recording off, so an
evaluation changes nothing, not even which items are warm. Per answerable case, on the
returned ranking: recall@5, recall@10, MRR, average precision over the list and nDCG@10
(graded gains); an answer that abstains scores 0 on all of them. No-answer cases count
how often the vault abstained (``no_confident_match``). :func:`gate` compares the totals
with minimums and with a saved baseline: the regression gate a CI job runs.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import EngramError, InvalidInput, NotFound
from engram.items.state import VaultState
from engram.scopes.recall import get_any, search
from engram.store.fsio import read_regular
from mergedriver import codec

#: The metrics of an answerable case, in report order.
METRICS = ("recall@5", "recall@10", "mrr", "ap", "ndcg@10")
#: The share of no-answer cases the vault abstained on (higher is better).
ABSTAINED = "no_answer_abstained"
MAX_GOLDEN_BYTES = 16 * 1024 * 1024
_CASE_KEYS = frozenset({"query", "expect", "domain", "kinds", "tags", "note"})


@dataclass(frozen=True, slots=True)
class Case:
    """One golden case: the query, the items that answer it (id → gain; empty when the
    vault should abstain) and the filters it searches with."""

    query: str
    expect: Mapping[str, float]
    where: str  # "golden.yaml case 3", for messages
    domain: str | None = None
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: Case
    ranked: tuple[str, ...]  # item ids, best first
    abstained: bool
    best_relevance: float | None
    metrics: Mapping[str, float]  # empty for a no-answer case


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What a golden set measured: totals over the answerable cases, abstention on the
    no-answer ones, and every case's result."""

    source: str
    results: tuple[CaseResult, ...]
    totals: Mapping[str, float]
    answerable: int
    answerable_abstained: int
    no_answer: int
    elapsed_ms: float
    failures: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "totals": dict(self.totals),
            "answerable": self.answerable,
            "answerableAbstained": self.answerable_abstained,
            "noAnswer": self.no_answer,
            "elapsedMs": round(self.elapsed_ms, 1),
            "failures": list(self.failures),
            "cases": [
                {
                    "query": r.case.query,
                    "expect": dict(r.case.expect),
                    "ranked": list(r.ranked),
                    "abstained": r.abstained,
                    "bestRelevance": r.best_relevance,
                    "metrics": dict(r.metrics),
                }
                for r in self.results
            ],
        }


# ---------------------------------------------------------------------- metrics


def metrics(ranked: Sequence[str], relevant: Mapping[str, float]) -> dict[str, float]:
    """recall@5, recall@10, MRR, AP over the list and nDCG@10 of one ranking of keys
    against graded judgements (key → gain > 0); empty when nothing is relevant."""
    if not relevant:
        return {}
    first = next((i for i, k in enumerate(ranked, start=1) if k in relevant), None)
    hits, precisions = 0, []
    for i, key in enumerate(ranked, start=1):
        if key in relevant:
            hits += 1
            precisions.append(hits / i)
    dcg = sum(relevant[k] / math.log2(i + 1) for i, k in enumerate(ranked[:10], start=1) if k in relevant)
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return {
        "recall@5": len(relevant.keys() & set(ranked[:5])) / len(relevant),
        "recall@10": len(relevant.keys() & set(ranked[:10])) / len(relevant),
        "mrr": 1.0 / first if first else 0.0,
        "ap": sum(precisions) / len(relevant),
        "ndcg@10": dcg / idcg if idcg else 0.0,
    }


# ---------------------------------------------------------------------- the golden set


def load(state: VaultState, path: Path) -> list[Case]:
    """The cases of the golden set at ``path``, every expected reference resolved to an
    item id. Raises InvalidInput (unreadable, malformed, an unknown reference)."""
    name = path.name
    try:
        raw = read_regular(path, name, MAX_GOLDEN_BYTES)[1].decode("utf-8-sig")
    except FileNotFoundError:
        raise InvalidInput(f"no golden set at {path}.", field="golden", hint="Pass the path of a YAML or JSONL file.") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name} is not UTF-8 (byte {exc.start}).", field="golden") from None
    except EngramError as exc:
        raise InvalidInput(f"{name} cannot be read: {exc.message}", field="golden") from None
    entries = _entries(name, raw)
    if not entries:
        raise InvalidInput(f"{name} holds no cases.", field="golden", hint=_FORMAT_HINT)
    state.ensure_fresh()
    return [_case(state, f"{name} case {n}", entry) for n, entry in enumerate(entries, start=1)]


_FORMAT_HINT = "Each case is a mapping with `query` and `expect` (see `engram eval --help`)."


def _entries(name: str, raw: str) -> list[Any]:
    try:
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in raw.splitlines() if line.strip()]
        data = codec.load_yaml(raw) if raw.strip() else []
    except (json.JSONDecodeError, codec.CodecError) as exc:
        raise InvalidInput(f"{name} does not parse: {exc}", field="golden", hint=_FORMAT_HINT) from None
    if isinstance(data, dict) and "cases" in data:
        data = data["cases"]
    if data is None:  # only comments
        data = []
    if not isinstance(data, list):
        raise InvalidInput(f"{name} must be a list of cases.", field="golden", hint=_FORMAT_HINT)
    return data


def _case(state: VaultState, where: str, entry: Any) -> Case:
    if not isinstance(entry, dict):
        raise InvalidInput(f"{where} is not a mapping.", field="golden", hint=_FORMAT_HINT)
    unknown = sorted(set(entry) - _CASE_KEYS)
    if unknown:
        raise InvalidInput(
            f"{where} has unknown key(s) {', '.join(map(str, unknown))}.", field="golden",
            hint=f"A case takes {', '.join(sorted(_CASE_KEYS))}.",
        )
    query = entry.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"{where} has no query.", field="golden", hint=_FORMAT_HINT)
    expect = entry.get("expect", [])
    if isinstance(expect, str):
        expect = [expect]
    if isinstance(expect, list):
        graded: dict[Any, Any] = {ref: 1.0 for ref in expect}
    elif isinstance(expect, dict):
        graded = dict(expect)
    else:
        raise InvalidInput(f"{where}: expect must be a list of references or a mapping of reference to gain.",
                           field="golden")
    relevant: dict[str, float] = {}
    for ref, gain in graded.items():
        if isinstance(gain, bool) or not isinstance(gain, int | float) or gain <= 0:
            raise InvalidInput(f"{where}: the gain of {ref!r} must be a number above 0.", field="golden")
        relevant[_item_id(state, where, str(ref))] = float(gain)
    return Case(
        query=query, expect=relevant, where=where, domain=_text(where, entry, "domain"),
        kinds=_texts(where, entry, "kinds"), tags=_texts(where, entry, "tags"),
    )


def _item_id(state: VaultState, where: str, ref: str) -> str:
    try:
        return get_any(state, ref)[0].id  # this vault, then the org vault's clone
    except (NotFound, InvalidInput) as exc:
        raise InvalidInput(
            f"{where} expects {ref!r}, which names no single item here ({exc.message.rstrip('.')}).",
            field="golden", hint="Name items by id, path or exact title; `engram list` shows them.",
        ) from None


def _text(where: str, entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InvalidInput(f"{where}: {key} must be text.", field="golden")


def _texts(where: str, entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{where}: {key} must be a list of text.", field="golden")
    return tuple(value)


# ---------------------------------------------------------------------- running it


def run(
    state: VaultState,
    golden: Path,
    *,
    limit: int = 10,
    minimums: Mapping[str, float] | None = None,
    baseline: Mapping[str, float] | None = None,
    tolerance: float = 0.01,
) -> Evaluation:
    """Run every case of the golden set at ``golden`` (see the module docstring) and
    check the totals against ``minimums`` and ``baseline`` (each metric may fall at most
    ``tolerance`` below the baseline's). Writes nothing. Raises InvalidInput."""
    if not 10 <= limit <= 200:
        raise InvalidInput(f"limit must be 10 to 200, not {limit}.", field="limit", hint="recall@10 needs ten hits.")
    _check_metrics(minimums or {}, "minimum")
    _check_metrics(baseline or {}, "baseline")
    cases = load(state, golden)
    started = time.perf_counter()
    results = [_one(state, case, limit) for case in cases]
    elapsed = (time.perf_counter() - started) * 1000
    answerable = [r for r in results if r.case.expect]
    no_answer = [r for r in results if not r.case.expect]
    totals: dict[str, float] = {}
    if answerable:
        totals = {m: round(statistics.fmean(r.metrics[m] for r in answerable), 4) for m in METRICS}
    if no_answer:
        totals[ABSTAINED] = round(sum(r.abstained for r in no_answer) / len(no_answer), 4)
    return Evaluation(
        str(golden), tuple(results), totals, len(answerable), sum(r.abstained for r in answerable),
        len(no_answer), elapsed, tuple(gate(totals, minimums or {}, baseline, tolerance)),
    )


def _one(state: VaultState, case: Case, limit: int) -> CaseResult:
    try:
        result = search(
            state, case.query, limit=limit, domain=case.domain, kinds=case.kinds or None,
            tags=case.tags or None, record=False,
        )
    except InvalidInput as exc:  # a filter recall refuses (an unknown kind, say): name the case
        raise InvalidInput(f"{case.where}: {exc.message}", field="golden", hint=exc.hint) from None
    ranked = tuple(h.id for h in result.hits)
    abstained = result.status != "ok"
    scored = metrics(ranked, case.expect)
    if abstained:
        scored = dict.fromkeys(scored, 0.0)
    return CaseResult(case, ranked, abstained, result.best_relevance, scored)


def _check_metrics(values: Mapping[str, float], what: str) -> None:
    known = (*METRICS, ABSTAINED)
    for name, value in values.items():
        if name not in known:
            raise InvalidInput(f"{name!r} is not a metric ({', '.join(known)}).", field=what)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise InvalidInput(f"the {what} for {name} must be a number from 0 to 1, not {value!r}.", field=what)


def gate(
    totals: Mapping[str, float], minimums: Mapping[str, float], baseline: Mapping[str, float] | None,
    tolerance: float = 0.01,
) -> list[str]:
    """Why ``totals`` fail the gate: each metric under its minimum, or more than
    ``tolerance`` under the baseline's value; a metric the golden set cannot measure
    (no answerable or no no-answer cases) fails a minimum that names it."""
    out: list[str] = []
    for name, floor in minimums.items():
        got = totals.get(name)
        if got is None:
            out.append(f"{name} cannot be measured on this golden set (minimum {floor:g})")
        elif got < floor:
            out.append(f"{name} {got:.4f} is under the minimum {floor:g}")
    for name, before in (baseline or {}).items():
        got = totals.get(name)
        if got is not None and got < before - tolerance:
            out.append(f"{name} {got:.4f} fell from the baseline's {before:.4f} (tolerance {tolerance:g})")
    return out


def read_baseline(path: Path) -> dict[str, float]:
    """The totals saved by ``engram eval --json`` (its ``totals``) or a mapping of
    metric to value. Raises InvalidInput."""
    try:
        data = json.loads(read_regular(path, path.name, MAX_GOLDEN_BYTES)[1])
    except FileNotFoundError:
        raise InvalidInput(f"no baseline at {path}.", field="baseline",
                           hint="Save one with `engram eval GOLDEN --json > baseline.json`.") from None
    except (json.JSONDecodeError, UnicodeDecodeError, EngramError) as exc:
        raise InvalidInput(f"{path.name} is not a baseline: {exc}", field="baseline") from None
    totals = data.get("totals", data) if isinstance(data, dict) else None
    if not isinstance(totals, dict):
        raise InvalidInput(f"{path.name} is not a baseline: no totals.", field="baseline")
    _check_metrics(totals, "baseline")
    return {str(k): float(v) for k, v in totals.items()}
