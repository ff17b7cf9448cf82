"""Scale: cold indexing, incremental refresh, recall latency, index size, peak memory.

For each size, on a synthetic vault (:mod:`benchmarks.synth`):

- ``cold``: delete ``.engram/`` and rebuild the index from the files, in a child process
  so that its peak memory (with the parsing workers') is measured alone. Rate = items
  per second of wall time (synapse files are indexed too but not counted).
- ``incremental``: change 100 item files the way ``git pull`` does (new bytes, new
  mtime), then bring the index up to date — once as a one-shot command does (full stat
  walk + re-parse, :meth:`Vault.refresh`), once as a long-lived process does (the watcher
  reports the 100 paths, :meth:`Index.ensure_fresh`).
- ``recall``: a long-lived vault (watcher on) answers 300 queries after 30 warm-up
  queries, expansion on, default tier and settings, usage journaling on, as an agent's
  MCP server would; p50/p95/p99 of wall time per ``Vault.search`` call. Queries are 2-4
  words drawn from random items' titles, bodies and identifiers, so most have answers
  and some words are common. ``source_first`` / ``source_in_top10``: the share of
  queries whose own source item comes first / in the ten hits, a rough check that
  ranking holds up at scale. ``short_lists``: answers with fewer than ten hits although
  ten or more items hold one of the query's words (counted outside the timing): what
  "``limit`` N returns N when N match" leaves undone at this size.
- ``recall_semantic``: the same queries with the optional semantic model on
  (``recall.semantic: 0.5`` appended to ``engram.yaml`` for the run, then restored), in
  two passes: ``first`` with no vectors stored (each search embeds the items it ranks
  for the first time), ``stored`` once they are. Run when the ``semantic`` extra is
  installed (``pip install -e '.[semantic]'``), else left out with a note.
- ``size``: the database file after a WAL checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.synth import generate
from engram.vault import Vault
from mergedriver import codec

_WORD = re.compile(r"[A-Za-z]{4,}")


def cold_index(root: Path) -> dict[str, Any]:
    """Rebuild the index of ``root`` in a child process; its timing and peak memory.

    The child's peak is its own address space's high-water mark (``VmHWM``), not
    ``ru_maxrss``: Linux carries ``ru_maxrss`` over ``exec`` from the process that
    forked, so a child of a harness that has just generated a 100k vault in memory
    reported the harness's 600 MB as its own."""
    shutil.rmtree(root / ".engram", ignore_errors=True)
    code = (
        "import json, resource, sys, time; from engram.vault import Vault;"
        "v = Vault.open(sys.argv[1]); t = time.perf_counter(); s = v.reindex();"
        "d = time.perf_counter() - t; c = v.state.index.counts(); v.close();"
        "hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')];"
        "print(json.dumps({'seconds': d, 'items': c.get('item', 0), 'files': s.scanned,"
        " 'maxrss_self_mb': (hwm or [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss])[0] / 1024,"
        " 'maxrss_workers_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    data: dict[str, Any] = json.loads(out.stdout)
    data["items_per_s"] = round(data["items"] / data["seconds"], 1)
    data["seconds"] = round(data["seconds"], 2)
    return data


def _touch_items(root: Path, paths: list[str], rng: random.Random, tag: str) -> None:
    for rel in paths:
        path = root / rel
        meta, content, derived = codec.parse_engram(path.read_bytes())
        content += f"\nPulled change {tag} {rng.randint(0, 10**9)}.\n"
        meta["contentHash"] = codec.content_hash(content)
        path.write_bytes(codec.render_engram(meta, content, derived.splitlines()))


def incremental(root: Path, item_paths: tuple[str, ...], changed: int = 100) -> dict[str, Any]:
    rng = random.Random(11)
    vault = Vault.open(root)
    try:
        vault.refresh()
        time.sleep(2.1)  # let the racy window of the cold build pass
        vault.refresh()
        _touch_items(root, rng.sample(item_paths, changed), rng, "walk")
        started = time.perf_counter()
        stats = vault.refresh()
        walk_s = time.perf_counter() - started
        for _ in range(3):  # first read walks, second starts the watcher, third polls
            vault.state.index.ensure_fresh()
        watching = vault.state.index.watching
        _touch_items(root, rng.sample(item_paths, changed), rng, "watch")
        started = time.perf_counter()
        vault.state.index.ensure_fresh()
        watch_s = time.perf_counter() - started
        found = vault.state.index.query("SELECT count(*) AS n FROM items WHERE body LIKE '%Pulled change watch%'")[0]["n"]
    finally:
        vault.close()
    return {
        "changed": changed, "reparsed_by_walk": stats.changed, "walk_refresh_s": round(walk_s, 3),
        "watcher": watching, "watcher_refresh_s": round(watch_s, 4), "watcher_saw": int(found),
    }


def _queries(root: Path, item_paths: tuple[str, ...], n: int) -> list[tuple[str, str]]:
    """``n`` queries, each with the id of the item its words were drawn from."""
    rng = random.Random(5)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        meta, content, _ = codec.parse_engram((root / rng.choice(item_paths)).read_bytes())
        words = _WORD.findall(str(meta["title"])) + rng.sample(_WORD.findall(content) or ["note"], 2)
        query = " ".join(rng.sample(words, min(len(words), rng.randint(2, 4))))
        if rng.random() < 0.1:
            ident = re.findall(r"`([^`]+)`", content)
            query = ident[0] if ident else query
        out.append((query, str(meta["id"])))
    return out


def recall_latency(root: Path, item_paths: tuple[str, ...], n: int = 300, warmup: int = 30) -> dict[str, Any]:
    queries = _queries(root, item_paths, n + warmup)
    vault = Vault.open(root)
    try:
        for q, _ in queries[:warmup]:
            vault.search(q)
        times: list[float] = []
        statuses: dict[str, int] = {}
        expanded = first = found = short = 0
        for q, source in queries[warmup:]:
            started = time.perf_counter()
            result = vault.search(q)
            times.append((time.perf_counter() - started) * 1000)
            statuses[result.status] = statuses.get(result.status, 0) + 1
            expanded += any(h.via == "graph" or h.explanation.path for h in result.hits)
            ids = [h.id for h in result.hits]
            first += ids[:1] == [source]
            found += source in ids
            if result.status == "ok" and len(ids) < 10:
                short += _holding(vault, result.terms) >= 10
        watching = vault.state.index.watching
    finally:
        vault.close()
    times.sort()
    return {
        "queries": n, "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * len(times)) - 1], 3),
        "p99_ms": round(times[int(0.99 * len(times)) - 1], 3),
        "mean_ms": round(statistics.fmean(times), 3), "statuses": statuses,
        "with_linked_hits": expanded, "watcher": watching,
        # A sanity check of ranking at scale: the item a query's words came from (other
        # items may hold them too, so this is a floor, not a relevance judgement).
        "source_first": round(first / n, 3), "source_in_top10": round(found / n, 3),
        "short_lists": short,
    }


SEMANTIC = "recall:\n  semantic: 0.5\n"


@contextlib.contextmanager
def with_settings(root: Path, text: str) -> Iterator[None]:
    """``text`` appended to the vault's ``engram.yaml`` while the block runs, then the file as it was."""
    settings = root / "engram.yaml"
    before = settings.read_bytes() if settings.exists() else None
    settings.write_text((before or b"formatVersion: 1\n").decode() + text, encoding="utf-8")
    try:
        yield
    finally:
        if before is None:
            settings.unlink()
        else:
            settings.write_bytes(before)


def semantic_latency(root: Path, item_paths: tuple[str, ...]) -> dict[str, Any]:
    """:func:`recall_latency` with ``recall.semantic: 0.5``: first with no vectors stored, then again."""
    from engram.recall.semantic import installed

    if not installed():
        return {"skipped": "the semantic extra is not installed: pip install -e '.[semantic]'"}
    with with_settings(root, SEMANTIC):
        vault = Vault.open(root)
        try:
            with vault.state.index.transaction() as conn:
                conn.execute("DELETE FROM vectors")
        finally:
            vault.close()
        return {"first": recall_latency(root, item_paths), "stored": recall_latency(root, item_paths)}


def _holding(vault: Vault, terms: tuple[str, ...]) -> int:
    """How many items hold one of ``terms`` in the word index."""
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return int(vault.state.index.query("SELECT count(*) AS n FROM items_fts WHERE items_fts MATCH ?", (match,))[0]["n"])


def index_size(root: Path) -> dict[str, float]:
    vault = Vault.open(root)
    try:
        vault.state.index.query("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        vault.close()
    db = root / ".engram" / "index.sqlite"
    files = 0
    for folder, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in (".engram", ".git")]
        files += sum(os.stat(os.path.join(folder, n), follow_symlinks=False).st_size for n in names)
    return {"index_mb": round(db.stat().st_size / 2**20, 1), "vault_files_mb": round(files / 2**20, 1)}


def run_scale(sizes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {"load_before": os.getloadavg()}
    for size in sizes:
        started = time.perf_counter()
        synth = generate(size)
        entry: dict[str, Any] = {
            "items": synth.items, "synapses": synth.synapses,
            "generate_s": round(time.perf_counter() - started, 1),
        }
        entry["cold"] = cold_index(synth.root)
        entry["size"] = index_size(synth.root)
        entry["incremental"] = incremental(synth.root, synth.paths)
        entry["recall"] = recall_latency(synth.root, synth.paths)
        entry["recall_semantic"] = semantic_latency(synth.root, synth.paths)
        entry["load_after"] = os.getloadavg()
        out[str(size)] = entry
    out["maxrss_harness_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out
