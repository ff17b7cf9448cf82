"""Sync under a team's load: the scenarios issues 15 and 16 are judged on, at any size.

- :func:`concurrent_loops` — N clones run ``engram sync`` in loops (each round a create
  or an edit of a shared item first) against one bare origin for S seconds, as real
  processes: how many syncs ran, failed, were retried; then every clone converges.
- :func:`kill_during` — ``kill -9`` (the whole process group: engram and the git it
  runs) of one ``engram sync`` that has local edits to commit and a peer's edits to
  merge, at a chosen step of its journal; then the next sync must complete, the clones
  converge and no edit is missing from the tip.
- :func:`random_convergence` — many clones make random edits (creates, body and tag
  edits, renames, moves, deletes, restores from the trash, links and unlinks; half
  through engram, half as a person with an editor would), sync in random order and in concurrent rounds, and
  sometimes use plain ``git pull`` (through the driver and the hooks); at the end the
  clones must be byte-identical, with no lost line, no conflict marker in frontmatter,
  no repository mid-merge, and doctor clean but for merge flags.

``tests/team`` runs each at a small size; ``benchmarks/bench_merge.py`` at full size.
Each returns plain data (failures as lists of sentences), so a test asserts they are
empty and the benchmark prints them.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.errors import EngramError
from engram.team import hooks
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


@dataclass
class _Clone:
    root: Path
    vault: Vault


@dataclass
class Convergence:
    seed: int
    ops: dict[str, int] = field(default_factory=dict)
    syncs: dict[str, int] = field(default_factory=dict)
    flagged: int = 0
    failures: list[str] = field(default_factory=list)


KINDS = ("causes", "extends", "depends_on", "similar_to")


def random_convergence(tmp: Path, seed: int, *, clones: int = 3, rounds: int = 5, ops: int = 4) -> Convergence:
    """Random edits, random syncs (see the module docstring); returns what went wrong."""
    rng = random.Random(seed)
    result = Convergence(seed)
    _origin, roots = team(tmp, clones)
    team_ = [_Clone(root, Vault.open(root, actor=root.name)) for root in roots]
    for clone in team_:
        hooks.install(clone.root)
    tokens: set[str] = set()
    dropped: set[str] = set()  # tokens a clone deleted knowingly (with their item or line)
    serial = 0
    for _round in range(rounds):
        for clone in team_:
            clone.vault.refresh()
            for _ in range(ops):
                serial += 1
                name = _random_op(rng, clone, serial, tokens, dropped)
                result.ops[name] = result.ops.get(name, 0) + 1
        mode = rng.choice(("concurrent", "concurrent", "serial", "plain-git"))
        result.syncs[mode] = result.syncs.get(mode, 0) + 1
        result.failures += _sync_round(rng, mode, team_)
    for clone in team_:
        clone.vault.close()
    result.failures += converge(roots)
    tip = bodies(roots[0])
    lost = sorted(t for t in tokens - dropped if t not in tip)
    if lost:
        result.failures.append(f"{len(lost)} line(s) lost, e.g. {lost[:5]}")
    for root in roots:
        result.failures += repo_problems(root) + markers_in_frontmatter(root)
        result.failures += doctor_findings(root, {"merge-conflict"})
    with Vault.open(roots[0]) as vault:
        result.flagged = len(vault.conflicts())
    return result


def _random_op(rng: random.Random, clone: _Clone, serial: int, tokens: set[str], dropped: set[str]) -> str:
    vault = clone.vault
    items = vault.list(limit=None)
    token = f"tok{serial}x{clone.root.name}"
    choice = rng.choice(
        ("create", "create", "append", "append", "editor-append", "editor-line", "tags", "title",
         "domain", "delete", "link", "link", "unlink", "person-rename", "restore")
    )
    if choice == "restore":  # bring back something this clone or a teammate deleted
        trashed = vault.trash()
        if not trashed:
            return "skip"
        try:
            vault.restore_deleted(rng.choice(trashed).id)
        except EngramError:
            return "skip"  # back in the vault already (a delete undone by an edit elsewhere)
        return "restore"
    if not items or choice == "create":
        vault.create(f"Note {token}", f"{token}\n", domain=[rng.choice(("ops", "eng", "notes"))],
                     tags=[rng.choice(("a", "b", "c"))], dedupe=False)
        tokens.add(token)
        return "create"
    item = rng.choice(items)
    assert item.path is not None
    if choice == "append":
        vault.update(item.id, {"content": item.content + f"{token}\n"})
        tokens.add(token)
    elif choice == "editor-append":
        _edit(clone.root, item.path, token)
        tokens.add(token)
    elif choice == "editor-line":  # a person edits a line in place (the old words stay)
        path = clone.root / item.path
        text = path.read_text()
        lines = [ln for ln in item.content.splitlines() if ln.startswith("tok")]
        if not lines:
            return "skip"
        line = rng.choice(lines)
        path.write_text(text.replace(f"\n{line}\n", f"\n{line} (edited by {clone.root.name})\n", 1))
    elif choice == "tags":
        vault.update(item.id, {"tags": sorted({*item.tags, rng.choice(("x", "y", "z"))} - {rng.choice(("a", "x"))})})
    elif choice == "title":
        vault.update(item.id, {"title": f"{item.title.split(' r')[0]} r{serial}"})
    elif choice == "domain":
        vault.update(item.id, {"domain_tags": [rng.choice(("ops", "eng", "notes")), rng.choice(("db", "web"))]})
    elif choice == "delete":
        dropped.update(word for word in item.content.split() if word.startswith("tok"))
        vault.delete(item.id)
    elif choice == "link" and len(items) > 1:
        other = rng.choice([i for i in items if i.id != item.id])
        vault.link(item.id, rng.choice(KINDS), other.id, evidence=f"seen by {clone.root.name} {serial}")
    elif choice == "unlink":
        edges = vault.synapses(item.id)
        if not edges:
            return "skip"
        edge = rng.choice(edges)
        vault.unlink(edge.source, edge.kind, edge.target)
    elif choice == "person-rename":
        target = clone.root / Path(item.path).parent / f"{Path(item.path).stem} by hand {serial}.md"
        (clone.root / item.path).rename(target)
    else:
        return "skip"
    return choice


def _sync_round(rng: random.Random, mode: str, team_: list[_Clone]) -> list[str]:
    failures = []
    order = list(team_)
    rng.shuffle(order)
    if mode == "concurrent":
        procs = [(c, subprocess.Popen(engram_cmd(c.root, c.root.name, "sync"), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)) for c in order]
        for clone, proc in procs:
            said, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                failures.append(f"{clone.root.name}: concurrent sync exit {proc.returncode}: {(err or said)[-300:]}")
    elif mode == "serial":
        for clone in order:
            failures += sync_here(clone.root)
    else:  # one person works with plain git: commit, pull (merge or rebase), push
        clone = order[0]
        rebase = rng.random() < 0.5
        git(clone.root, "add", "--all")
        git(clone.root, "commit", "--quiet", "-m", "by hand", check=False)
        pull = git(clone.root, "pull", "--quiet", "--rebase" if rebase else "--no-rebase", "--no-edit", check=False)
        if pull.returncode != 0:  # what docs/merge.md says to do: abort, then engram sync
            git(clone.root, "rebase" if rebase else "merge", "--abort", check=False)
        else:
            git(clone.root, "push", "--quiet", check=False)
        for other in order[1:]:
            failures += sync_here(other.root)
    return failures


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
