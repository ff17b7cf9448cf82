"""Sync under a team's load: the scenarios issues 15, 16 and 26 are judged on, at any size.

- :func:`concurrent_loops` — N clones run ``engram sync`` in loops (each round a create
  or an edit of a shared item first) against one bare origin for S seconds, as real
  processes: how many syncs ran, failed, were retried; then every clone converges.
- :func:`kill_during` — ``kill -9`` (the whole process group: engram and the git it
  runs) of one ``engram sync`` that has local edits to commit and a peer's edits to
  merge, at a chosen step of its journal; then the next sync must complete, the clones
  converge and no edit is missing from the tip.
- :func:`random_convergence` — the randomized team of issue 26: 3-5 clones of one
  vault, each set up a documented way (``engram init`` in the clone, ``engram
  merge-driver install`` + ``engram hooks install`` with no index built, a plain ``git
  clone`` + the first engram command), some joining later. Each round every clone makes
  random edits through engram (in process and through the CLI: creates, appends,
  counters, tags, titles, moves, deletes, restores, links, evidence, weights, unlinks)
  and as a person in an editor (lines added, changed, replaced and deleted — first,
  middle, last — renames, moves and deletes by hand, new items by hand, some left
  half-written while a sync runs); then clones sync in random order or all at once, with
  ``engram sync`` or plain ``git pull`` / ``git pull --rebase``. After every round the
  origin's tip is checked: no line, item, link or evidence entry lost that nobody
  deleted, counters add up, every clone can sync, no half-written item published, no
  conflict marker in frontmatter. At the end every clone syncs until nothing changes
  and the clones must hold the origin's bytes. :func:`run_seeds` runs many seeds and
  :func:`summarize` tables them; ``python -m benchmarks.syncload --seeds 200`` is the
  harness run.

``tests/team`` runs each at a small size; ``benchmarks/bench_merge.py`` at full size.
Each returns plain data (failures as lists of sentences), so a test asserts they are
empty and the benchmark prints them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.errors import EngramError
from engram.store.model import new_id, synapse_id
from engram.store.notes import persons_note
from engram.team import hooks
from engram.team.sync import PARTIAL_EXIT
from engram.vault import Vault
from mergedriver import codec

SETTINGS_EXTRA = "sync:\n  settleSeconds: 0.2\n"
JOURNAL = Path(".engram") / "sync-journal.json"
STEPS = ("commit", "fetch", "merge", "objects", "checkout", "settle", "push")


# --------------------------------------------------------------------------- plumbing


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc


def engram_cmd(root: Path, actor: str, *args: str) -> list[str]:
    code = "import sys; from engram.cli import main; main(sys.argv[1:])"
    return [sys.executable, "-c", code, "--vault", str(root), "--actor", actor, *args]


def engram(root: Path, actor: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(engram_cmd(root, actor, *args), capture_output=True, text=True, check=False)


def team(tmp: Path, clones: int) -> tuple[Path, list[Path]]:
    """A bare origin and ``clones`` clones of one vault (the first one published it)."""
    tmp.mkdir(parents=True, exist_ok=True)
    origin = tmp / "origin.git"
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    git(tmp, "init", "--quiet", "--initial-branch=main", "c0")  # never inside a repository above tmp
    first = Vault.init(tmp / "c0", actor="c0")
    (first.root / "engram.yaml").write_text((first.root / "engram.yaml").read_text() + SETTINGS_EXTRA)
    git(first.root, "remote", "add", "origin", str(origin))
    first.sync()
    first.close()
    roots = [tmp / "c0"]
    for n in range(1, clones):
        git(tmp, "clone", "--quiet", str(origin), f"c{n}")
        Vault.init(tmp / f"c{n}").close()
        roots.append(tmp / f"c{n}")
    return origin, roots


def tracked(root: Path) -> dict[str, bytes]:
    names = git(root, "ls-files", "-z").stdout.split("\0")
    return {name: (root / name).read_bytes() for name in names if name and (root / name).is_file()}


def repo_problems(root: Path) -> list[str]:
    """Why a clone is not in a clean, finished state (empty when it is)."""
    found = []
    git_dir = root / ".git"
    for name in ("MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "index.lock"):
        if (git_dir / name).exists():
            found.append(f"{root.name}: .git/{name} is there")
    status = git(root, "status", "--porcelain").stdout
    if status:
        found.append(f"{root.name}: uncommitted changes: {status.strip()[:300]}")
    fsck = git(root, "fsck", "--no-dangling", "--no-progress", check=False)
    if fsck.returncode != 0:
        found.append(f"{root.name}: git fsck: {fsck.stderr.strip()[:300]}")
    return found


def sync_here(root: Path, why: str = "sync") -> list[str]:
    """One ``engram sync`` in this process (cheaper than a new one); what went wrong."""
    try:
        with Vault.open(root, actor=root.name) as vault:
            report = vault.sync()
    except EngramError as exc:
        return [f"{root.name}: {why} failed: {exc}"]
    return [f"{root.name}: {why} held back {h.path}: {h.reason}" for h in report.held]


def converge(roots: list[Path], rounds: int = 3) -> list[str]:
    """Sync every clone in turn until they agree; returns what went wrong."""
    failures = []
    for _ in range(rounds):
        for root in roots:
            failures += sync_here(root, "final sync")
        if all(tracked(root) == tracked(roots[0]) for root in roots[1:]):
            return failures
    return [*failures, "the clones did not converge: " + ", ".join(
        f"{r.name} differs in {sorted(set(tracked(r).items()) ^ set(tracked(roots[0]).items()))[:3]}"
        for r in roots[1:] if tracked(r) != tracked(roots[0])
    )]


def doctor_findings(root: Path, allowed: set[str]) -> list[str]:
    with Vault.open(root) as vault:
        report = vault.doctor()
    return [
        f"{root.name}: doctor {p.code} {p.path}: {p.message}" for p in report.problems if p.code not in allowed
    ]


def bodies(root: Path) -> str:
    """Every tracked item's content, joined (where lost lines would be missing)."""
    out = []
    for name, data in tracked(root).items():
        if name.endswith(".md"):
            try:
                out.append(codec.parse_engram(data)[1])
            except codec.CodecError:
                out.append(data.decode("utf-8", "replace"))
    return "\n".join(out)


def markers_in_frontmatter(root: Path) -> list[str]:
    found = []
    for name, data in tracked(root).items():
        if name.endswith(".md") and data.startswith(b"---"):
            front = data.split(b"\n---", 1)[0]
            if re.search(rb"^(<{7}|={7}|>{7})", front, re.MULTILINE):
                found.append(f"{root.name}: conflict marker in the frontmatter of {name}")
    return found


# --------------------------------------------------------------------------- concurrent loops

LOOP = r"""
import json, random, sys, time
from engram.vault import Vault
root, actor, start_at, stop_at, shared = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
vault = Vault.open(root, actor=actor)
rng = random.Random(actor)
while time.time() < start_at:
    time.sleep(0.005)
out, lines, n = [], [], 0
while time.time() < stop_at:
    n += 1
    vault.refresh()
    line = f"{actor} line {n}"
    if rng.random() < 0.5:
        vault.create(f"{actor} note {n}", line + "\n", domain=["team"])
    else:
        item = vault.get(shared)
        vault.update(shared, {"content": item.content + line + "\n", "retrieval_count": item.retrieval_count + 1})
    lines.append(line)
    began = time.time()
    try:
        report = vault.sync()
        out.append({"ok": True, "attempts": report.attempts, "seconds": time.time() - began,
                    "partial": report.partial, "retries": report.retries})
    except Exception as exc:
        out.append({"ok": False, "error": str(exc), "seconds": time.time() - began})
print(json.dumps({"syncs": out, "lines": lines}))
"""


def concurrent_loops(tmp: Path, clones: int, seconds: float) -> dict[str, Any]:
    """``clones`` processes, each: an edit, then ``engram sync``, in a loop for ``seconds``."""
    _origin, roots = team(tmp, clones)
    seed = Vault.open(roots[0], actor="c0")
    shared = seed.create("Shared log", "every clone appends here\n", domain=["team"]).item.id
    seed.sync()
    seed.close()
    for root in roots[1:]:
        sync_here(root)
    start_at = time.time() + 3.0
    stop_at = start_at + seconds
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOOP, str(root), root.name, str(start_at), str(stop_at), shared],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for root in roots
    ]
    syncs: list[dict[str, Any]] = []
    written: list[str] = []
    failures: list[str] = []
    for root, proc in zip(roots, procs, strict=True):
        out, err = proc.communicate(timeout=seconds + 900)
        if proc.returncode != 0:
            failures.append(f"{root.name}: the loop crashed: {err.strip()[-500:]}")
            continue
        data = json.loads(out)
        syncs += [dict(s, clone=root.name) for s in data["syncs"]]
        written += data["lines"]
    failures += [f"{s['clone']}: sync failed: {s['error']}" for s in syncs if not s["ok"]]
    failures += converge(roots)
    for root in roots:
        failures += repo_problems(root) + doctor_findings(root, set())
    tip = bodies(roots[0])
    missing = [line for line in written if line not in tip]
    if missing:
        failures.append(f"{len(missing)} written line(s) missing from the tip, e.g. {missing[:3]}")
    done = [s for s in syncs if s["ok"]]
    times = sorted(s["seconds"] for s in done)
    return {
        "clones": clones,
        "seconds": seconds,
        "syncs": len(syncs),
        "failed": len([s for s in syncs if not s["ok"]]),
        "partial": len([s for s in done if s["partial"]]),
        "retries": sum(s["attempts"] - 1 for s in done),
        "max_attempts": max((s["attempts"] for s in done), default=0),
        "retry_reasons": sorted({r for s in done for r in s["retries"]}),
        "syncs_per_s": round(len(done) / seconds, 2),
        "sync_p50_s": round(times[len(times) // 2], 2) if times else None,
        "sync_p95_s": round(times[int(len(times) * 0.95)], 2) if times else None,
        "lines_written": len(written),
        "converged": not [f for f in failures if "converge" in f],
        "failures": failures,
    }


# --------------------------------------------------------------------------- kill -9


@dataclass
class KillOutcome:
    target: str
    landed: str  # the journal's step when the kill landed ('finished' if it never got there)
    index_lock_left: bool
    recovered: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _journal_step(root: Path) -> str | None:
    try:
        return str(json.loads((root / JOURNAL).read_text())["step"])
    except (OSError, ValueError, KeyError):
        return None


def _edit(root: Path, rel: str, line: str) -> None:
    """A person's edit in an editor: a line added at the end of the content (above the
    derived link section), with no thought for ``contentHash``."""
    path = root / rel
    text = path.read_text()
    heading = "\n## Synapses (derived)"
    if heading in text:
        text = text.replace(heading, f"{line}\n{heading}", 1)
    else:
        text = text.rstrip("\n") + f"\n{line}\n"
    path.write_text(text)


def kill_during(tmp: Path, items: int, step: str, rng: random.Random, jitter: float = 0.0) -> KillOutcome:
    """Kill one ``engram sync`` with -9 at ``step`` (see the module docstring)."""
    _origin, (alice, bob) = team(tmp, 2)
    seed = Vault.open(alice, actor="c0")
    rels = []
    for n in range(items):
        body = "".join(f"item {n} line {k}: shared text that both clones start from\n" for k in range(8))
        rels.append(seed.create(f"Item {n}", body, domain=["bulk", f"d{n % 10}"], dedupe=False).item.path or "")
    seed.close()
    setup = sync_here(alice) + sync_here(bob)
    tokens: list[str] = []
    for n, rel in enumerate(rels):  # alice edits every item; bob half of them, and adds two
        token = f"alice-token-{n}"
        _edit(alice, rel, token)
        tokens.append(token)
        if n % 2 == 0:
            token = f"bob-token-{n}"
            _edit(bob, rel, token)
            tokens.append(token)
    setup += sync_here(alice)
    proc = subprocess.Popen(engram_cmd(bob, "c1", "sync"), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    landed = "finished"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        seen = _journal_step(bob)
        if seen == step:
            if jitter:
                time.sleep(rng.uniform(0.0, jitter))
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            landed = _journal_step(bob) or "finished"
            break
        time.sleep(0.0005)
    else:
        proc.wait()
    outcome = KillOutcome(step, landed, (bob / ".git" / "index.lock").exists(), failures=setup)
    after = engram(bob, "c1", "sync", "--json")
    if after.returncode != 0:
        outcome.failures.append(f"the sync after the kill exited {after.returncode}: {(after.stderr or after.stdout)[-500:]}")
    else:
        outcome.recovered = json.loads(after.stdout).get("recovered", [])
    outcome.failures += converge([alice, bob])
    tip = bodies(alice)
    missing = [t for t in tokens if t not in tip]
    if missing:
        outcome.failures.append(f"{len(missing)} edit(s) missing from the tip, e.g. {missing[:3]}")
    for root in (alice, bob):
        outcome.failures += repo_problems(root) + doctor_findings(root, set())
    return outcome


# --------------------------------------------------------------------------- random convergence
#
# A team of 3-5 clones of one vault against a bare origin. Each round every clone makes
# random edits — as an agent through engram (in this process, or through the CLI) and as
# a person in an editor — then some of the clones sync, in a random order or all at
# once, with ``engram sync`` or with plain ``git pull`` / ``git pull --rebase`` (through
# the driver and whatever hooks the clone has), and the invariants are checked against
# the origin's tip. At the end every clone syncs until nothing changes and the clones
# must hold the same bytes.
#
# What the oracle tracks, and why each check is sound (never blames engram for a loss a
# person or agent asked for, nor for an edit that has not been pushed yet):
#
# - lines: every line written carries a token (``tok<serial>x<clone>``). A token is
#   *submitted* once a sync or push of its clone succeeded without holding its file
#   back; from then on it must be in its item at the origin's tip, unless a person
#   deleted or replaced its line (``dropped``), or someone deleted the item having seen
#   the token (the item may then be gone, or back in a version without it). A token the
#   deleter never saw is an edit made beside the delete: its item must survive with it.
# - links: every evidence entry (edge, evidence text) a link wrote. Submitted like
#   tokens; then, while both endpoints are at the tip, the edge must be there with that
#   evidence — unless someone unlinked the edge having seen the entry, or a restore from
#   a trash brought the endpoint back without it. An endpoint's delete excuses its edges
#   only while the endpoint is gone: a delete undone by a concurrent edit brings the
#   item back, and with it every edge and all their evidence.
# - counters: ``retrievalCount`` of an item nobody deleted is the sum of the submitted
#   increments.
# - every clone can sync: a sync that fails is tried once more at once; a clone whose
#   second sync fails too is stuck.
# - the origin's tip never holds an item that does not parse (a half-written file) nor a
#   conflict marker in frontmatter.
# - one id, one file: a tip engram pushed never holds an item in two files. A plain
#   ``git pull`` can make such twins (git matches files by path, engram by id) and a
#   plain ``git push`` publishes them before engram runs again (the hooks join them in
#   the work tree, uncommitted); the next ``engram sync`` anywhere joins them
#   (engram.team.twins), so a tip a plain push made is not held to it.

TOKEN = re.compile(r"\btok\d+[a-z]?xc\d+\b")
#: How a clone of the vault was set up, each as docs/merge.md and docs/cli.md describe it.
SETUPS = (
    "init",  # git clone + `engram init` in the clone (driver and pre-commit hook)
    "init+hooks",  # … + `engram hooks install`
    "driver+hooks",  # git clone + `engram merge-driver install` + `engram hooks install`, no index
    "plain-clone",  # git clone + the first engram command (which registers the driver)
)
KINDS = ("causes", "extends", "depends_on", "similar_to")
DOMAINS = (("ops",), ("eng",), ("notes",), ("ops", "db"), ("eng", "web"))
ENGRAM_OPS = {
    "create": 3, "append": 3, "count": 2, "tags": 1, "title": 1, "domain": 1, "delete": 2, "restore": 2,
    "link": 4, "evidence": 3, "weight": 2, "unlink": 1,
}
PERSON_OPS = {
    "editor-add": 3, "editor-change": 1, "editor-replace": 1, "editor-delete": 3, "hand-rename": 1,
    "hand-move": 1, "hand-delete": 1, "hand-new": 1, "half-new": 1,
}
#: Ops the CLI runs (others go through the vault in this process, as an MCP server would).
CLI_OPS = ("create", "append", "tags", "title", "domain", "delete", "restore", "link", "evidence", "weight", "unlink")
#: Failure tags: the invariants, as counted by :func:`run_seeds`.
TAGS = (
    "lines-lost", "links-lost", "evidence-lost", "items-lost", "counters", "stuck", "unable-to-sync", "duplicate-id",
    "half-published", "unparseable", "markers", "diverged", "repo", "doctor", "unpublished", "crash",
)


def child_env() -> dict[str, str]:
    """The environment of every process the fuzz starts (engram, git, and the driver and
    hooks git starts): this one's, with compiled bytecode cached in a temp folder, so a
    process does not compile engram again each time when ``PYTHONDONTWRITEBYTECODE`` is set."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "engram-syncload-pycache"))
    return env


def tree_files(repo: Path, rev: str = "HEAD") -> dict[str, bytes]:
    """Every file of ``rev`` in ``repo`` (a bare origin works), read in one batch."""
    listing = subprocess.run(["git", "ls-tree", "-r", "-z", rev], cwd=repo, capture_output=True, check=False)
    if listing.returncode != 0:
        return {}
    shas: dict[str, str] = {}
    for entry in listing.stdout.decode().split("\0"):
        if entry:
            head, path = entry.split("\t", 1)
            mode, kind, sha = head.split()
            if kind == "blob" and mode != "120000":
                shas[path] = sha
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, input="".join(f"{s}\n" for s in shas.values()).encode(),
                         capture_output=True, check=True).stdout
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        sha, _, size = out[at:end].decode().split()
        blobs[sha] = out[end + 1 : end + 1 + int(size)]
        at = end + 1 + int(size) + 1
    return {path: blobs[sha] for path, sha in shas.items()}


def work_files(root: Path) -> dict[str, bytes]:
    """The vault's item and synapse files in a clone's work tree (what a person sees)."""
    found: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(root):
        rel_dir = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (rel_dir == Path(".") and d == "private")]
        for name in files:
            rel = (rel_dir / name).as_posix()
            if name.endswith(".md") or (rel.startswith("synapses/") and name.endswith(".yaml")):
                with contextlib.suppress(OSError):
                    found[rel] = (root / rel).read_bytes()
    return found


@dataclass
class _Item:
    path: str
    content: str
    count: int
    twins: tuple[str, ...] = ()  # other files holding the same id (a plain pull's twins)

    def where(self) -> str:
        return " and ".join((self.path, *self.twins))


@dataclass
class _Edge:
    source: str
    kind: str
    target: str
    evidence: set[str]


@dataclass
class _View:
    """What a set of vault files holds: items by id, edges by synapse id, and trouble."""

    items: dict[str, _Item] = field(default_factory=dict)
    edges: dict[str, _Edge] = field(default_factory=dict)
    unparseable: list[str] = field(default_factory=list)  # files that start like an item but do not parse
    markers: list[str] = field(default_factory=list)
    duplicates: set[str] = field(default_factory=set)  # ids that more than one file holds
    _tokens: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, files: dict[str, bytes]) -> _View:
        view = cls()
        for rel, data in files.items():
            if rel.startswith("synapses/") and rel.endswith(".yaml"):
                try:
                    syn = codec.parse_synapse(data)
                except codec.CodecError:
                    view.unparseable.append(rel)
                    continue
                view.edges[Path(rel).stem] = _Edge(
                    str(syn["from"]), str(syn["kind"]), str(syn["to"]),
                    {str(e.get("description")) for e in syn.get("evidence") or ()},
                )
            elif rel.endswith(".md"):
                if data.startswith(b"---"):
                    front = data.split(b"\n---", 1)[0]
                    if re.search(rb"^(<{7}|={7}|>{7})", front, re.MULTILINE):
                        view.markers.append(rel)
                try:
                    meta, content, _ = codec.parse_engram(data)
                except codec.CodecError:
                    if re.match(rb"---\r?\n(.*\n)*?id:", data[:4096]):
                        view.unparseable.append(rel)
                    continue
                item_id, count = str(meta["id"]), int(meta.get("retrievalCount") or 0)
                if item_id in view.items:  # one id in two files (git's rename detection missed a move)
                    view.duplicates.add(item_id)
                    other = view.items[item_id]
                    view.items[item_id] = _Item(other.path, other.content + content, max(count, other.count),
                                                (*other.twins, rel))
                else:
                    view.items[item_id] = _Item(rel, content, count)
        return view

    def tokens(self, item_id: str) -> set[str]:
        if item_id not in self._tokens:
            item = self.items.get(item_id)
            self._tokens[item_id] = set(TOKEN.findall(item.content)) if item else set()
        return self._tokens[item_id]


@dataclass
class _Pending:
    """A clone's edits that no sync or push has carried to the origin yet."""

    tokens: dict[str, str] = field(default_factory=dict)  # token -> item id
    items: set[str] = field(default_factory=set)
    entries: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (edge, evidence) -> ends
    counts: dict[str, int] = field(default_factory=dict)  # item id -> increments


@dataclass
class _Clone:
    root: Path
    setup: str
    hooks: bool
    engram_from: int  # the first round this clone's own edits go through engram
    vault: Vault | None = None
    pending: _Pending = field(default_factory=_Pending)
    half: list[tuple[Path, bytes, str, str]] = field(default_factory=list)  # (file, whole bytes, token, id)

    @property
    def name(self) -> str:
        return self.root.name

    def open(self) -> Vault:
        if self.vault is None:
            self.vault = Vault.open(self.root, actor=self.name)
        return self.vault


@dataclass
class _Outcome:
    clone: str
    method: str
    ok: bool
    code: str  # exit status of engram sync ('exception' for a crash), or what plain git did
    held: set[str] = field(default_factory=set)  # ids (items) and edge ids of files held back
    detail: str = ""


@dataclass
class Convergence:
    """One seed's run: what was done and every invariant's figures; ``failures`` are
    sentences, each starting with its tag (see :data:`TAGS`)."""

    seed: int
    clones: int = 0
    rounds: int = 0
    setups: dict[str, str] = field(default_factory=dict)
    ops: dict[str, int] = field(default_factory=dict)
    syncs: dict[str, int] = field(default_factory=dict)  # sync method -> count
    exits: dict[str, int] = field(default_factory=dict)  # engram sync exit status -> count
    held: dict[str, int] = field(default_factory=dict)  # why sync held files back -> count
    refused: dict[str, int] = field(default_factory=dict)  # engram ops refused, by error
    lines: int = 0
    lines_lost: int = 0
    links: int = 0
    links_lost: int = 0
    evidence: int = 0
    evidence_lost: int = 0
    items_lost: int = 0
    counters_off: int = 0
    stuck: int = 0  # (clone, round) pairs where a clone failed to sync twice in a row
    unable_to_sync: int = 0  # clones whose syncs still fail at the end
    half_published: int = 0
    markers: int = 0
    converged: bool = False
    flagged: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process and every process it waited for (engram, git, hooks, driver)
    phases: dict[str, float] = field(default_factory=dict)  # seconds spent in setup, edits, syncs, checks, final
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # what each round did (for reproducing a failure)

    def tags(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for failure in self.failures:
            tag = failure.split("]", 1)[0].lstrip("[")
            found[tag] = found.get(tag, 0) + 1
        return found


def clones_for(seed: int) -> int:
    """How many clones a seed runs with (3-5), the same on every run of that seed."""
    return random.Random(f"clones-{seed}").randint(3, 5)


def random_convergence(
    tmp: Path, seed: int, *, clones: int | None = None, rounds: int = 6, ops: int = 4
) -> Convergence:
    """Random edits, random syncs, invariants after every round (see above)."""
    return _Fuzz(tmp, seed, clones or clones_for(seed), rounds, ops).run()


class _Fuzz:
    def __init__(self, tmp: Path, seed: int, clones: int, rounds: int, ops: int) -> None:
        self.tmp = tmp
        self.rng = random.Random(seed)
        self.env = child_env()
        self.result = Convergence(seed, clones=clones, rounds=rounds)
        self.n_clones = clones
        self.n_rounds = rounds
        self.n_ops = ops
        self.serial = 0
        self.round = 0
        self.team: list[_Clone] = []
        self.joining: list[tuple[int, _Clone]] = []  # (the round it joins, the clone)
        self.origin = tmp / "origin.git"
        # the oracle
        self.token_item: dict[str, str] = {}
        self.submitted: set[str] = set()
        self.dropped: set[str] = set()  # tokens whose line a person deleted or replaced
        self.seen_by_deleter: dict[str, set[str]] = {}  # item id -> tokens its deleters saw
        self.deleted: set[str] = set()
        self.items: set[str] = set()  # submitted items
        self.entries: dict[tuple[str, str], tuple[str, str]] = {}
        self.entries_submitted: set[tuple[str, str]] = set()
        self.plain_tips: set[str] = set()  # origin commits a plain `git push` made
        self.killed: set[tuple[str, str]] = set()
        self.counts: dict[str, int] = {}
        self.lost: set[str] = set()  # what was reported lost already (tokens, entries, items)
        self.stuck_reported: set[str] = set()
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ plumbing

    def git(self, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, env=self.env)

    def cli(self, clone: _Clone, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(engram_cmd(clone.root, clone.name, *args), capture_output=True, text=True, check=False,
                              env=self.env)

    def fail(self, tag: str, sentence: str) -> None:
        self.result.failures.append(f"[{tag}] round {self.round}: {sentence}")

    def count(self, table: dict[str, int], key: str) -> None:
        with self.lock:  # concurrent sync rounds count from threads
            table[key] = table.get(key, 0) + 1

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            self.result.phases[phase] = round(self.result.phases.get(phase, 0.0) + spent, 2)

    def cli_ok(self, clone: _Clone, op: str, *args: str) -> bool:
        """An engram command for ``op``; False (and counted) when it exits non-zero."""
        done = self.cli(clone, *args)
        if done.returncode != 0:
            self.count(self.result.refused, f"{op} (cli): exit {done.returncode}")
        return done.returncode == 0

    # ------------------------------------------------------------------ the run

    def run(self) -> Convergence:
        started, cpu = time.perf_counter(), _cpu()
        try:
            with self.timed("setup"):
                self.setup()
            for number in range(1, self.n_rounds + 1):
                self.round = number
                with self.timed("setup"):
                    self.join()
                with self.timed("edits"):
                    for clone in self.team:
                        self.finish_half(clone)
                        for _ in range(self.n_ops):
                            self.serial += 1
                            self.count(self.result.ops, self.random_op(clone))
                with self.timed("syncs"):
                    self.sync_round()
                with self.timed("checks"):
                    self.check()
            self.round = self.n_rounds + 1
            for clone in self.team:
                self.finish_half(clone)
            with self.timed("final"):
                self.final()
        except Exception as exc:  # noqa: BLE001 - a crash of the fuzz (or of engram in this process) is a finding
            where = traceback.extract_tb(exc.__traceback__)[-1]
            self.fail("crash", f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})")
        finally:
            for clone in self.team:
                if clone.vault is not None:
                    clone.vault.close()
            self.result.seconds = round(time.perf_counter() - started, 1)
            self.result.cpu_seconds = round(_cpu() - cpu, 1)
        return self.result

    def setup(self) -> None:
        """The origin and its first clone; the others are set up, each a documented way,
        when they join (round 1, or later: a teammate who clones a vault with history)."""
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.git(self.tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(self.origin))
        # its own repository first: `engram init` in a folder inside another repository
        # (a stray /tmp/.git on a shared machine) would put the vault in that one
        self.git(self.tmp, "init", "--quiet", "--initial-branch=main", "c0")
        first = Vault.init(self.tmp / "c0", actor="c0")
        (first.root / "engram.yaml").write_text((first.root / "engram.yaml").read_text() + SETTINGS_EXTRA)
        self.git(first.root, "remote", "add", "origin", str(self.origin))
        first.sync()
        first.close()
        hooked = self.rng.random() < 0.5
        self.team.append(_Clone(self.tmp / "c0", "init+hooks" if hooked else "init", hooked, 1))
        if hooked:
            hooks.install(self.tmp / "c0")
        self.result.setups["c0"] = self.team[0].setup
        self.result.log.append(f"r0 c0 publishes the vault: {self.team[0].setup}")
        # every documented setup in turn (from a place the seed picks), so that 5 clones
        # use them all and 3 clones two of them
        start = self.rng.randrange(len(SETUPS))
        for n in range(1, self.n_clones):
            setup = SETUPS[(start + n) % len(SETUPS)]
            latest = max(1, self.n_rounds // 2)
            joins = min(latest, self.rng.choice((1, 1, 2, 3)))
            later = 0
            if setup == "driver+hooks":
                # this clone works with plain git at first (its index is never built), so it
                # joins once the vault has links to pull changes of; engram from its second
                # or third round, or never
                joins = min(latest, self.rng.choice((2, 3)))
                later = self.rng.choice((1, 2, self.n_rounds))
            clone = _Clone(self.tmp / f"c{n}", setup, setup in ("init+hooks", "driver+hooks"), joins + later)
            self.joining.append((joins, clone))
            self.result.setups[clone.name] = setup

    def join(self) -> None:
        """The clones that join this round: ``git clone``, then their setup's commands."""
        for joins, clone in [j for j in self.joining if j[0] == self.round]:
            self.git(self.tmp, "clone", "--quiet", str(self.origin), clone.name)
            steps: list[tuple[str, ...]] = []
            if clone.setup.startswith("init"):
                steps.append(("init", str(clone.root)))
            if clone.setup == "driver+hooks":
                steps.append(("merge-driver", "install"))
            if clone.hooks:
                steps.append(("hooks", "install"))
            if clone.setup == "plain-clone":
                steps.append(self.rng.choice((("list",), ("sync",))))
            for step in steps:
                done = self.cli(clone, *step)
                if done.returncode != 0:
                    self.fail("crash", f"{clone.name}: `engram {' '.join(step)}` exited {done.returncode}: "
                              f"{_last_line(done.stderr)}")
            self.team.append(clone)
            self.result.log.append(
                f"r{self.round} {clone.name} joins: {clone.setup}"
                + (f" (engram from round {clone.engram_from})" if clone.engram_from > joins else "")
            )

    # ------------------------------------------------------------------ edits

    def random_op(self, clone: _Clone) -> str:
        """One edit on ``clone`` (a few draws until one applies); its name."""
        view = _View.of(work_files(clone.root))
        through_engram = self.round >= clone.engram_from and self.rng.random() < 0.55
        table = ENGRAM_OPS if through_engram else PERSON_OPS
        token = f"tok{self.serial}x{clone.name}"
        for _ in range(4):
            name = self.rng.choices(list(table), weights=list(table.values()))[0]
            try:
                done = (self.engram_op if through_engram else self.person_op)(clone, view, name, token)
            except EngramError as exc:
                self.count(self.result.refused, f"{name}: {type(exc).__name__}")
                self.result.log.append(f"r{self.round} {clone.name} {name} refused: {_last_line(str(exc))}")
                return f"{name} (refused)"
            if done:
                self.result.log.append(f"r{self.round} {clone.name} {done}")
                return name
        return "skip"

    def engram_op(self, clone: _Clone, view: _View, name: str, token: str) -> str | None:
        rng = self.rng
        via = "cli" if name in CLI_OPS and rng.random() < 0.3 else "api"
        vault = clone.open()
        vault.refresh()
        ids = sorted(view.items)
        if name == "restore":
            trashed = [e for e in vault.trash() if e.id not in view.items]
            if not trashed:
                return None
            item_id = rng.choice(trashed).id
            if via == "cli":
                if not self.cli_ok(clone, name, "restore", item_id):
                    return None
            else:
                try:
                    vault.restore_deleted(item_id)
                except EngramError:
                    return None
            self.restored(clone, item_id)
            return f"restore {item_id} ({via})"
        if name == "create" or not ids:
            body = "".join(f"tok{self.serial}{chr(97 + k)}x{clone.name}\n" for k in range(rng.randint(1, 3)))
            domain = rng.choice(DOMAINS)
            title = f"Note {self.serial} by {clone.name}"
            if via == "cli":
                out = self.cli(clone, "add", title, "--body", body, "--domain", "/".join(domain), "--tag",
                               rng.choice("abc"), "--no-dedupe", "--json")
                if out.returncode != 0:
                    self.count(self.result.refused, f"create (cli): exit {out.returncode}")
                    return None
                item_id = json.loads(out.stdout)["id"]
            else:
                item_id = vault.create(title, body, domain=list(domain), tags=[rng.choice("abc")], dedupe=False).item.id
            clone.pending.items.add(item_id)
            for tok in TOKEN.findall(body):
                self.wrote(clone, tok, item_id)
            return f"create {item_id} ({via})"
        item_id = self.pick(view, ids)
        item = view.items[item_id]
        if name == "append":
            if via == "cli":
                if not self.cli_ok(clone, name, "update", item_id, "--body", item.content + f"{token}\n"):
                    return None
            else:
                vault.update(item_id, {"content": vault.get(item_id).content + f"{token}\n"})
            self.wrote(clone, token, item_id)
        elif name == "count":
            by = rng.randint(1, 3)
            if persons_note(vault.get(item_id)):
                return None  # a person's note keeps its counters beside it, on each machine (issue 28)
            vault.update(item_id, {"retrieval_count": vault.get(item_id).retrieval_count + by})
            clone.pending.counts[item_id] = clone.pending.counts.get(item_id, 0) + by
            return f"count {item_id} +{by}"
        elif name == "tags":
            add, drop = rng.choice("xyz"), rng.choice("ax")
            if via == "cli":
                self.cli_ok(clone, name, "update", item_id, "--add-tag", add, "--remove-tag", drop)
            else:
                tags = vault.get(item_id).tags
                vault.update(item_id, {"tags": sorted({*tags, add} - {drop})})
        elif name == "title":
            title = f"Note {self.serial} renamed by {clone.name}"
            if via == "cli":
                self.cli_ok(clone, name, "update", item_id, "--title", title)
            else:
                vault.update(item_id, {"title": title})
        elif name == "domain":
            domain = rng.choice(DOMAINS)
            if via == "cli":
                self.cli_ok(clone, name, "update", item_id, "--domain", "/".join(domain))
            else:
                vault.update(item_id, {"domain_tags": list(domain)})
        elif name == "delete":
            seen = view.tokens(item_id)
            if via == "cli":
                if not self.cli_ok(clone, name, "delete", item_id, "--yes"):
                    return None
            else:
                vault.delete(item_id)
            self.deleting(clone, item_id, seen)
        elif name == "link":
            if len(ids) < 2:
                return None
            other = rng.choice([i for i in ids if i != item_id])
            kind = rng.choice(KINDS)
            evidence = f"ev{self.serial}x{clone.name}"
            self.link(clone, via, item_id, kind, other, evidence=evidence)
            return f"link {item_id} {kind} {other} +{evidence} ({via})"
        elif name in ("evidence", "weight", "unlink"):
            if not view.edges:
                return None
            sid = rng.choice(sorted(view.edges))
            edge = view.edges[sid]
            if name == "evidence":
                evidence = f"ev{self.serial}x{clone.name}"
                self.link(clone, via, edge.source, edge.kind, edge.target, evidence=evidence)
                return f"evidence {sid} +{evidence} ({via})"
            if name == "weight":
                weight = round(rng.random(), 2)
                self.link(clone, via, edge.source, edge.kind, edge.target, weight=weight)
                return f"weight {sid} {weight} ({via})"
            if via == "cli":
                if not self.cli_ok(clone, name, "unlink", edge.source, edge.kind, edge.target):
                    return None
            else:
                vault.unlink(edge.source, edge.kind, edge.target)
            self.killed.update((sid, e) for e in edge.evidence)
            return f"unlink {sid} ({via})"
        return f"{name} {item_id} ({via})"

    def pick(self, view: _View, ids: list[str]) -> str:
        """An item to edit: half the time one with links, so that edits, deletes and
        evidence meet on the same few items as they do in a team."""
        linked = sorted({end for e in view.edges.values() for end in (e.source, e.target)} & set(ids))
        return self.rng.choice(linked if linked and self.rng.random() < 0.5 else ids)

    def link(self, clone: _Clone, via: str, source: str, kind: str, target: str, *,
             evidence: str | None = None, weight: float | None = None) -> None:
        if via == "cli":
            extra = (["--evidence", evidence] if evidence else []) + (["--weight", str(weight)] if weight is not None else [])
            if not self.cli_ok(clone, "link", "link", source, kind, target, *extra):
                return
        else:
            assert clone.vault is not None
            clone.vault.link(source, kind, target, evidence=evidence, weight=weight)
        if evidence:
            key = (synapse_id(source, target, kind), evidence)
            clone.pending.entries[key] = (source, target)
            self.entries[key] = (source, target)

    def person_op(self, clone: _Clone, view: _View, name: str, token: str) -> str | None:
        rng = self.rng
        if name in ("hand-new", "half-new"):
            item_id = new_id()
            title = f"Hand note {self.serial} by {clone.name}"
            # what a person types (or copies from another note's frontmatter)
            created = f"createdBy: {clone.name}\ncreatedAt: 2026-06-21T10:30:00.000Z\n" if rng.random() < 0.5 else ""
            whole = f"---\nid: {item_id}\ntitle: {title}\n{created}tags: [hand]\n---\n{token}\n".encode()
            path = clone.root / "hand" / f"hand-note-{self.serial}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            if name == "hand-new":
                path.write_bytes(whole)
                clone.pending.items.add(item_id)
                self.wrote(clone, token, item_id)
            else:  # the editor (or the person) stopped half-way: the frontmatter never closes
                path.write_bytes(whole[: whole.index(b"title:") + 10])
                clone.half.append((path, whole, token, item_id))
            return f"{name} {item_id} at {path.relative_to(clone.root)}"
        ids = sorted(i for i, it in view.items.items() if not any(h[3] == i for h in clone.half))
        if not ids:
            return None
        item_id = self.pick(view, ids)
        item = view.items[item_id]
        path = clone.root / item.path
        if name == "hand-rename":
            target = path.with_name(f"{path.stem} by hand {self.serial}.md")
            path.rename(target)
            return f"hand-rename {item_id} -> {target.relative_to(clone.root)}"
        if name == "hand-delete":  # the file, deleted in a file manager; its links are left to engram
            self.deleting(clone, item_id, view.tokens(item_id))
            path.unlink()
            return f"hand-delete {item_id}"
        if name == "hand-move":
            target = clone.root / rng.choice(("inbox", "ops/moved", "eng")) / path.name
            if target.exists():
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
            return f"hand-move {item_id} -> {target.relative_to(clone.root)}"
        text = path.read_text()
        front, lines, tail = _split_item(text)
        where = rng.choice(("first", "middle", "last"))
        at = {"first": 0, "middle": len(lines) // 2, "last": max(0, len(lines) - 1)}[where]
        if name == "editor-add":
            lines.insert(at + (1 if where == "last" and lines else 0), token)
            self.wrote(clone, token, item_id)
        elif name == "editor-delete":
            if len(lines) < 2:
                return None
            self.dropped.update(TOKEN.findall(lines.pop(at)))
        elif name in ("editor-change", "editor-replace"):
            tokened = [n for n, line in enumerate(lines) if TOKEN.search(line)]
            if not tokened:
                return None
            at = rng.choice(tokened)
            where = f"line {at + 1} of {len(lines)}"
            if name == "editor-change":  # a few words added; the line's token stays
                lines[at] = f"{lines[at]} (changed by {clone.name} {self.serial})"
            else:
                self.dropped.update(TOKEN.findall(lines[at]))
                lines[at] = token
                self.wrote(clone, token, item_id)
        path.write_text(front + "".join(f"{line}\n" for line in lines) + tail)
        return f"{name} {where} of {item_id}"

    def wrote(self, clone: _Clone, token: str, item_id: str) -> None:
        clone.pending.tokens[token] = item_id
        self.token_item[token] = item_id

    def deleting(self, clone: _Clone, item_id: str, seen: set[str]) -> None:
        """``clone`` deletes an item having seen ``seen`` (its tokens). Its edges' evidence
        this clone wrote and never pushed dies with it: no other clone ever had it, so no
        merge that undoes the delete can bring it back."""
        self.deleted.add(item_id)
        self.seen_by_deleter.setdefault(item_id, set()).update(seen)
        for key, ends in list(clone.pending.entries.items()):
            if item_id in ends:
                self.killed.add(key)
                del clone.pending.entries[key]

    def restored(self, clone: _Clone, item_id: str) -> None:
        """A restore from this clone's trash: what comes back is what is expected now."""
        view = _View.of(work_files(clone.root))
        back = view.tokens(item_id)
        self.dropped.update(t for t, i in self.token_item.items() if i == item_id and t not in back)
        for key, ends in self.entries.items():
            if item_id in ends:
                edge = view.edges.get(key[0])
                if edge is not None and key[1] in edge.evidence:
                    clone.pending.entries[key] = ends
                else:
                    self.killed.add(key)

    def finish_half(self, clone: _Clone) -> None:
        """The person finishes writing the files left half-written."""
        for path, whole, token, item_id in clone.half:
            path.write_bytes(whole)
            clone.pending.items.add(item_id)
            self.wrote(clone, token, item_id)
        clone.half.clear()

    # ------------------------------------------------------------------ syncing

    def sync_round(self) -> None:
        rng = self.rng
        joining = [c for c in self.team if rng.random() < 0.8] or [rng.choice(self.team)]
        rng.shuffle(joining)
        concurrent = len(joining) > 1 and rng.random() < 0.4
        plans = []
        for clone in joining:
            if self.round < clone.engram_from or rng.random() < 0.2:
                method = rng.choice(("git pull", "git pull --rebase"))
                self.finish_half(clone)  # a person commits what they finished writing
            elif concurrent or rng.random() < 0.4:
                method = "engram sync (cli)"
            else:
                method = "engram sync"
            plans.append((clone, method))
        self.result.log.append(
            f"r{self.round} {'concurrent' if concurrent else 'serial'}: " + ", ".join(f"{c.name} {m}" for c, m in plans)
        )
        if concurrent:
            outcomes: list[_Outcome] = []
            threads = [threading.Thread(target=lambda c=c, m=m: outcomes.append(self.sync_one(c, m))) for c, m in plans]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            outcomes = [self.sync_one(c, m) for c, m in plans]
        self.result.log.append(f"r{self.round} done: " + ", ".join(
            f"{o.clone} {o.method} -> {o.code}" + (f" (held {len(o.held)})" if o.held else "") for o in outcomes))
        for outcome in outcomes:
            self.absorb(outcome, "concurrent" if concurrent else "serial")

    def absorb(self, outcome: _Outcome, how: str) -> None:
        clone = next(c for c in self.team if c.name == outcome.clone)
        self.count(self.result.syncs, f"{outcome.method} ({how})" if outcome.method.startswith("engram") else outcome.method)
        if outcome.ok:
            self.submit(clone, outcome.held)
            return
        if outcome.code == "push lost":
            return  # a person pushes again later; nothing is wrong
        self.result.log.append(f"r{self.round} {clone.name} {outcome.method} failed: {outcome.code} {outcome.detail}")
        again = self.sync_one(clone, "engram sync (cli)")
        self.count(self.result.syncs, "engram sync (cli, retry)")
        if again.ok:
            self.submit(clone, again.held)
            return
        self.result.stuck += 1
        key = f"{clone.name}:{again.code}:{again.detail[:60]}"
        if key not in self.stuck_reported:
            self.stuck_reported.add(key)
            self.fail("stuck", f"{clone.name} ({clone.setup}) cannot sync: {outcome.method} failed "
                      f"({outcome.code}: {outcome.detail}), and so did the engram sync after it "
                      f"({again.code}: {again.detail})")

    def sync_one(self, clone: _Clone, method: str) -> _Outcome:
        if method.startswith("git pull"):
            return self.plain_git(clone, rebase=method.endswith("--rebase"))
        if method == "engram sync (cli)":
            out = self.cli(clone, "sync", "--json")
            code = str(out.returncode)
            self.count(self.result.exits, code)
            if out.returncode not in (0, PARTIAL_EXIT):
                return _Outcome(clone.name, method, False, code, detail=_last_line(out.stderr or out.stdout))
            held = json.loads(out.stdout).get("held", [])
            return _Outcome(clone.name, method, True, code, self.held_ids(clone, held))
        try:
            report = clone.open().sync()
        except EngramError as exc:
            self.count(self.result.exits, str(exc.exit_code))
            return _Outcome(clone.name, method, False, str(exc.exit_code), detail=_last_line(str(exc)))
        except Exception as exc:  # noqa: BLE001 - engram crashed: a finding, not the end of the run
            self.count(self.result.exits, "exception")
            return _Outcome(clone.name, method, False, "exception", detail=f"{type(exc).__name__}: {exc}")
        self.count(self.result.exits, str(PARTIAL_EXIT if report.partial else 0))
        held = [{"path": h.path, "reason": h.reason} for h in report.held]
        return _Outcome(clone.name, method, True, "0", self.held_ids(clone, held))

    def plain_git(self, clone: _Clone, *, rebase: bool) -> _Outcome:
        """A person's plain git: commit everything, pull (through the driver and the
        clone's hooks), push; on a conflict, abort and run engram sync (docs/merge.md)."""
        method = "git pull --rebase" if rebase else "git pull"
        self.git(clone.root, "add", "--all")
        commit = self.git(clone.root, "commit", "--quiet", "-m", "by hand")
        if commit.returncode != 0 and "nothing" not in commit.stdout + commit.stderr:
            return _Outcome(clone.name, method, False, "commit refused", detail=_last_line(commit.stderr or commit.stdout))
        for _ in range(3):
            pull = self.git(clone.root, "pull", "--quiet", "--rebase" if rebase else "--no-rebase", "--no-edit")
            if pull.returncode != 0:
                self.git(clone.root, "rebase" if rebase else "merge", "--abort")
                self.count(self.result.syncs, f"{method}: conflict, aborted")
                after = self.sync_one(clone, "engram sync (cli)")
                after.method = f"{method}, then engram sync"
                return after
            if self.git(clone.root, "push", "--quiet").returncode == 0:
                self.plain_tips.add(self.git(clone.root, "rev-parse", "HEAD").stdout.strip())
                return _Outcome(clone.name, method, True, "pushed")
        return _Outcome(clone.name, method, False, "push lost")

    def held_ids(self, clone: _Clone, held: list[dict[str, str]]) -> set[str]:
        ids = set()
        for entry in held:
            rel = entry["path"]
            self.count(self.result.held, re.sub(r"\d+", "N", entry["reason"].split(":")[0])[:60])
            if rel.endswith(".yaml"):
                ids.add(Path(rel).stem)
                continue
            with contextlib.suppress(OSError):
                found = re.search(r"^id:\s*['\"]?([0-9A-Za-z]+)", (clone.root / rel).read_text(errors="replace"), re.M)
                if found:
                    ids.add(found.group(1))
        return ids

    def submit(self, clone: _Clone, held: set[str]) -> None:
        """A sync or push of ``clone`` succeeded: its edits, but for held files, are out."""
        pending = clone.pending
        for token, item_id in list(pending.tokens.items()):
            if item_id not in held:
                self.submitted.add(token)
                del pending.tokens[token]
        for item_id in [i for i in pending.items if i not in held]:
            self.items.add(item_id)
            pending.items.discard(item_id)
        for key in [k for k in pending.entries if k[0] not in held]:
            self.entries_submitted.add(key)
            del pending.entries[key]
        for item_id in [i for i in pending.counts if i not in held]:
            self.counts[item_id] = self.counts.get(item_id, 0) + pending.counts.pop(item_id)

    # ------------------------------------------------------------------ invariants

    def check(self, *, final: bool = False) -> _View:
        """The invariants, against the origin's tip (``final``: after every clone synced
        until nothing changed, when no plain push is excused)."""
        tip = _View.of(tree_files(self.origin, "main"))
        for rel in tip.unparseable:
            if f"unparseable|{rel}" not in self.lost:
                self.lost.add(f"unparseable|{rel}")
                tag = "half-published" if rel.startswith("hand/") else "unparseable"
                self.result.half_published += tag == "half-published"
                self.fail(tag, f"the origin's tip holds {rel}, which does not parse (a half-written item published)")
        for rel in tip.markers:
            if f"markers|{rel}" not in self.lost:
                self.lost.add(f"markers|{rel}")
                self.result.markers += 1
                self.fail("markers", f"conflict markers in the frontmatter of {rel} at the origin")
        plain = not final and self.git(self.origin, "rev-parse", "main").stdout.strip() in self.plain_tips
        for item_id in sorted(tip.duplicates if not plain else ()):
            if f"duplicate|{item_id}" not in self.lost:
                self.lost.add(f"duplicate|{item_id}")
                self.fail("duplicate-id", f"the origin's tip holds item {item_id} twice: {tip.items[item_id].where()}")
        lost_items = sorted(i for i in self.items - self.deleted - tip.items.keys() if i not in self.lost)
        for item_id in lost_items:
            self.lost.add(item_id)
            self.result.items_lost += 1
        if lost_items:
            self.fail("items-lost", f"{len(lost_items)} item(s) nobody deleted are gone from the origin: {lost_items[:3]}")
        lost = []
        for token in sorted(self.submitted - self.dropped - self.lost):
            item_id = self.token_item[token]
            if token in tip.tokens(item_id) or token in self.seen_by_deleter.get(item_id, ()):
                continue
            lost.append(token)
            self.lost.add(token)
        if lost:
            self.result.lines_lost += len(lost)
            detail = "; ".join(
                f"{t} of {self.token_item[t]} ({'at ' + tip.items[self.token_item[t]].path if self.token_item[t] in tip.items else 'item gone: ' + ('deleted by someone who had not seen it' if self.token_item[t] in self.deleted else 'nobody deleted it')})"
                for t in lost[:4]
            )
            self.fail("lines-lost", f"{len(lost)} submitted line(s) missing from the origin's tip: {detail}")
        gone_edges: dict[str, list[str]] = {}
        thin: list[str] = []
        for key in sorted(self.entries_submitted - self.killed):
            sid, evidence = key
            if f"{sid}|{evidence}" in self.lost:
                continue
            ends = self.entries[key]
            absent = [e for e in ends if e not in tip.items]
            if absent:
                if all(e in self.deleted for e in absent):
                    continue  # an endpoint is deleted: its edges are excused while it is gone
                problem = f"endpoint {absent[0]} is gone, and nobody deleted it"
            elif sid not in tip.edges:
                problem = "both endpoints are there"
            elif evidence not in tip.edges[sid].evidence:
                problem = "the evidence is gone"
            else:
                continue
            self.lost.add(f"{sid}|{evidence}")
            revived = [e for e in ends if e in self.deleted]
            note = f"{sid} {evidence}: {problem}" + (
                f" ({' and '.join(revived)}, deleted by someone, {'is' if len(revived) == 1 else 'are'} back)"
                if revived else "")
            if problem == "the evidence is gone":
                thin.append(note)
            else:
                gone_edges.setdefault(sid, []).append(note)
        if gone_edges:
            self.result.links_lost += len(gone_edges)
            self.fail("links-lost", f"{len(gone_edges)} link(s) nobody unlinked are gone from the origin: "
                      f"{[v[0] for v in list(gone_edges.values())[:4]]}")
        if thin:
            self.result.evidence_lost += len(thin)
            self.fail("evidence-lost", f"{len(thin)} evidence entr(ies) gone from links still there: {thin[:4]}")
        for item_id, total in sorted(self.counts.items()):
            if item_id in self.deleted or item_id not in tip.items or item_id in tip.duplicates \
                    or f"count|{item_id}" in self.lost:
                continue
            if tip.items[item_id].count != total:
                self.lost.add(f"count|{item_id}")
                self.result.counters_off += 1
                self.fail("counters", f"retrievalCount of {item_id} is {tip.items[item_id].count} at the origin, "
                          f"but {total} was added")
        return tip

    def final(self) -> None:
        """Every clone syncs until nothing changes; then the clones must agree byte for byte."""
        roots = [c.root for c in self.team]
        failing: dict[str, str] = {}
        for _ in range(5):
            before = self.git(self.origin, "rev-parse", "main").stdout
            failing = {}
            for clone in self.team:
                outcome = self.sync_one(clone, "engram sync")
                self.count(self.result.syncs, "engram sync (final)")
                if outcome.ok:
                    self.submit(clone, outcome.held)
                else:
                    failing[clone.name] = f"{outcome.code}: {outcome.detail}"
            after = self.git(self.origin, "rev-parse", "main").stdout
            heads = {self.git(r, "rev-parse", "HEAD").stdout for r in roots}
            if before == after and heads == {after} and not any(self.git(r, "status", "--porcelain").stdout for r in roots):
                break
        for name, why in failing.items():
            self.result.unable_to_sync += 1
            self.fail("unable-to-sync", f"{name} cannot sync at the end: {why}")
        self.check(final=True)
        origin_files = tree_files(self.origin, "main")
        differ = {
            r.name: sorted({path for path, _ in set(tracked(r).items()) ^ set(origin_files.items())}) for r in roots
        }
        differ = {name: paths for name, paths in differ.items() if paths}
        self.result.converged = not differ
        if differ:
            self.fail("diverged", "the clones do not hold the origin's bytes: " + "; ".join(
                f"{name} differs in {paths[:3]}" for name, paths in differ.items()))
        left = sum(len(c.pending.tokens) + len(c.pending.entries) for c in self.team)
        if left:
            self.fail("unpublished", f"{left} line(s) or evidence entr(ies) never reached the origin: "
                      + "; ".join(f"{c.name}: {sorted(c.pending.tokens)[:3]}" for c in self.team if c.pending.tokens))
        for clone in self.team:
            for problem in repo_problems(clone.root):
                self.fail("repo", problem)
            for problem in doctor_findings(clone.root, {"merge-conflict"}):
                self.fail("doctor", problem)
        self.result.lines = len(self.token_item)
        self.result.evidence = len(self.entries)
        self.result.links = len({sid for sid, _ in self.entries})
        with Vault.open(roots[0]) as vault:
            self.result.flagged = len(vault.conflicts())


def _split_item(text: str) -> tuple[str, list[str], str]:
    """An item file as an editor shows it: the frontmatter block, the content's lines,
    and the derived link section (with the blank line before it)."""
    end = text.index("\n---", 3)
    end = text.index("\n", end + 1) + 1 if text.find("\n", end + 1) >= 0 else len(text)
    front, body = text[:end], text[end:]
    at = body.find(codec.DERIVED_HEADING)
    if at >= 0 and (at == 0 or body[at - 1] == "\n"):
        content, tail = body[:at], body[at:]
        if content.endswith("\n\n"):
            content, tail = content[:-1], "\n" + tail
    else:
        content, tail = body, ""
    return front, content.splitlines(), tail


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# --------------------------------------------------------------------------- many seeds


def run_seeds(
    seeds: Iterable[int], tmp: Path, *, rounds: int = 6, ops: int = 4, clones: int | None = None,
    progress: Callable[[Convergence], None] | None = None, keep: Path | None = None, jobs: int = 1,
) -> dict[str, Any]:
    """:func:`random_convergence` over ``seeds`` (3-5 clones each unless ``clones``), and
    the table the harness prints: runs converged byte for byte, lines and links lost
    out of those tracked, syncs by exit status, clones stuck or unable to sync. With
    ``keep``, a failing seed's origin and clones are moved there (``keep/<seed>``) to be
    read afterwards: a seed's ids come from the clock, so a rerun may not fail again.
    ``jobs`` seeds run at once, each in a process of its own (seeds share nothing but
    the hermetic git config), so one run of 200 seeds fits in an hour on two cores."""
    results: list[Convergence] = []
    if jobs <= 1:
        for seed in seeds:
            out = _one_seed(seed, tmp, rounds, ops, clones, keep)
            results.append(out)
            if progress is not None:
                progress(out)
        return summarize(results)
    # fork: the workers inherit the hermetic environment and the imported engram as they are
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))
    with pool:
        futures = [pool.submit(_one_seed, seed, tmp, rounds, ops, clones, keep) for seed in seeds]
        for future in as_completed(futures):
            out = future.result()
            results.append(out)
            if progress is not None:
                progress(out)
    results.sort(key=lambda r: r.seed)
    return summarize(results)


def _one_seed(
    seed: int, tmp: Path, rounds: int, ops: int, clones: int | None, keep: Path | None,
) -> Convergence:
    try:
        out = random_convergence(tmp / str(seed), seed, clones=clones, rounds=rounds, ops=ops)
    except Exception as exc:  # noqa: BLE001 - the seed crashed: count it, keep going
        out = Convergence(seed, failures=[f"[crash] {type(exc).__name__}: {exc}"])
    if keep is not None and out.failures and (tmp / str(seed)).exists():
        keep.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(keep / str(seed), ignore_errors=True)
        shutil.move(tmp / str(seed), keep / str(seed))
        (keep / str(seed) / "log.txt").write_text("\n".join([*out.log, "", *out.failures]) + "\n")
    shutil.rmtree(tmp / str(seed), ignore_errors=True)
    return out


def summarize(results: list[Convergence]) -> dict[str, Any]:
    def total(name: str) -> int:
        return sum(int(getattr(r, name)) for r in results)

    def merged(name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in results:
            for key, value in getattr(r, name).items():
                out[key] = out.get(key, 0) + value
        return dict(sorted(out.items()))

    by_tag: dict[str, list[int]] = {}
    for r in results:
        for tag in r.tags():
            by_tag.setdefault(tag, []).append(r.seed)
    seconds = [r.seconds for r in results]
    cpu = [r.cpu_seconds for r in results]
    return {
        "runs": len(results),
        "clones": merged_counts([str(r.clones) for r in results]),
        "clean": sum(not r.failures for r in results),
        "converged": total("converged"),
        "lines_lost": total("lines_lost"),
        "lines": total("lines"),
        "links_lost": total("links_lost"),
        "evidence_lost": total("evidence_lost"),
        "links": total("links"),
        "evidence": total("evidence"),
        "items_lost": total("items_lost"),
        "counters_off": total("counters_off"),
        "clones_unable_to_sync": total("unable_to_sync"),
        "stuck": total("stuck"),
        "half_published": total("half_published"),
        "markers_in_frontmatter": total("markers"),
        "sync_exits": merged("exits"),
        "syncs": merged("syncs"),
        "held": merged("held"),
        "refused_ops": merged("refused"),
        "ops": merged("ops"),
        "setups": merged_counts([s for r in results for s in r.setups.values()]),
        "flagged_items": total("flagged"),
        "seconds_per_seed": round(sum(seconds) / len(seconds), 1) if seconds else None,
        "cpu_seconds_per_seed": round(sum(cpu) / len(cpu), 1) if cpu else None,
        "failing_seeds": {tag: seeds for tag, seeds in sorted(by_tag.items())},
        "failures": {r.seed: r.failures for r in results if r.failures},
        "logs": {r.seed: r.log for r in results if r.failures},
    }


def merged_counts(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


def table(summary: dict[str, Any]) -> list[str]:
    """The harness's lines for a :func:`run_seeds` summary."""
    s = summary
    return [
        f"runs {s['runs']} (clones {s['clones']}), {s['seconds_per_seed']} s per seed"
        f" ({s['cpu_seconds_per_seed']} s of CPU)",
        f"converged byte for byte: {s['converged']}/{s['runs']}; clean (no failure at all): {s['clean']}/{s['runs']}",
        f"lines lost: {s['lines_lost']} of {s['lines']} tracked; items lost: {s['items_lost']}",
        f"links lost: {s['links_lost']} of {s['links']}; evidence entries lost: {s['evidence_lost']} of {s['evidence']}",
        f"clones unable to sync at the end: {s['clones_unable_to_sync']}; stuck (failed twice in a row): {s['stuck']}",
        f"engram sync exits: {s['sync_exits']}",
        f"half-written items published: {s['half_published']}; markers in frontmatter: {s['markers_in_frontmatter']};"
        f" counters off: {s['counters_off']}",
        *(f"failing seeds [{tag}]: {seeds}" for tag, seeds in s["failing_seeds"].items()),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.syncload",
        description="The randomized many-clone sync fuzz over many seeds (issue 26); writes JSON.",
    )
    parser.add_argument("--seeds", type=int, default=200, help="how many seeds (from --first)")
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("--seed", type=int, action="append", help="run just this seed (repeatable)")
    parser.add_argument("--clones", type=int, default=None, help="clones per run (default: 3-5, drawn per seed)")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at once, each in its own process")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--ops", type=int, default=4, help="edits per clone per round")
    parser.add_argument("--keep", type=Path, default=None,
                        help="move each failing seed's origin and clones (and its log) to DIR/<seed>")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the result (default: benchmarks/results/syncload-latest.json)")
    args = parser.parse_args(argv)
    seeds = args.seed or list(range(args.first, args.first + args.seeds))
    results = Path(__file__).resolve().parent / "results"
    target = args.json or results / "syncload-latest.json"
    home = Path(tempfile.mkdtemp(prefix="engram-syncload-"))
    try:
        with _hermetic(home):
            done: list[Convergence] = []

            def progress(r: Convergence) -> None:
                tags = r.tags()
                print(f"  seed {r.seed}: {r.clones} clones, {r.seconds} s, "
                      + ("clean" if not r.failures else ", ".join(f"{t} {n}" for t, n in tags.items())),
                      file=sys.stderr, flush=True)
                done.append(r)  # the figures so far, in case the run is cut short
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = {"rounds": args.rounds, "ops": args.ops, "seeds": [d.seed for d in done], **summarize(done)}
                target.write_text(json.dumps(partial, indent=2) + "\n")

            summary = run_seeds(seeds, home / "runs", rounds=args.rounds, ops=args.ops, clones=args.clones,
                                progress=progress, keep=args.keep, jobs=args.jobs)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    summary = {"rounds": args.rounds, "ops": args.ops, "seeds": seeds, **summary}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(summary, indent=2) + "\n")
    for line in table(summary):
        print(line)
    print(f"written to {target}")
    return 0 if summary["clean"] == summary["runs"] else 1


@contextlib.contextmanager
def _hermetic(home: Path) -> Iterator[None]:
    """git and engram as the tests run them: no user or system git config, no fsync."""
    saved = dict(os.environ)
    cfg = home / "gitconfig"
    cfg.write_text("[user]\n\tname = Fuzz\n\temail = fuzz@example.invalid\n[init]\n\tdefaultBranch = main\n"
                   "[pull]\n\trebase = false\n[commit]\n\tgpgsign = false\n")
    for key in [k for k in os.environ if k.startswith(("GIT_", "ENGRAM_"))]:
        del os.environ[key]
    os.environ.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(cfg), GIT_CONFIG_NOSYSTEM="1", ENGRAM_FSYNC="0",
                      GIT_TERMINAL_PROMPT="0")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
