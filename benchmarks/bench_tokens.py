"""What MCP answers cost an agent: tools/list per profile and default `engram_search` answers.

The bytes are the real ones: ``engram serve`` as a subprocess, spoken to over stdio with
plain JSON-RPC lines (initialize, tools/list, tools/call), and each response's ``result``
measured as it came off the pipe. Tokens are the project's estimate
(:func:`engram.mcp.views.estimate_tokens`: ``ceil(characters / 4)`` of the compact JSON,
the same figure the disclosure tiers budget with): no tokenizer ships with engram, and
this estimate is rough but stable across runs and machines and monotone in the text,
which is what before/after comparisons need.

For tools/list the total is split into what hosts show the model (name, title,
description, input schema, annotations) and the output schemas (used by clients that
validate structured content; not model-visible in common hosts). An answer's ``tokens``
are what a host can hand the model: its text block, plus the structured content when the
server sends it (the same JSON again); ``wire_tokens`` are the JSON-RPC result on the
pipe, where the text is JSON-escaped once more. For search the vault is
the synthetic one from :mod:`benchmarks.synth` (1,000 items by default, copied so usage
recording leaves the cache alone) and the queries are two or three words from item
titles (:func:`benchmarks.bench_mcp.make_queries`), each called with nothing but
``query`` — the vault's default limit, tier, token budget and floor.

    python -m benchmarks.bench_tokens [--items 1000] [--queries 50] [--structured-output]

Prints one JSON document and writes it to ``benchmarks/results/tokens.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import synth
from benchmarks.bench_mcp import make_queries
from engram.mcp.profiles import PROFILES
from engram.mcp.views import estimate_tokens
from engram.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: The parts of a listed tool a host shows the model; the output schema is the rest.
VISIBLE = ("name", "title", "description", "inputSchema", "annotations")


class Session:
    """One ``engram serve`` over stdio, driven line by line (no client library in between)."""

    def __init__(self, root: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from engram.cli import main; main()", "--vault", str(root),
             "--actor", "bench", "serve", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ), text=True,
        )
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-tokens", "version": "1"}})
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()  # end of input: the server exits
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def tools_list_cost(listed: dict[str, Any]) -> dict[str, Any]:
    tools = listed["tools"]
    visible = [{k: t[k] for k in VISIBLE if k in t} for t in tools]
    return {
        "tools": len(tools),
        "tokens": estimate_tokens(listed),
        "model_visible_tokens": estimate_tokens(visible),
        "description_tokens": estimate_tokens([t.get("description", "") for t in tools]),
        "input_schema_tokens": estimate_tokens([t["inputSchema"] for t in tools]),
        "output_schema_tokens": sum(estimate_tokens(t["outputSchema"]) for t in tools if "outputSchema" in t),
    }


def answer_cost(result: dict[str, Any]) -> dict[str, int]:
    """An answer's tokens: ``tokens`` is what a host can put before the model (the text,
    plus the structured content where the server sends it); ``wire_tokens`` the JSON-RPC
    result as it crossed the pipe (the text block JSON-escaped inside it)."""
    text = "".join(b.get("text", "") for b in result.get("content", []))
    text_tokens = math.ceil(len(text) / 4)
    structured = estimate_tokens(result["structuredContent"]) if "structuredContent" in result else 0
    return {
        "tokens": text_tokens + structured,
        "text_tokens": text_tokens,
        "structured_tokens": structured,
        "wire_tokens": estimate_tokens(result),
        "hits": len(json.loads(text).get("hits", [])) if text else 0,
    }


def summary(samples: list[dict[str, int]]) -> dict[str, float]:
    means = {key: round(statistics.fmean(s[key] for s in samples), 1) for key in samples[0]}
    return means | {"median_tokens": statistics.median(s["tokens"] for s in samples),
                    "max_tokens": max(s["tokens"] for s in samples)}


def profile_cost(root: Path, profile: str, queries: list[str], extra: list[str]) -> dict[str, Any]:
    """One session: tools/list of ``profile`` and the default answer to each query."""
    session = Session(root, "--profile", profile, *extra)
    try:
        listed = tools_list_cost(session.request("tools/list"))
        answers = [
            answer_cost(session.request("tools/call", {"name": "engram_search", "arguments": {"query": q}}))
            for q in queries
        ]
    finally:
        session.close()
    return {"tools_list": listed, "engram_search": summary(answers) if answers else None}


def measure(root: Path, queries: list[str], extra: list[str]) -> dict[str, Any]:
    report: dict[str, Any] = {"tools_list": {}}
    for profile in PROFILES:
        cost = profile_cost(root, profile, queries if profile == "standard" else [], extra)
        report["tools_list"][profile] = cost["tools_list"]
        if cost["engram_search"]:
            report["engram_search"] = cost["engram_search"]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Tokens of tools/list and of default engram_search answers.")
    parser.add_argument("--items", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--structured-output", action="store_true",
                        help="measure with engram serve --structured-output (output schemas, answers sent twice)")
    args = parser.parse_args(argv)
    data = synth.generate(args.items)
    queries = make_queries(data, args.queries)
    work = Path(tempfile.mkdtemp(prefix="engram-tokens-"))
    try:
        root = work / "vault"
        shutil.copytree(data.root, root)
        with Vault.open(root) as vault:
            vault.refresh()  # index once, outside the measurement
        extra = ["--structured-output"] if args.structured_output else []
        report = {"items": data.items, "queries": len(queries), "estimator": "ceil(chars/4) of compact JSON",
                  "serve_flags": extra, **measure(root, queries, extra)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("tokens-structured.json" if args.structured_output else "tokens.json")).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
