"""Synthetic vaults with realistic text and edges, for the scale benchmarks.

Text comes from a word-bigram model trained on real Markdown and abstracts in
``../shared/datasets`` (the Dendron documentation vault and the Cranfield abstracts), so
term frequencies are Zipf-like and sentences read like notes, not like random words.
Without those datasets a small built-in vocabulary is used (the numbers then flatter the
index: fewer distinct terms).

Items are written with the canonical codec (``mergedriver.codec``) exactly as engram
writes them, including the derived wikilink section, but without going through the vault
API (which would cap generation at the write rate). A vault is cached under
``$ENGRAM_BENCH_CACHE/<size>-<seed>`` (default: the system temp folder, outside the
repository so that nobody's ``grep -r`` wades through it) and reused when it already holds a marker.

Shape: a three-level domain tree (about 200 leaves), 1-4 tags from 400, a one-line
summary, a body of 40-400 words (mean about 150) with occasional code identifiers, and
about 1.3 synapses per item — mostly within a domain, across all twelve kinds; 2 % of
items are superseded by a later one (``supersedes`` edge plus ``supersededBy``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mergedriver import codec

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CACHE = Path(os.environ.get("ENGRAM_BENCH_CACHE", Path(tempfile.gettempdir()) / "engram-bench"))
MARKER = ".engram-synth.json"

_WORD = re.compile(r"[A-Za-z][a-z]{1,14}")
_FALLBACK = (  # noqa: SIM905 - a word list reads better as text
    "the a of to in and for on with is that by it as be this are from at or an"
    " database index query cache table schema migration deploy service latency request"
    " worker queue retry timeout lock replica backup restore shard cluster node pod"
    " config secret token auth user session metric alert dashboard log trace error"
).split()

TOP = ("engineering", "ops", "product", "research", "support", "security", "data", "design")
SUB = ("platform", "backend", "frontend", "mobile", "infra", "storage", "billing", "search",
       "growth", "quality", "api", "tooling", "network", "identity", "analytics")
LEAF = ("postgres", "redis", "kafka", "python", "go", "react", "k8s", "ci", "oncall", "pricing",
        "onboarding", "ml", "etl", "privacy", "cdn", "dns", "sso", "ios", "android", "docs")
KINDS = ("observation", "fact", "pattern", "procedure", "hypothesis", "decision")
EDGE_KINDS = (
    ("part_of", 18), ("extends", 15), ("depends_on", 12), ("similar_to", 12), ("follows", 8),
    ("derives_from", 8), ("exemplifies", 7), ("causes", 6), ("contextualizes", 6),
    ("consolidates", 4), ("contradicts", 4),
)


@dataclass(frozen=True, slots=True)
class Synth:
    root: Path
    items: int
    synapses: int
    ids: tuple[str, ...]
    paths: tuple[str, ...]


class TextModel:
    """A first-order word model: enough structure to read like prose, cheap to sample."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        words = self._corpus()
        follow: dict[str, list[str]] = defaultdict(list)
        for a, b in itertools.pairwise(words):
            follow[a].append(b)
        self.follow = {k: v for k, v in follow.items() if v}
        self.words = words
        counts: dict[str, int] = defaultdict(int)
        for w in words:
            counts[w] += 1
        ranked = sorted(counts, key=lambda w: -counts[w])
        self.content_words = [w for w in ranked[150:6000] if len(w) > 3] or ranked

    @staticmethod
    def _corpus() -> list[str]:
        texts: list[str] = []
        dendron = DATASETS / "vaults" / "dendron-site" / "vault"
        if dendron.is_dir():
            for path in sorted(dendron.glob("*.md")):
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
        cran = DATASETS / "cranfield" / "cran.all.1400"
        if cran.is_file():
            texts.append(cran.read_text(encoding="utf-8", errors="replace"))
        words = [w.lower() for t in texts for w in _WORD.findall(t)]
        return words if len(words) > 10_000 else _FALLBACK * 50

    def sentence(self, n: int) -> str:
        w = self.rng.choice(self.words)
        out = [w]
        for _ in range(n - 1):
            nxt = self.follow.get(w)
            w = self.rng.choice(nxt) if nxt and self.rng.random() < 0.85 else self.rng.choice(self.words)
            out.append(w)
        return " ".join(out)

    def title(self) -> str:
        words = self.rng.sample(self.content_words[:3000], self.rng.randint(3, 7))
        return " ".join(words).capitalize()

    def identifier(self) -> str:
        a, b = self.rng.sample(self.content_words[:2000], 2)
        style = self.rng.random()
        if style < 0.4:
            return f"{a}_{b}_v{self.rng.randint(1, 9)}"
        if style < 0.7:
            return f"X-{a.capitalize()}-{b.capitalize()}"
        return f"{a}{b.capitalize()}()"

    def body(self) -> str:
        words = int(self.rng.lognormvariate(4.9, 0.6))
        words = max(40, min(400, words))
        paras: list[str] = []
        while words > 0:
            n = min(words, self.rng.randint(30, 90))
            sentences = []
            left = n
            while left > 0:
                k = min(left, self.rng.randint(8, 20))
                s = self.sentence(k).capitalize() + "."
                if self.rng.random() < 0.08:
                    s += f" See `{self.identifier()}`."
                sentences.append(s)
                left -= k
            paras.append(" ".join(sentences))
            words -= n
        return "\n\n".join(paras)


def _domains(rng: random.Random) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for top in TOP:
        for sub in rng.sample(SUB, 5):
            out.append((top, sub))
            out.extend((top, sub, leaf) for leaf in rng.sample(LEAF, 4))
    return out


def ulid(rng: random.Random, ms: int) -> str:
    """A ULID at ``ms`` (epoch milliseconds) whose random part comes from ``rng``: the
    same seed gives the same id on every run and machine."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = (ms << 80) | rng.getrandbits(80)
    return "".join(alphabet[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def generate(size: int, seed: int = 7, root: Path | None = None, *, force: bool = False) -> Synth:
    """Write (or reuse) a synthetic vault of ``size`` items; return what it holds."""
    root = root or CACHE / f"{size}-{seed}"
    marker = root / MARKER
    if marker.is_file() and not force:
        info = json.loads(marker.read_text())
        return Synth(root, info["items"], info["synapses"], tuple(info["ids"]), tuple(info["paths"]))
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "engram.yaml").write_text("formatVersion: 1\n")
    rng = random.Random(seed)
    model = TextModel(rng)
    domains = _domains(rng)
    tags = [w for w in model.content_words[:1200] if len(w) < 14][:400]
    base = datetime(2024, 1, 1, tzinfo=UTC)
    span = int(timedelta(days=700).total_seconds() * 1000)
    records: list[dict[str, object]] = []
    by_domain: dict[tuple[str, ...], list[int]] = defaultdict(list)
    used: set[str] = set()
    for i in range(size):
        ms = int(base.timestamp() * 1000) + span * i // max(size, 1)
        stamp = codec.format_time(datetime.fromtimestamp(ms / 1000, UTC))
        domain = rng.choice(domains)
        title = model.title()
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "item"
        path = "/".join(domain) + f"/{slug}.md"
        if path in used:
            path = "/".join(domain) + f"/{slug}-{i}.md"
        used.add(path)
        body = model.body()
        meta = {
            "id": ulid(rng, ms),
            "title": title,
            "slug": Path(path).stem,
            "domainTags": list(domain),
            "kind": rng.choice(KINDS),
            "tags": rng.sample(tags, rng.randint(1, 4)),
            "summary": model.sentence(rng.randint(8, 16)).capitalize() + ".",
            "importance": round(rng.betavariate(2, 3), 2),
            "confidence": round(rng.betavariate(3, 2), 2),
            "sourceType": "firsthand",
            "status": "active",
            "verificationStatus": "unverified",
            "visibility": "team",
            "createdBy": "synth",
            "createdAt": stamp,
            "updatedBy": "synth",
            "updatedAt": stamp,
            "version": 1,
            "contentHash": codec.content_hash(body),
            "contentSize": len(body.encode()),
            "retrievalCount": int(rng.paretovariate(2.0)) - 1,
            "effectiveRetrievals": 0,
            "failedUses": 0,
            "reinforcementScore": 0.0,
            "activatedAt": stamp,
        }
        records.append({"meta": meta, "body": body, "path": path, "edges": []})
        by_domain[domain].append(i)
    edges = _edges(rng, records, by_domain, size)
    for kind, a, b in edges:
        _add_edge(records, kind, a, b)
    for record in records:
        _write_item(root, record)
    for kind, a, b in edges:
        _write_synapse(root, records, kind, a, b)
    ids = tuple(str(r["meta"]["id"]) for r in records)  # type: ignore[index]
    paths = tuple(str(r["path"]) for r in records)
    marker.write_text(json.dumps({"items": size, "synapses": len(edges), "ids": ids, "paths": paths}))
    return Synth(root, size, len(edges), ids, paths)


def _edges(
    rng: random.Random,
    records: list[dict[str, object]],
    by_domain: dict[tuple[str, ...], list[int]],
    size: int,
) -> list[tuple[str, int, int]]:
    kinds = [k for k, w in EDGE_KINDS for _ in range(w)]
    out: set[tuple[str, int, int]] = set()
    for i, record in enumerate(records):
        n = int(rng.expovariate(1 / 1.3))
        domain = tuple(record["meta"]["domainTags"])  # type: ignore[index]
        for _ in range(n):
            pool = by_domain[domain] if rng.random() < 0.8 else range(size)
            j = rng.choice(pool)
            if j != i:
                kind = rng.choice(kinds)
                a, b = (min(i, j), max(i, j)) if kind in ("similar_to", "contradicts") else (i, j)
                out.add((kind, a, b))
    # A few successions: a later item supersedes an earlier one in its domain.
    for i in rng.sample(range(size), size // 50):
        domain = tuple(records[i]["meta"]["domainTags"])  # type: ignore[index]
        later = [j for j in by_domain[domain] if j > i]
        if later:
            j = rng.choice(later)
            out.add(("supersedes", j, i))
            old = records[i]["meta"]
            new = records[j]["meta"]
            old["status"] = "superseded"  # type: ignore[index]
            old["supersededBy"] = new["id"]  # type: ignore[index]
            old["deactivatedAt"] = new["createdAt"]  # type: ignore[index]
    return sorted(out)


def _add_edge(records: list[dict[str, object]], kind: str, a: int, b: int) -> None:
    ra, rb = records[a], records[b]
    pa, pb = str(ra["path"])[:-3], str(rb["path"])[:-3]
    ta, tb = ra["meta"]["title"], rb["meta"]["title"]  # type: ignore[index]
    out = "←" if kind not in ("similar_to", "contradicts") else "→"
    ra["edges"].append(f"- → [[{pb}|{tb} · {kind}]]")  # type: ignore[attr-defined]
    rb["edges"].append(f"- {out} [[{pa}|{ta} · {kind}]]")  # type: ignore[attr-defined]


def _write_item(root: Path, record: dict[str, object]) -> None:
    path = root / str(record["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = sorted(record["edges"])  # type: ignore[call-overload]
    path.write_bytes(codec.render_engram(record["meta"], str(record["body"]), lines))  # type: ignore[arg-type]


def _write_synapse(root: Path, records: list[dict[str, object]], kind: str, a: int, b: int) -> None:
    src = str(records[a]["meta"]["id"])  # type: ignore[index]
    dst = str(records[b]["meta"]["id"])  # type: ignore[index]
    if kind in ("similar_to", "contradicts"):
        src, dst = sorted((src, dst))
    sid = "syn-" + hashlib.sha256(f"{src}|{dst}|{kind}".encode()).hexdigest()[:16]
    stamp = records[max(a, b)]["meta"]["createdAt"]  # type: ignore[index]
    data = {
        "id": sid, "from": src, "to": dst, "kind": kind, "weight": 0.5,
        "evidence": [], "createdBy": "synth", "createdAt": stamp, "updatedAt": stamp,
    }
    path = root / "synapses" / kind / f"{sid}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(codec.render_synapse(data))
