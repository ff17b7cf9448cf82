"""``python -m benchmarks run learn``: the learn classification golden set, end to end.

Each case gets a fresh vault holding its existing lessons (written through
``Vault.create``, as a user's items would be); the new lesson then goes through
``Vault.learn`` — candidates from the vault's own recall, the offline classifier, the
action — exactly what ``engram learn`` and ``engram_learn`` do (with ``trust.personalData:
redact``, so a case naming a private address is classified, not refused). Reported: strict
accuracy (relation right, and the target right unless novel) overall, per class and per
difficulty; the confusion matrix; and the safety count: cases whose truth is ``novel``
in which any existing item changed status or lost text (the goal is 0), plus any case
at all in which an existing item's text was not kept. Misses in the harmful direction
are counted apart from those in the safe one (inserting and linking): an item
superseded by a lesson that does not contradict it, and an outdated item reinforced
by a lesson that does.

``--golden FILE`` runs another set in the same format (see docs/benchmarks.md).

``--via create`` sends each new lesson through ``Vault.create`` instead (what ``engram
add`` and ``engram_create`` do, deduplication on), its outcome read as a relation:
``NEW`` novel, ``DUPLICATE`` duplicate, ``EXTENDED`` extends, ``SUPERSEDED`` or
``DISPUTED`` contradicts, the target the item it names. It measures whether a create
catches what learn would (issue 27: a same-subject create with a changed value).

``--oracle`` measures the ceiling of the judge handshake (:mod:`engram.lifecycle.judging`):
learn runs with ``judge=True`` and every question it asks is answered with the case's
expected relation and target, as a judge that is always right would; the cases it does
not ask about keep the offline verdict. Reported beside the accuracy: how many cases
asked (each a second call for the agent).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from engram.lifecycle.classify import RELATIONS
from engram.lifecycle.judging import Judgment
from engram.lifecycle.learning import lesson_title
from engram.vault import Vault

GOLDEN = Path(__file__).resolve().parent / "data" / "learn-golden.yaml"


#: How a create's outcome reads as a learn relation (``--via create``).
CREATED_AS = {"NEW": "novel", "DUPLICATE": "duplicate", "EXTENDED": "extends", "SUPERSEDED": "contradicts",
              "DISPUTED": "contradicts"}


def run_case(case: dict[str, Any], work: Path, oracle: bool = False, via: str = "learn") -> dict[str, Any]:
    root = work / case["id"]
    root.mkdir(parents=True)
    # Classification is measured, not the privacy screen: a lesson naming a private IP
    # or an email is redacted as the trust settings allow, rather than refused.
    (root / "engram.yaml").write_text("trust:\n  personalData: redact\n", encoding="utf-8")
    with Vault(root, actor="golden") as vault:
        keys: dict[str, str] = {}
        before: dict[str, tuple[str, str]] = {}
        for entry in case.get("existing") or []:
            fields = {"situation": entry["situation"]} if entry.get("situation") else None
            made = vault.create(entry.get("title") or lesson_title(entry["content"]), entry["content"],
                                domain=["golden"], kind="fact", dedupe=False, fields=fields).item
            keys[made.id] = entry["key"]
            before[made.id] = (made.status, made.content)
        lesson = case["lesson"]
        if via == "create":
            fields = {"situation": lesson["situation"]} if lesson.get("situation") else None
            made = vault.create(lesson.get("title") or lesson_title(lesson["content"]), lesson["content"],
                                domain=["golden"], kind="fact", fields=fields)
            relation = CREATED_AS[made.outcome]
            named = made.related or (made.item.id if made.outcome == "DUPLICATE" else None)
            return _outcome(case, vault, keys, before, relation, None if relation == "novel" else keys.get(named or ""),
                            made.outcome, False, [made.note or ""])
        result = vault.learn(lesson["content"], lesson.get("situation"), title=lesson.get("title"), judge=oracle)
        asked = result.question is not None
        if result.question is not None:  # the oracle judge: the case's own answer
            expect = case["expect"]
            by_key = {k: i for i, k in keys.items()}
            target = by_key.get(expect.get("target") or "") if expect["relation"] != "novel" else None
            shown = {c.id: c.version for c in result.question.candidates}
            if target is not None and target not in shown:  # the right item was not among those asked about
                result = vault.learn(lesson["content"], lesson.get("situation"), title=lesson.get("title"))
            else:
                result = vault.learn(lesson["content"], lesson.get("situation"), title=lesson.get("title"), judgment=Judgment(
                    expect["relation"], target, shown.get(target or ""), "oracle"))
        return _outcome(case, vault, keys, before, result.verdict.relation, keys.get(result.verdict.target or ""),
                        result.action, asked, list(result.verdict.reasons))


def _outcome(case: dict[str, Any], vault: Vault, keys: dict[str, str], before: dict[str, tuple[str, str]],
             relation: str, target: str | None, action: str, asked: bool, reasons: list[str]) -> dict[str, Any]:
    """One case's row: the verdict against the expectation, and what happened to the
    items that were there."""
    changed_status = []
    lost_text = []
    for item_id, (status, content) in before.items():
        now_item = vault.get(item_id)
        if now_item.status != status:
            changed_status.append(keys[item_id])
        if content.strip() and content.strip() not in now_item.content:
            lost_text.append(keys[item_id])
    expect = case["expect"]
    strict = relation == expect["relation"] and (expect["relation"] == "novel" or target == expect.get("target"))
    return {"id": case["id"], "difficulty": case.get("difficulty", "unknown"), "expected": expect["relation"],
            "expected_target": expect.get("target"), "got": relation, "target": target, "strict": strict,
            "action": action, "asked": asked, "changed_status": changed_status, "lost_text": lost_text,
            "reasons": reasons}


def evaluate(path: Path, oracle: bool = False, via: str = "learn") -> dict[str, Any]:
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engram-learn-") as tmp:
        rows = [run_case(c, Path(tmp), oracle, via) for c in cases]
    by_class = {r: [x for x in rows if x["expected"] == r] for r in RELATIONS}
    by_level = {d: [x for x in rows if x["difficulty"] == d] for d in ("easy", "medium", "hard")}
    confusion = Counter((x["expected"], x["got"]) for x in rows)
    return {
        "golden": str(path), "via": via, "cases": len(rows), "oracle": oracle, "asked": sum(x["asked"] for x in rows),
        "strict_accuracy": round(sum(x["strict"] for x in rows) / len(rows), 4),
        "per_class": {r: {"cases": len(v), "strict": round(sum(x["strict"] for x in v) / len(v), 4) if v else None}
                      for r, v in by_class.items()},
        "per_difficulty": {d: {"cases": len(v), "strict": round(sum(x["strict"] for x in v) / len(v), 4) if v else None}
                           for d, v in by_level.items()},
        "confusion": {e: {g: confusion.get((e, g), 0) for g in RELATIONS} for e in RELATIONS},
        "novel_destroyed_or_hid": sum(1 for x in rows if x["expected"] == "novel" and (x["changed_status"] or x["lost_text"])),
        "text_lost_any_case": sum(1 for x in rows if x["lost_text"]),
        "wrongly_superseded": sum(1 for x in rows if x["got"] == "contradicts" and x["expected"] != "contradicts"),
        "outdated_reinforced": sum(1 for x in rows if x["expected"] == "contradicts" and x["got"] in ("duplicate", "extends")),
        "misses": [x for x in rows if not x["strict"]],
        "seconds": round(time.perf_counter() - started, 2),
    }


def report(data: dict[str, Any]) -> None:
    print(f"  {data['cases']} cases: strict accuracy {data['strict_accuracy']:.3f}; novel lessons that destroyed"
          f" or hid an item: {data['novel_destroyed_or_hid']}; cases losing text: {data['text_lost_any_case']}"
          + (f"; the oracle judge was asked in {data['asked']}" if data["oracle"] else ""))
    print(f"  harmful misses: {data['wrongly_superseded']} item(s) superseded by a lesson that does not contradict"
          f" them, {data['outdated_reinforced']} outdated item(s) reinforced by one that does")
    for r, v in data["per_class"].items():
        print(f"    {r:<12} {v['cases']:>3} cases  strict {v['strict']}")
    for d, v in data["per_difficulty"].items():
        print(f"    {d:<12} {v['cases']:>3} cases  strict {v['strict']}")
    print("    confusion (rows expected, columns got): " + " ".join(f"{g[:5]:>6}" for g in RELATIONS))
    for e, row in data["confusion"].items():
        print(f"      {e:<12}" + " ".join(f"{row[g]:>6}" for g in RELATIONS))
    for miss in data["misses"]:
        print(f"    miss {miss['id']}: expected {miss['expected']} {miss['expected_target'] or ''}, got {miss['got']} {miss['target'] or ''}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_learn", description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--oracle", action="store_true", help="answer every judge question rightly (the protocol's ceiling)")
    parser.add_argument("--via", choices=("learn", "create"), default="learn", help="send each lesson through learn or create")
    args = parser.parse_args(argv)
    if args.oracle and args.via == "create":
        parser.error("--oracle needs --via learn: create asks no judge")
    data = evaluate(args.golden, args.oracle, args.via)
    report(data)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
