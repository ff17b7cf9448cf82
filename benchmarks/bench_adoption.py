"""Adopting real vaults: `engram init` in place, then recall through MCP `engram_search`.

For each vault in ``../shared/datasets/vaults`` (kepano-obsidian, dendron-site) a fresh
copy is adopted with the real ``engram init`` command (a subprocess, as a person runs it:
git init, the template, the merge driver and the cold index of every note), and:

- ``init_s`` / ``notes_per_s``: wall time of that command and notes indexed per second;
  ``index_s``: the cold index alone, rebuilt in process;
- ``bytes_changed``: files whose SHA-256 differs before and after (the goal is 0);
- ``links``: resolved wikilinks, and those pointing at no note or at two;
- recall through ``engram_search`` over MCP stdio (the real ``engram serve``), with the
  vault's default settings, for queries made of each sampled note's title: p50/p95
  latency, how often that note is the first hit (``title_top1``), and how often a hit was
  reached through a wikilink (``via_links``: graph expansion over ``links_to`` edges,
  read from a second, untimed call with ``explain`` on).

Then a **team round** on each (issue 28): the adopted folder is pushed to a bare origin
(``engram remote add``), a teammate clones it and runs ``engram init`` in the clone, and
both work on it — through the CLI (add, update, link two of the person's notes), through
MCP stdio as an agent (an exact copy of a person's note, a near copy of another,
searches, a lesson), and as people in an editor (a line appended to one note on each
machine) — then sync in both orders, twice. It reports:

- ``state_files_committed``: paths under ``.engram/`` in any commit of the origin (goal 0);
- ``person_bytes_changed``: the person's notes (every file the adopted folder held) whose
  bytes differ, on either clone or the origin, from what their owners wrote — the
  original, or the owner's own edit (goal 0);
- ``converged``: both clones hold the origin's tip;
- ``doctor``: each clone's problem codes after the round, next to the ones it had
  right after ``engram init`` (goal: nothing new).

    python -m benchmarks.bench_adoption [--queries 50] [--team-only]

Prints one JSON document and writes it to ``benchmarks/results/adoption.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from benchmarks.bench_mcp import percentiles
from benchmarks.mcp_search import answer_of, stdio_session
from engram.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
VAULTS = ROOT.parent / "shared" / "datasets" / "vaults"
RESULTS = ROOT / "benchmarks" / "results"


def checksums(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not {".git", ".engram"} & set(p.relative_to(root).parts)
    }


def adopt(source: Path, work: Path) -> dict[str, Any]:
    root = work / source.name
    shutil.copytree(source, root)
    before = checksums(root)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", "init", str(root)],
        check=True, capture_output=True, text=True,
    )
    init_s = time.perf_counter() - started
    after = checksums(root)
    with Vault.open(root) as vault:
        t0 = time.perf_counter()
        stats = vault.reindex()
        index_s = time.perf_counter() - t0
        summary = vault.adoption()
    return {
        "root": root,
        "notes": summary.items,
        "init_s": round(init_s, 3),
        "notes_per_s": round(summary.items / init_s, 1),
        "index_s": round(index_s, 3),
        "index_notes_per_s": round(stats.scanned / index_s, 1),
        "bytes_changed": sum(1 for k, v in before.items() if after.get(k) != v),
        "files_added": sorted(set(after) - set(before)),
        "links": {"resolved": summary.links, "unresolved": len(summary.unresolved), "ambiguous": len(summary.ambiguous)},
        "indexed_only": summary.indexed_only,
    }


async def recall(root: Path, queries: list[tuple[str, str]]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from engram.cli import main; main()", "--vault", str(root), "--actor", "bench", "serve"],
        env=dict(os.environ),
    )
    samples: list[float] = []
    top1 = via_links = 0
    async with Client(params, read_timeout_seconds=600) as client:
        await client.list_tools()
        for query, _ in queries:  # warm-up
            await client.call_tool("engram_search", {"query": query})
        for query, item_id in queries:
            t0 = time.perf_counter()
            result = await client.call_tool("engram_search", {"query": query})
            samples.append((time.perf_counter() - t0) * 1000)
            hits = answer_of(result).get("hits", [])
            top1 += bool(hits) and hits[0]["id"] == item_id
            # The same query again with explanations (not timed: the default is off).
            explained = await client.call_tool("engram_search", {"query": query, "explain": True})
            hits = answer_of(explained).get("hits", [])
            via_links += any(
                step.get("kind") == "links_to"
                for hit in hits for step in (hit.get("explanation") or {}).get("path", [])
            )
    n = len(queries)
    return {"engram_search": percentiles(samples), "title_top1": round(top1 / n, 3),
            "via_links": round(via_links / n, 3), "queries": n}


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command as a person types it (``engram`` is the installed CLI of this Python)."""
    argv = [sys.executable, "-c", "from engram.cli import main; main()", *args[1:]] if args[0] == "engram" else list(args)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)


def _notes(root: Path) -> list[str]:
    """The person's Markdown notes of an adopted folder (engram's own files left out)."""
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*.md")
        if not {".git", ".engram", ".obsidian"} & set(p.relative_to(root).parts)
    )


def _doctor_codes(root: Path) -> list[str]:
    out = _run(root, "engram", "doctor", "--json")
    return sorted(p["code"] for p in json.loads(out.stdout)["problems"]) if out.stdout.strip() else [out.stderr]


def team_round(source: Path, work: Path) -> dict[str, Any]:
    """Two machines adopt one vault and work on it (see the module docstring)."""
    team = work / f"team-{source.name}"
    a, origin, b = team / "a", team / "origin.git", team / "b"
    shutil.copytree(source, a)
    written = {rel: (a / rel).read_bytes() for rel in _notes(a)}  # what the owners wrote
    _run(a, "git", "init", "-q")
    _run(a, "git", "add", "-A")
    _run(a, "git", "-c", "user.name=Owner", "-c", "user.email=owner@example.invalid", "commit", "-qm", "my notes")
    _run(a, "engram", "init")
    _run(team, "git", "init", "-q", "--bare", str(origin))
    branch = _run(a, "git", "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    steps: list[str] = []

    def step(cwd: Path, *args: str) -> None:
        done = _run(cwd, *args)
        said = f": {done.stderr.strip().splitlines()[-1]}" if done.returncode and done.stderr.strip() else ""
        steps.append(f"{cwd.name}: {' '.join(args)} -> {done.returncode}{said}")

    step(a, "engram", "remote", "add", str(origin))
    _run(team, "git", "clone", "-q", str(origin), str(b))
    step(b, "engram", "init")
    doctor_before = {"a": _doctor_codes(a), "b": _doctor_codes(b)}
    notes = list(written)
    rng = random.Random(28)
    exact, near, edited_a, edited_b, linked_a, linked_b = rng.sample(notes, 6)
    # through the CLI on a
    step(a, "engram", "add", "Team convention from the adoption round", "--body", "We review notes weekly.\n")
    step(a, "engram", "link", linked_a, "similar_to", linked_b)
    # as an agent on b, over MCP stdio
    with stdio_session(b, actor="agent-b") as call:
        text = written[exact].decode("utf-8", "replace")
        with contextlib.suppress(RuntimeError):  # a refusal (a secret, say) is an answer too
            call("engram_create", {"title": Path(exact).stem, "content": text})
        with contextlib.suppress(RuntimeError):
            body = written[near].decode("utf-8", "replace")
            call("engram_create", {"title": Path(near).stem, "content": body + "\nOne more line from an agent.\n"})
        for rel in notes[:10]:
            call("engram_search", {"query": Path(rel).stem})
        with contextlib.suppress(RuntimeError):
            call("engram_learn", {"content": f"{Path(exact).stem} is where the team keeps this topic."})
    # as people, in an editor
    for root, rel in ((a, edited_a), (b, edited_b)):
        with (root / rel).open("ab") as fh:
            fh.write(b"\nA line its owner added.\n")
    owners = dict(written)
    owners[edited_a] = written[edited_a] + b"\nA line its owner added.\n"
    owners[edited_b] = written[edited_b] + b"\nA line its owner added.\n"
    for first, second in ((a, b), (b, a), (a, b), (b, a)):
        step(first, "engram", "sync")
        step(second, "engram", "sync")
    log = _run(origin, "git", "log", "--all", "--name-only", "--format=").stdout.split()
    changed = []
    for rel, wanted in owners.items():
        for where, got in (("a", _read(a / rel)), ("b", _read(b / rel)), ("origin", _committed(origin, branch, rel))):
            if got != wanted:
                changed.append(f"{where}:{rel}")
    heads = {_run(root, "git", "rev-parse", "HEAD").stdout for root in (a, b)}
    return {
        "notes": len(written),
        "state_files_committed": sorted({p for p in log if p.startswith(".engram/")}),
        "person_bytes_changed": changed,
        "converged": heads == {_run(origin, "git", "rev-parse", branch).stdout},
        "doctor": {"before": doctor_before, "after": {"a": _doctor_codes(a), "b": _doctor_codes(b)}},
        "steps": steps,
    }


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _committed(repo: Path, branch: str, rel: str) -> bytes | None:
    out = subprocess.run(["git", "show", f"{branch}:{rel}"], cwd=repo, capture_output=True, check=False)
    return out.stdout if out.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="engram init on real vaults, then recall over MCP.")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--team-only", action="store_true", help="only the team round")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="engram-adoption-"))
    report: dict[str, Any] = {"load_before": os.getloadavg()}
    for name in ("kepano-obsidian", "dendron-site"):
        if args.team_only:
            report[name] = {"team_round": team_round(VAULTS / name, work)}
            continue
        result = adopt(VAULTS / name, work)
        root = result.pop("root")
        with Vault.open(root) as vault:
            items = sorted(vault.list(include_hidden=True), key=lambda i: i.path or "")
        rng = random.Random(7)
        sample = rng.sample(items, min(args.queries, len(items)))
        result["recall_mcp_stdio"] = anyio.run(recall, root, [(i.title, i.id) for i in sample])
        result["team_round"] = team_round(VAULTS / name, work)
        report[name] = result
    report["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2)
    (RESULTS / "adoption.json").write_text(text)
    print(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
