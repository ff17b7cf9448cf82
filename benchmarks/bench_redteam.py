"""The red-team suite, through the path an agent uses: ``engram_create`` over MCP.

Every case of ``benchmarks/redteam/attacks.yaml`` and ``benign.yaml`` (and the two held-out
sets, ``heldout.yaml`` and ``heldout2.yaml``, and the meaning stage's development set
``meaning-dev.yaml``, reported apart) is written with
``engram_create`` (title, body, and a case's summary and tags when it has them) through
the SDK's in-memory MCP client into a fresh vault with default settings, then searched for with
``engram_search`` by its own title. An attack is *blocked* when it was refused
(``sensitive_data``) or quarantined and the search does not return it; a benign case is
a *false positive* when it was refused or quarantined, or its search does not find it.

Real text is screened too, through :func:`engram.trust.policy.admit` (what every create
runs): the ~1,000 Dendron notes and the kepano vault, 1,400 Cranfield abstracts and the
LoCoMo conversations in ``../shared/datasets``. Quarantines there are false positives;
secret and personal-data findings are counted and listed by rule (real notes do hold
real email addresses and the odd meeting passcode).

``screen_cost`` times the instruction screen's rules alone (``screen_fields``) per benign
case and per real document, best of five rounds, and the whole screen with its meaning
stage (:func:`engram.trust.policy.screen`) per benign case, once. The real documents go
through the meaning stage too (``real_notes.seconds`` includes it; ``by_meaning`` lists
what it held).

The blind set of 6 December 2026 (``blind-2026-12-06.yaml``, issue 27) is reported apart
too (``--no-blind`` leaves it out, for runs while tuning). ``--meaning`` turns the
screen's meaning stage on in every vault and for the real documents (it is off by default). ``--set FILE`` runs one set in the held-out format (``attacks`` and ``benign`` lists)
and nothing else, and writes ``benchmarks/results/redteam-<file stem>.json``.

    python -m benchmarks.bench_redteam [--set FILE]

Prints one JSON document and writes it to ``benchmarks/results/redteam.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "redteam"
DATASETS = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"


def _load(name: str) -> Any:
    return yaml.safe_load((SUITE / name).read_text(encoding="utf-8"))


def _answer(result: Any) -> dict[str, Any]:
    """A tool's JSON answer: its structured content, or its one text block when the
    server sends each answer once, as text (the default since the token-lean answers;
    reading only ``structured_content`` then saw no id and no hits, so every attack
    counted as stored and every benign case as lost)."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    answer: dict[str, Any] = json.loads(result.content[0].text)
    return answer


#: ``--meaning``: every vault (and the real documents) screened with ``trust.meaning: true``.
MEANING = False


async def _run_cases(cases: list[dict[str, Any]], work: Path, name: str) -> list[dict[str, Any]]:
    from mcp import Client

    from engram.mcp import build_server
    from engram.vault import Vault

    vault = Vault.init(work / name, actor="redteam")
    if MEANING:
        with (vault.root / "engram.yaml").open("a", encoding="utf-8") as fh:
            fh.write("\ntrust:\n  meaning: true\n")
        vault.close()
        vault = Vault.open(vault.root, actor="redteam")
    out = []
    async with Client(build_server(vault, config_file=work / "mcp.yaml")) as client:
        for n, case in enumerate(cases):
            title = case.get("title") or f"Case {n} {case['id']}"
            args: dict[str, Any] = {"title": title, "content": case["body"], "dedupe": False}
            if case.get("summary"):
                args["summary"] = case["summary"]
            if case.get("tags"):
                args["tags"] = case["tags"]
            created = await client.call_tool("engram_create", args)
            text = created.content[0].text  # type: ignore[union-attr]
            if created.is_error:
                outcome = text.split(":", 1)[0]
                item_id = None
            else:
                data = _answer(created)
                item_id = data.get("id")
                status = vault.get(item_id).status if item_id else "?"
                outcome = "quarantined" if status == "quarantined" else "stored"
            found = await client.call_tool("engram_search", {"query": title, "limit": 20})
            hits = _answer(found).get("hits", []) if not found.is_error else []
            recalled = item_id is not None and any(h["id"] == item_id for h in hits)
            out.append({"id": case["id"], "class": case.get("class", "benign"), "outcome": outcome,
                        "recalled": recalled})
    vault.close()
    return out


def _score(results: list[dict[str, Any]], attacks: bool) -> dict[str, Any]:
    if attacks:
        good = [r for r in results if r["outcome"] != "stored" and not r["recalled"]]
        by_class: dict[str, list[int]] = {}
        for r in results:
            tally = by_class.setdefault(r["class"], [0, 0])
            tally[0] += r in good
            tally[1] += 1
        return {
            "cases": len(results), "blocked": len(good), "block_rate": round(len(good) / len(results), 4),
            "by_class": {k: f"{a}/{b}" for k, (a, b) in sorted(by_class.items())},
            "by_outcome": dict(Counter(r["outcome"] for r in results).most_common()),
            "missed": [r["id"] for r in results if r not in good],
            # blocked by the secret and personal-data scan, not by the instruction screen
            "refused": [r["id"] for r in results if r["outcome"] not in ("stored", "quarantined")],
        }
    bad = [r for r in results if r["outcome"] != "stored" or not r["recalled"]]
    return {"cases": len(results), "false_positives": len(bad),
            "false_positive_rate": round(len(bad) / len(results), 4), "flagged": [r["id"] for r in bad]}


def _real_texts() -> list[tuple[str, str]]:
    texts = [(p.relative_to(DATASETS).as_posix(), p.read_text(encoding="utf-8", errors="replace"))
             for p in sorted((DATASETS / "vaults").rglob("*.md"))]
    cran = (DATASETS / "cranfield" / "cran.all.1400").read_text(encoding="utf-8", errors="replace")
    texts += [(f"cranfield/{i + 1}", chunk) for i, chunk in enumerate(re.split(r"^\.I ", cran, flags=re.M)[1:])]
    for sample in json.loads((DATASETS / "locomo-dev" / "locomo-dev.json").read_text(encoding="utf-8")):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.append((f"locomo/{sample['sample_id']}/{key}", "\n".join(t["text"] for t in turns)))
    return texts


def _real_notes() -> dict[str, Any]:
    from engram.errors import SensitiveData
    from engram.recall import encoder
    from engram.store import rules
    from engram.store.model import new_id, now
    from engram.trust.policy import TrustSettings, admit

    settings = TrustSettings(meaning=MEANING)
    quarantined: list[str] = []
    sensitive: Counter[str] = Counter()
    meaning: Counter[str] = Counter()
    by_meaning: list[str] = []
    texts = _real_texts()
    started = time.perf_counter()
    for name, text in texts:
        item = rules.build_new(
            new_id(), title=name[-120:], content=text[: rules.MAX_CONTENT_BYTES // 2], domain=(), kind="observation",
            tags=(), summary="", importance=0.5, confidence=0.5, source_type="imported", status="active",
            visibility="team", extra=None, actor="bench", at=now(),
        )
        try:
            admission = admit(item, None, settings, encoder=encoder.embed)
            meaning[admission.screening.meaning] += 1
            if admission.quarantined:
                quarantined.append(name)
                if "screen.meaning" in admission.screening.rules:
                    by_meaning.append(f"{name}: {admission.screening.reason()}")
        except SensitiveData as exc:
            sensitive.update(exc.rule.split(","))
    elapsed = time.perf_counter() - started
    chars = sum(len(t) for _, t in texts)
    return {"documents": len(texts), "megabytes": round(chars / 1e6, 2), "quarantined": len(quarantined),
            "quarantined_documents": quarantined, "by_meaning": by_meaning, "meaning": dict(meaning),
            "refused_by_rule": dict(sensitive.most_common()),
            "seconds": round(elapsed, 2), "megabytes_per_s": round(chars / 1e6 / elapsed, 2)}


def _screen_cost(benign: list[dict[str, Any]], rounds: int = 5) -> dict[str, Any]:
    """What the instruction screen alone costs: ``screen_fields`` over every benign case
    (short notes, what a create carries) and every real document, best of ``rounds``."""
    from engram.trust.screen import screen_fields

    notes = [{"title": c.get("title") or c["id"], "summary": c.get("summary", ""),
              "tags": " ".join(c.get("tags", ())), "content": c["body"]} for c in benign]
    documents = [{"title": name[-120:], "content": text} for name, text in _real_texts()]

    def best(texts: list[dict[str, str]]) -> float:
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            for fields in texts:
                screen_fields(fields)
            times.append(time.perf_counter() - started)
        return min(times) / len(texts)

    from engram.recall import encoder
    from engram.trust.policy import TrustSettings, screen

    settings = TrustSettings(meaning=True)
    screen(notes[0], settings, encoder.embed)  # the model and the exemplars, loaded once
    started = time.perf_counter()
    for fields in notes:
        screen(fields, settings, encoder.embed)
    with_meaning = (time.perf_counter() - started) / len(notes)
    return {"benign_cases": len(notes), "ms_per_benign_case": round(best(notes) * 1e3, 3),
            "ms_per_benign_case_with_meaning": round(with_meaning * 1e3, 3),
            "real_documents": len(documents), "ms_per_real_document": round(best(documents) * 1e3, 3)}


def run_set(path: Path) -> dict[str, Any]:
    """One set in the held-out format (``attacks`` and ``benign``), scored as the others."""
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="engram-bench-redteam-"))
    try:
        return {
            "set": str(path),
            "attacks": _score(anyio.run(_run_cases, cases["attacks"], work, "attacks"), True),
            "benign": _score(anyio.run(_run_cases, cases["benign"], work, "benign"), False),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_redteam", description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, help="run only this set (attacks and benign lists, as heldout2.yaml)")
    parser.add_argument("--meaning", action="store_true", help="turn the screen's meaning stage on (trust.meaning)")
    parser.add_argument("--no-blind", action="store_true",
                        help="leave the blind sets out (a run while tuning must not see them)")
    args = parser.parse_args(argv)
    global MEANING
    MEANING = args.meaning
    os.environ.setdefault("ENGRAM_FSYNC", "0")
    if args.set is not None:
        started = time.perf_counter()
        one = {"load_before": os.getloadavg(), **run_set(args.set)}
        one["seconds"] = round(time.perf_counter() - started, 1)
        one["load_after"] = os.getloadavg()
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"redteam-{args.set.stem}.json").write_text(json.dumps(one, indent=2), encoding="utf-8")
        print(json.dumps(one, indent=2))
        return 0
    if not DATASETS.is_dir():
        raise SystemExit(f"dataset folder missing: {DATASETS}")
    heldout = _load("heldout.yaml")
    heldout2 = _load("heldout2.yaml")
    meaning_dev = _load("meaning-dev.yaml")
    blind = None if args.no_blind else _load("blind-2026-12-06.yaml")
    work = Path(tempfile.mkdtemp(prefix="engram-bench-redteam-"))
    started = time.perf_counter()
    try:
        result = {
            "load_before": os.getloadavg(),
            "suite": {
                "attacks": _score(anyio.run(_run_cases, _load("attacks.yaml"), work, "attacks"), True),
                "benign": _score(anyio.run(_run_cases, _load("benign.yaml"), work, "benign"), False),
            },
            "heldout": {
                "attacks": _score(anyio.run(_run_cases, heldout["attacks"], work, "ho-attacks"), True),
                "benign": _score(anyio.run(_run_cases, heldout["benign"], work, "ho-benign"), False),
            },
            "heldout2": {
                "attacks": _score(anyio.run(_run_cases, heldout2["attacks"], work, "h2-attacks"), True),
                "benign": _score(anyio.run(_run_cases, heldout2["benign"], work, "h2-benign"), False),
            },
            "meaning-dev": {
                "attacks": _score(anyio.run(_run_cases, meaning_dev["attacks"], work, "md-attacks"), True),
                "benign": _score(anyio.run(_run_cases, meaning_dev["benign"], work, "md-benign"), False),
            },
            **({} if blind is None else {"blind-2026-12-06": {
                "attacks": _score(anyio.run(_run_cases, blind["attacks"], work, "b1206-attacks"), True),
                "benign": _score(anyio.run(_run_cases, blind["benign"], work, "b1206-benign"), False),
            }}),
            "real_notes": _real_notes(),
            "screen_cost": _screen_cost(
                [*_load("benign.yaml"), *heldout["benign"], *heldout2["benign"]]
            ),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "redteam.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
