"""Viewer page latency on a 10k-item vault: server time per page, p50 / p95.

The vault is a copy of the synthetic one from :mod:`benchmarks.synth` (default 10,000
items, about 9,000 synapses) with an audit log such a vault would have (a create per
item, a link per synapse, three updates each for a fifth of the items: about 25,000
lines), so the item pages read a real history and the overview a real log. The viewer is the real app (``engram.viewer.build_app``) under uvicorn on
a loopback port, in a thread of this process, as ``engram viewer`` runs it; requests go
over HTTP with keep-alive. For each page the harness records the server's own time
(its ``Server-Timing: app;dur=`` header: routing, the vault calls, rendering) and the
client's wall time. Pages whose address varies (an item, a graph focus, a search) draw
from random items of the vault. Timings start after the first health check (``doctor``
in the background, reported on its own as ``doctor_s``) has finished, and each page is
warmed up first; ``during_doctor`` repeats the items page while a check runs, since
that is what a person sees right after starting the viewer or saving an edit.

    python -m benchmarks.bench_viewer [--items 10000] [--rounds 40]
    python -m benchmarks.bench_viewer --obsidian [--rounds 40]

``--obsidian`` times the pages that draw wikilinks instead, on a copy of the synthetic
Obsidian vault of :mod:`benchmarks.obsidian_synth` (6,571 notes linked by wikilinks in
bodies and properties, adopted in place) with its two category notes written, so
``People`` has 2,600 backlinks and ``Meetings`` 1,500: a note's page (links, backlinks,
embeds, properties), the most-linked note's page, and the graph around a note and
without a focus.

Prints one JSON document and writes it to ``benchmarks/results/viewer.json`` (or
``viewer-obsidian.json``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn

from benchmarks import obsidian_synth, synth
from engram.loopback import bind
from engram.store.audit import AuditEntry
from engram.store.format import read_engram
from engram.vault import Vault
from engram.viewer import build_app

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GOAL_MS = 200.0


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50_ms": pick(0.50), "p95_ms": pick(0.95), "max_ms": round(ordered[-1], 2),
            "mean_ms": round(statistics.fmean(ordered), 2), "n": len(ordered)}


class Client:
    """One keep-alive connection (re-opened when the server closed an idle one)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.connect()
        # Without it, delayed ACKs add ~40 ms to every response's wall time (not server time).
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def get(self, path: str) -> tuple[float, float]:
        """(server ms, wall ms) of one GET; fails on anything but 200."""
        try:
            return self._get(path)
        except (http.client.RemoteDisconnected, ConnectionError):
            self.conn.close()
            self.conn = self._connect()
            return self._get(path)

    def _get(self, path: str) -> tuple[float, float]:
        started = time.perf_counter()
        self.conn.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}"})
        reply = self.conn.getresponse()
        reply.read()
        wall = (time.perf_counter() - started) * 1000
        if reply.status != 200:
            raise RuntimeError(f"GET {path} answered {reply.status}")
        timing = reply.getheader("server-timing", "app;dur=nan")
        return float(timing.split("dur=")[1]), wall


def pages(data: synth.Synth, root: Path, rng: random.Random) -> dict[str, Callable[[], str]]:
    titles: list[str] = []
    for index in rng.sample(range(data.items), 60):
        item, _ = read_engram(root / data.paths[index], data.paths[index])
        titles.append(item.title)
    ids = list(data.ids)

    def query() -> str:
        words = rng.choice(titles).split()
        return quote(" ".join(rng.sample(words, min(len(words), 2))))

    return {
        "overview": lambda: "/",
        "items": lambda: "/items",
        "items_deep_page_by_title": lambda: f"/items?sort=title&order=asc&page={rng.randint(50, 190)}",
        "items_filtered": lambda: f"/items?kind={rng.choice(synth.KINDS)}&domain={rng.choice(synth.TOP)}"
        f"&min_importance=0.3&sort=importance",
        "items_title_text": lambda: f"/items?q={quote(rng.choice(rng.choice(titles).split()))}",
        "item": lambda: f"/item/{rng.choice(ids)}",
        "graph_page": lambda: f"/graph?focus={rng.choice(ids)}",
        "graph_neighbourhood_2_hops": lambda: f"/graph.json?focus={rng.choice(ids)}&depth=2",
        "graph_neighbourhood_3_hops": lambda: f"/graph.json?focus={rng.choice(ids)}&depth=3",
        "graph_top_150": lambda: "/graph.json",
        "search": lambda: f"/search?q={query()}",
        "conflicts": lambda: "/conflicts",
        "proposals": lambda: "/proposals",
        "stale": lambda: "/stale",
        "audit": lambda: "/audit",
        "merges": lambda: "/merges",
        "health": lambda: "/health",
    }


def with_audit_log(data: synth.Synth, work: Path, rng: random.Random) -> Path:
    """A copy of the synthetic vault's files with a realistic audit log (the copy's index
    is built before the timings: a copied one would be re-read anyway, inodes differ)."""
    root = work / "vault"
    shutil.copytree(data.root, root, symlinks=True, ignore=shutil.ignore_patterns(".engram"))
    lines = [
        AuditEntry(f"2025-01-01T00:00:{i % 60:02d}.000Z", "synth", "create", "item", item_id,
                   path=data.paths[i], new_version=1).to_json()
        for i, item_id in enumerate(data.ids)
    ]
    lines += [
        AuditEntry("2025-02-01T00:00:00.000Z", "synth", "link", "synapse", f"syn-{n:016x}").to_json()
        for n in range(data.synapses)
    ]
    for i in rng.sample(range(data.items), data.items // 5):
        for version in (1, 2, 3):
            lines.append(AuditEntry(
                "2025-03-01T00:00:00.000Z", rng.choice(("alice", "bob", "agent-7")), "update", "item",
                data.ids[i], path=data.paths[i], old_version=version, new_version=version + 1,
                fields=("importance", "tags"),
            ).to_json())
    (root / ".engram").mkdir(exist_ok=True)
    (root / ".engram" / "audit.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def obsidian_pages(vault: Vault, rng: random.Random) -> dict[str, Callable[[], str]]:
    notes = [i.id for i in vault.list(include_hidden=True)]
    hub = vault.get("People.md").id
    return {
        "note": lambda: f"/item/{rng.choice(notes)}",
        "note_most_linked": lambda: f"/item/{hub}",
        "graph_neighbourhood_2_hops": lambda: f"/graph.json?focus={rng.choice(notes)}&depth=2",
        "graph_around_the_most_linked": lambda: f"/graph.json?focus={hub}&depth=1",
        "graph_top_150": lambda: "/graph.json",
    }


def with_hubs(work: Path) -> Path:
    """A copy of the synthetic Obsidian vault with its category notes written."""
    root = work / "vault"
    shutil.copytree(obsidian_synth.generate().root, root, ignore=shutil.ignore_patterns(".engram"))
    (root / "People.md").write_text("# People\n\n![[People.base]]\n", encoding="utf-8")
    (root / "Meetings.md").write_text("# Meetings\n\nSee [[People]].\n", encoding="utf-8")
    Vault.init(root).close()
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Viewer server time per page on a synthetic vault.")
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--obsidian", action="store_true", help="the wikilink pages, on the synthetic Obsidian vault")
    args = parser.parse_args(argv)
    rng = random.Random(13)
    work = Path(tempfile.mkdtemp(prefix="engram-viewer-bench-"))
    data = None if args.obsidian else synth.generate(args.items)
    root = with_hubs(work) if data is None else with_audit_log(data, work, rng)
    vault = Vault.open(root, actor="bench")
    vault.refresh()  # outside the timings
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = build_app(vault, port=port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    health = app.state.viewer.health
    client = Client(port)
    if data is None:
        report: dict[str, Any] = {"notes": len(vault.list(include_hidden=True)), "rounds": args.rounds}
    else:
        report = {
            "items": data.items, "synapses": data.synapses, "rounds": args.rounds,
            "audit_lines": sum(1 for _ in (root / ".engram" / "audit.jsonl").open(encoding="utf-8")),
        }
    try:
        if data is None:
            report["pages"] = timed(client, obsidian_pages(vault, rng), args.rounds)
            return finish(report, "viewer-obsidian.json")
        started = time.perf_counter()
        client.get("/health")
        health.wait(600)
        report["doctor_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        client.get("/stale")
        app.state.viewer.stale.wait(600)
        report["stale_report_s"] = round(time.perf_counter() - started, 2)
        # Items page while a check runs (what a person sees right after a save).
        health.invalidate()
        during = [client.get("/items")[0] for _ in range(20)]
        health.wait(600)
        report["during_doctor"] = {"items": percentiles(during)}
        report["pages"] = timed(client, pages(data, root, rng), args.rounds)
        return finish(report, "viewer.json")
    finally:
        server.should_exit = True
        thread.join(10)
        vault.close()
        shutil.rmtree(work, ignore_errors=True)


def timed(client: Client, addresses: dict[str, Callable[[], str]], rounds: int) -> dict[str, Any]:
    """Server and wall time per page, after three warm-up requests each."""
    results: dict[str, Any] = {}
    for name, make in addresses.items():
        for _ in range(3):
            client.get(make())
        server_ms, wall_ms = [], []
        for _ in range(rounds):
            s, w = client.get(make())
            server_ms.append(s)
            wall_ms.append(w)
        results[name] = {"server": percentiles(server_ms), "wall": percentiles(wall_ms)}
    return results


def finish(report: dict[str, Any], name: str) -> int:
    worst = max(r["server"]["p95_ms"] for r in report["pages"].values())
    report["worst_server_p95_ms"] = worst
    report["goal"] = f"p95 <= {GOAL_MS:.0f} ms server time per page"
    report["met"] = worst <= GOAL_MS
    report.update(python=sys.version.split()[0], cpus=os.cpu_count(), load=os.getloadavg())
    text = json.dumps(report, indent=2)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / name).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
