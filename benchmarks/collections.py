"""The retrieval collections of the quality harness: documents, queries, judgements.

A :class:`Collection` is a set of documents (each with a *key*: what a judgement
names — a LoCoMo session, a Cranfield abstract, a synthetic note), the queries with
their graded judgements, and how to write the documents into a vault in the documented
on-disk format (``mergedriver.codec``, exactly as engram writes items), with ids fixed by
each item's path and time, so a run repeats its figures exactly. Several items
may share a key (LoCoMo's turns of one session); a ranking of items becomes a ranking
of keys by first appearance. ``docs`` are the items exactly as ``write`` writes them
(title and body; a LoCoMo turn vault's session stubs included), so the plain-BM25
baseline ranks the same documents engram does.

- **LoCoMo** (``../shared/datasets/locomo-dev``, five conversations): ``session`` (one
  item per session: the speakers and date as title, every turn as body), ``turn`` (one
  item per turn, ``part_of`` a session item holding the date, ``follows`` the previous
  turn) and ``hybrid`` (``turn`` with the full text in the session item too). Items are
  dated when their session took place (``createdAt``/``updatedAt``), as notes of a
  meeting would be. A question searches its own conversation's domain. Categories 1-4
  are answerable; category 5 (adversarial) asks about things the other speaker did.
- **Cranfield** (1,400 abstracts, 225 queries, graded judgements 1-4; gain 5 − code).
- **Known items**: the synthetic vault of :mod:`benchmarks.synth`; each query is four
  distinct non-stopword words taken from one live (not superseded) note, which is the
  one right answer.

Query variants built from these, for every collection that has them: ``long`` (LoCoMo:
the previous question of the conversation as context, then the question; Cranfield: the
query inside a few sentences of an agent's request) and no-answer sets (LoCoMo's
adversarial questions; Cranfield queries asked of the LoCoMo vault and LoCoMo questions
asked of Cranfield — neither vault holds anything on the other's subject).
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import synth
from engram.index.query import STOPWORDS
from engram.store.format import read_engram
from engram.store.model import synapse_id
from mergedriver import codec

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
LOCOMO = DATASETS / "locomo-dev" / "locomo-dev.json"
CRANFIELD = DATASETS / "cranfield"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"^D(\d+):(\d+)$")
_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Doc:
    key: str
    title: str
    body: str
    group: str = ""  # a filter the query passes (LoCoMo: its conversation)


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    relevant: Mapping[str, float]  # key → gain; empty for a question with no answer
    category: str
    group: str = ""


@dataclass
class Collection:
    name: str
    docs: list[Doc]
    queries: dict[str, list[Query]]  # query set name → queries
    write: Any = None  # (root) → {item id: key}
    meta: dict[str, Any] = field(default_factory=dict)


def dataset(path: Path) -> Path:
    """``path``, or a clear error: the harness measures real data or nothing."""
    if not path.exists():
        raise SystemExit(f"shared dataset missing: {path} (the harness needs ../shared/datasets)")
    return path


# ---------------------------------------------------------------------- writing items


def write_item(root: Path, rel: str, title: str, body: str, domain: Sequence[str], stamp: str, **extra: Any) -> str:
    # The id is fixed by the path and the time: ranking breaks exact ties by id, so
    # random ids made the figures move by a few thousandths from run to run.
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    item_id = synth.ulid(random.Random(rel), int(moment.timestamp() * 1000))
    meta = {
        "id": item_id, "title": title, "domainTags": list(domain), "kind": "observation",
        "tags": [], "summary": "", "importance": 0.5, "confidence": 0.5,
        "sourceType": "import", "status": "active", "visibility": "team",
        "createdBy": "bench", "createdAt": stamp, "updatedBy": "bench", "updatedAt": stamp,
        "version": 1, "contentHash": codec.content_hash(body), "activatedAt": stamp, **extra,
    }
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(codec.render_engram(meta, body))
    return item_id


def write_edge(root: Path, source: str, target: str, kind: str, stamp: str) -> None:
    sid = synapse_id(source, target, kind)
    data = {"id": sid, "from": source, "to": target, "kind": kind, "weight": 0.5, "evidence": [],
            "createdBy": "bench", "createdAt": stamp, "updatedAt": stamp}
    path = root / "synapses" / kind / f"{sid}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(codec.render_synapse(data))


def fresh(root: Path) -> Path:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "engram.yaml").write_text("formatVersion: 1\n")
    return root


# ---------------------------------------------------------------------- LoCoMo


def _turn_text(turn: Mapping[str, Any]) -> str:
    text = str(turn.get("text", ""))
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def _stamp(date: str) -> str:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as an RFC 3339 instant."""
    try:
        moment = datetime.strptime(date.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        moment = datetime(2023, 1, 1, tzinfo=UTC)
    return codec.format_time(moment)


def sessions(sample: Mapping[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    conv = sample["conversation"]
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            n = int(m.group(1))
            out.append((n, str(conv.get(f"session_{n}_date_time", "")), turns))
    return sorted(out)


def locomo_data(limit: int | None = None) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(dataset(LOCOMO).read_text(encoding="utf-8"))
    return data[:limit] if limit else data


def locomo_questions(data: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[Query]], int]:
    """Query sets ``standard`` (categories 1-4), ``long`` (the same, after the previous
    question as context), ``adversarial`` (category 5, no answer); and how many questions
    were skipped for malformed evidence."""
    sets: dict[str, list[Query]] = defaultdict(list)
    skipped = 0
    for sample in data:
        conv = str(sample["sample_id"])
        previous = ""
        for qa in sample["qa"]:
            keys = {f"{conv}/{m.group(1)}" for e in qa.get("evidence", []) if (m := _EVIDENCE.match(str(e).strip()))}
            text, category = str(qa["question"]), int(qa["category"])
            if not keys:
                skipped += 1
            elif category == 5:
                sets["adversarial"].append(Query(text, {}, CATEGORIES[5], conv))
            else:
                relevant = dict.fromkeys(sorted(keys), 1.0)
                sets["standard"].append(Query(text, relevant, CATEGORIES[category], conv))
                if previous:
                    sets["long"].append(Query(f"{previous} {text}", relevant, CATEGORIES[category], conv))
            previous = text
    return dict(sets), skipped


def _locomo_items(sample: Mapping[str, Any], granularity: str) -> list[tuple[str, str, str, str, str, int | None]]:
    """The items of one conversation, as written: (path, key, title, body, createdAt,
    turn number or None for the session item). The baseline ranks exactly these."""
    conv = str(sample["sample_id"])
    a, b = sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]
    out: list[tuple[str, str, str, str, str, int | None]] = []
    for n, date, turns in sessions(sample):
        stamp, key = _stamp(date), f"{conv}/{n}"
        full = "\n\n".join(f"{t['speaker']}: {_turn_text(t)}" for t in turns)
        body = full if granularity != "turn" else f"Conversation on {date}."
        out.append((f"locomo/{conv}/s{n:02d}.md", key, f"{a} and {b}, session {n} ({date})", body, stamp, None))
        if granularity != "session":
            out += [
                (f"locomo/{conv}/s{n:02d}/t{i:03d}.md", key, f"{t['speaker']}, {date}", _turn_text(t), stamp, i)
                for i, t in enumerate(turns)
            ]
    return out


def locomo(granularity: str, data: Sequence[Mapping[str, Any]] | None = None) -> Collection:
    data = data if data is not None else locomo_data()
    docs = [
        Doc(key, title, body, str(sample["sample_id"]))
        for sample in data
        for _, key, title, body, _, _ in _locomo_items(sample, granularity)
    ]
    queries, skipped = locomo_questions(data)

    def write(root: Path) -> dict[str, str]:
        fresh(root)
        where: dict[str, str] = {}
        for sample in data:
            domain = ("locomo", str(sample["sample_id"]))
            session_id = previous = ""
            for rel, key, title, body, stamp, turn in _locomo_items(sample, granularity):
                item_id = write_item(root, rel, title, body, domain, stamp)
                where[item_id] = key
                if turn is None:
                    session_id, previous = item_id, ""
                    continue
                write_edge(root, item_id, session_id, "part_of", stamp)
                if previous:
                    write_edge(root, item_id, previous, "follows", stamp)
                previous = item_id
        return where

    return Collection(f"locomo-{granularity}", docs, queries, write, {"skipped_malformed": skipped})


# ---------------------------------------------------------------------- Cranfield


def _smart(path: Path) -> dict[int, dict[str, str]]:
    records: dict[int, dict[str, str]] = {}
    current: dict[str, str] | None = None
    name = ""
    for line in dataset(path).read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I "):
            current = records.setdefault(len(records) + 1, {"id": line[3:].strip()})
            name = ""
        elif line[:2] in (".T", ".A", ".B", ".W") and line.strip() == line[:2]:
            name = line[1]
        elif current is not None and name:
            current[name] = (current.get(name, "") + " " + line.strip()).strip()
    return records


#: How an agent might wrap a Cranfield query in a request (the long-query variant).
_REQUESTS = (
    "I am preparing a design review and need the published work on this question. {q} "
    "Please find the reports that address it directly and say which methods they used.",
    "Background for a colleague: we keep running into the following problem in our tests. {q} "
    "What does the literature we have collected say about it, and which results can we rely on?",
    "Can you look through our library for anything on this? {q} I would like the most "
    "relevant studies first, with their main findings and conditions.",
)


def cranfield() -> Collection:
    records = _smart(CRANFIELD / "cran.all.1400")
    docs = [Doc(str(n), r.get("T", "") or f"Document {n}", r.get("W", "")) for n, r in records.items()]
    texts = {n: r.get("W", "") for n, r in _smart(CRANFIELD / "cran.qry").items()}
    qrels: dict[int, dict[str, float]] = defaultdict(dict)
    for line in dataset(CRANFIELD / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and 1 <= int(parts[2]) <= 4:
            qrels[int(parts[0])][parts[1]] = 5.0 - int(parts[2])
    standard = [Query(" ".join(t.split()), qrels[n], "all") for n, t in texts.items() if qrels.get(n)]
    long = [Query(_REQUESTS[i % len(_REQUESTS)].format(q=q.text), q.relevant, "all") for i, q in enumerate(standard)]

    def write(root: Path) -> dict[str, str]:
        fresh(root)
        stamp = codec.format_time(datetime(2024, 1, 1, tzinfo=UTC))
        return {write_item(root, f"cran/d{int(d.key):04d}.md", d.title, d.body, ("cran",), stamp): d.key for d in docs}

    return Collection("cranfield", docs, {"standard": standard, "long": long}, write)


def cross_no_answer(questions: Iterable[Query], groups: Sequence[str], n: int) -> list[Query]:
    """``n`` questions of one collection as no-answer queries for another; each is sent to
    one of ``groups`` in turn (a LoCoMo conversation, or the whole vault)."""
    out: list[Query] = []
    for i, q in enumerate(list(questions)[:n]):
        out.append(Query(q.text, {}, "no-answer", groups[i % len(groups)] if groups else ""))
    return out


# ---------------------------------------------------------------------- known items


def known_items(size: int, queries: int = 200, seed: int = 3) -> Collection:
    """The synthetic vault of ``size`` notes (its own copy: searches journal usage) and
    ``queries`` four-word queries, each taken from one note."""
    made = synth.generate(size)
    docs: list[Doc] = []
    words_of: list[list[str]] = []
    live: list[int] = []  # a superseded note yields to its successor: not a known item
    for i, rel in enumerate(made.paths):
        item, _ = read_engram(made.root / rel, rel)
        if item.status == "active" and not item.superseded_by:
            live.append(i)
        body = f"{item.summary}\n{' '.join(item.tags)}\n{item.content}"
        docs.append(Doc(item.id, item.title, body))
        seen = dict.fromkeys(w.lower() for w in _WORDS.findall(f"{item.title} {item.content}"))
        words_of.append([w for w in seen if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()])
    rng = random.Random(seed)
    chosen = [i for i in rng.sample(live, min(len(live), queries * 2)) if len(words_of[i]) >= 4][:queries]
    qs = [Query(" ".join(rng.sample(words_of[i], 4)), {docs[i].key: 1.0}, "known-item") for i in chosen]

    def write(root: Path) -> dict[str, str]:
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(made.root, root, ignore=shutil.ignore_patterns(".engram"))
        return {d.key: d.key for d in docs}

    return Collection(f"known-{size}", docs, {"standard": qs}, write)
