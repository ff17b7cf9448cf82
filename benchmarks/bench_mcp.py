"""MCP round-trip latency: `engram_search` over stdio next to the same search in process.

The vault is the synthetic one from :mod:`benchmarks.synth` (default 10,000 items).
Three figures for the same queries: the library call (``Vault.search``), the MCP
pipeline in process (the SDK's in-memory client: validation, rendering, structured
output, the client's output-schema check), and the real thing over stdio — once more
with the optional semantic model on (``stdio_semantic``; when the extra is installed), and
by words alone (``stdio_words_only``, ``recall.meaning: 0``). Every item is embedded
first (``embedding``: items per CPU second, the encoder runs on one thread), so the
default searches run with every vector in place.
Queries are two or three words from real item titles, so every query has hits and
graph expansion runs. The stdio figure is what an agent waits for: JSON-RPC framing,
the pipe, argument validation, the search itself, and the structured result. Each
query runs once warm-up, then ``--rounds`` timed passes; the server is the real
``engram serve`` subprocess driven by the official client.

    python -m benchmarks.bench_mcp [--items 10000] [--queries 100] [--rounds 3]
    python -m benchmarks.bench_mcp --items 2000 --trees /tmp/engram-before .

``--trees OLD NEW`` measures only ``engram_search`` over stdio, one server per source
tree of engram, the trees taking turns for ``--rounds`` sessions each (the vault and its
vectors shared), so both meet the same load: a change judged by what an agent waits for.

Prints one JSON document and writes it to ``benchmarks/results/mcp.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from benchmarks import synth
from benchmarks.bench_startup import compile_tree, tree_env
from benchmarks.scale import SEMANTIC, with_settings
from engram.mcp import build_server
from engram.recall.semantic import installed
from engram.store.format import read_engram
from engram.vault import Vault

#: The defaults without the sentence encoder.
WORDS = "recall:\n  meaning: 0\n"

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SEARCH_ARGS: dict[str, Any] = {"limit": 10, "tier": "auto"}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"p50_ms": pick(0.50), "p95_ms": pick(0.95), "mean_ms": round(statistics.fmean(ordered), 3),
            "n": len(ordered)}


def make_queries(data: synth.Synth, count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    queries = []
    for index in rng.sample(range(data.items), count):
        item, _ = read_engram(data.root / data.paths[index], data.paths[index])
        words = item.title.split()
        queries.append(" ".join(rng.sample(words, min(len(words), rng.choice((2, 3))))))
    return queries


def in_process(root: Path, queries: list[str], rounds: int) -> dict[str, float]:
    vault = Vault.open(root, actor="bench")
    for query in queries:  # warm the index and the page cache
        vault.search(query, **SEARCH_ARGS)
    samples = []
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            vault.search(query, **SEARCH_ARGS)
            samples.append((time.perf_counter() - started) * 1000)
    vault.close()
    return percentiles(samples)


async def in_memory(root: Path, queries: list[str], rounds: int) -> dict[str, float]:
    """The MCP pipeline without the pipe: the SDK's in-process client on build_server."""
    vault = Vault.open(root, actor="bench")
    samples = []
    async with Client(build_server(vault)) as client:
        for query in queries:
            await client.call_tool("engram_search", {"query": query, **SEARCH_ARGS})
        for _ in range(rounds):
            for query in queries:
                t0 = time.perf_counter()
                await client.call_tool("engram_search", {"query": query, **SEARCH_ARGS})
                samples.append((time.perf_counter() - t0) * 1000)
    vault.close()
    return percentiles(samples)


async def over_stdio(
    root: Path, queries: list[str], rounds: int, ids: list[str], env: dict[str, str] | None = None,
) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from engram.cli import main; main()", "--vault", str(root), "--actor", "bench", "serve"],
        env=env if env is not None else dict(os.environ),
    )
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=600) as client:
        await client.list_tools()
        connect_ms = (time.perf_counter() - started) * 1000
        for query in queries:
            result = await client.call_tool("engram_search", {"query": query, **SEARCH_ARGS})
            assert not result.is_error, result.content
        search, get = [], []
        for _ in range(rounds):
            for query in queries:
                t0 = time.perf_counter()
                await client.call_tool("engram_search", {"query": query, **SEARCH_ARGS})
                search.append((time.perf_counter() - t0) * 1000)
            for item_id in ids:
                t0 = time.perf_counter()
                await client.call_tool("engram_get", {"ref": item_id, "tier": "digest"})
                get.append((time.perf_counter() - t0) * 1000)
    return {"engram_search": percentiles(search), "engram_get": percentiles(get),
            "connect_ms": round(connect_ms, 1)}


def compare_trees(root: Path, queries: list[str], ids: list[str], trees: list[Path], rounds: int) -> int:
    """``engram_search`` over stdio for each source tree, in turn (see the module docstring)."""
    envs = {str(t): tree_env(dict(os.environ), t.resolve()) for t in trees}
    for env in envs.values():
        compile_tree(env)
    samples: dict[str, list[float]] = {name: [] for name in envs}
    loads = []
    for turn in range(rounds):
        order = list(envs) if turn % 2 == 0 else list(reversed(envs))
        for name in order:
            loads.append(os.getloadavg()[0])
            result = anyio.run(over_stdio, root, queries, 1, ids[:1], envs[name])
            samples[name].append(result["engram_search"]["p50_ms"])
            samples.setdefault(name + " p95", []).append(result["engram_search"]["p95_ms"])
    report = {"trees": list(envs), "rounds": rounds, "queries": len(queries), "session_p50_ms": samples,
              "load": [round(min(loads), 1), round(max(loads), 1)]}
    print(json.dumps(report, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MCP stdio round-trip latency vs in-process search.")
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trees", nargs=2, type=Path, default=None, metavar=("OLD", "NEW"),
                        help="compare two source trees of engram over stdio, in turn")
    args = parser.parse_args(argv)
    data = synth.generate(args.items)
    queries = make_queries(data, args.queries)
    ids = random.Random(5).sample(list(data.ids), args.queries)
    Vault.open(data.root).refresh()  # index once, outside the timings
    # Every item's vectors up front, as `engram reindex --embed` or a long-lived server
    # would have them (timed: the embedding throughput, one ONNX thread, i.e. per core).
    with Vault.open(data.root) as vault:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        embedded = vault.embed_all()
        embed = {"items": embedded, "seconds": round(time.perf_counter() - wall0, 1),
                 "cpu_seconds": round(time.process_time() - cpu0, 1)}
        embed["items_per_cpu_second"] = round(embedded / max(embed["cpu_seconds"], 1e-9), 1)
    if args.trees:
        return compare_trees(data.root, queries, ids, args.trees, args.rounds)
    stdio = anyio.run(over_stdio, data.root, queries, args.rounds, ids)
    with with_settings(data.root, WORDS):  # the same searches by words alone
        words = anyio.run(over_stdio, data.root, queries, args.rounds, ids)
    semantic: dict[str, Any] = {"skipped": "the semantic extra is not installed: pip install -e '.[semantic]'"}
    if installed():
        with with_settings(data.root, SEMANTIC):  # the warm-up pass embeds, the timed ones read
            semantic = anyio.run(over_stdio, data.root, queries, args.rounds, ids)
    report = {
        "items": data.items,
        "synapses": data.synapses,
        "queries": len(queries),
        "rounds": args.rounds,
        "search_args": SEARCH_ARGS,
        "in_process_search": in_process(data.root, queries, args.rounds),
        "in_memory_mcp_search": anyio.run(in_memory, data.root, queries, args.rounds),
        "embedding": embed,
        "stdio": stdio,
        "stdio_words_only": words,
        "stdio_semantic": semantic,
        "goal": "engram_search over stdio p50 <= 15 ms",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    text = json.dumps(report, indent=2)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mcp.json").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
