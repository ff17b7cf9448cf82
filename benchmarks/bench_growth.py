"""Growth: engram at 10k, 100k and a million items — what scales and what breaks first.

For each size, on the synthetic vault of :mod:`benchmarks.synth` (written under
``--root``, default ``<tmp>/engram-growth``), one step after another:

- ``generate``: the vault's files (cached: reused when its marker is there).
- ``layout``: files per directory — the largest item folder and the largest synapse
  folder, the first thing that hurts file systems and Obsidian.
- ``cold``: :func:`benchmarks.scale.cold_index` (a fresh process rebuilds the index;
  items/s, peak memory); ``size``: :func:`benchmarks.scale.index_size`.
- ``vectors``: how many items have a vector (the sentence encoder is on by default, but
  it embeds about 10 items per CPU second, so no size here is embedded: a million would
  take about a day of CPU). The default settings' searches then answer by words and say
  ``meaning: partial``; that state is recorded from one search.
- ``recall_words``: :func:`benchmarks.scale.recall_latency` with ``recall.meaning: 0``
  (words only; comparable at every size); ``recall_default``: the same with the vault's
  default settings (meaning on, no vectors stored: the query is still embedded).
- ``mcp_words``: ``engram_search`` over MCP stdio (a real ``engram serve``,
  :func:`benchmarks.bench_mcp.over_stdio`), words only — the default settings would set
  the server's background filler embedding the whole vault on the other core.
- ``git_init``: the vault as a team's repository: ``git init``, ``git add -A``, ``git
  commit`` (plain git, no hooks), the ``.git`` size as it is (loose objects);
  ``engram_init``: ``engram init`` in it (template, merge driver, pre-commit hook, index
  check) and a commit of what it laid.
- ``push``: a bare origin and ``git push -u`` to it (pack protocol, as to a host); the
  origin's ``size-pack`` is the packed repository a clone downloads.
- ``sync_usage``: the first vault's ``engram sync`` then: it folds the usage journaled by
  the searches above (retrieval counts of every item they returned) into those items,
  commits and pushes them — what an agent's vault does after a day of searching, and it
  leaves the next syncs with only their own changes.
- ``clone``: ``git clone file://origin`` (packed transfer, not hardlinks) and ``git
  status`` twice in the clean clone (the second, warm, is the figure).
- ``join``: ``engram init`` in that clone (builds its index: a teammate joining).
- ``catch_up``: the clone's ``engram sync`` before it edits (a sync with nothing to
  commit, and nothing to pull unless the clone was made before ``sync_usage``).
- ``updates``: the clone changes 100 items with ``Vault.update`` (a line appended);
  ``sync_push``: its ``engram sync`` commits and pushes them — 100 local changes.
- ``sync_pull``: the first vault (index built) runs ``engram sync``: fetch, fast-forward,
  refresh of the 100 pulled files; ``search_after``: a fresh process then opens the
  vault and searches once (the first read's refresh, then the search).
- ``search_after_clone``: ``search_after`` in the second clone after ``catch_up`` (for
  runs where the first vault's syncs went ahead while the clone was being indexed).
- ``creates_sync``: the first vault creates 100 items with ``Vault.create`` and ``engram
  sync``s them (100 local creates; the origin is ahead of nothing).

Every step runs in its own process (``--child``) with a timeout (``--timeout``, default
45 minutes): its wall time, CPU time (user + system of it and everything it waited for,
git included) and the load average before and after are recorded beside what it
returns. A step that fails or times out is recorded with what it was doing and its last
output — that is a finding — and the steps that need it are skipped. Results go to
``benchmarks/results/growth-<UTC time>.json`` (rewritten after every step, so a run cut
short leaves what it measured) and ``growth-latest.json``.

    python -m benchmarks.bench_growth --sizes 10000 100000 1000000 [--root /tmp/engram-growth]
    python -m benchmarks.bench_growth --sizes 10000 --steps layout cold size --keep

The vaults are deleted after each size unless ``--keep``. Steps run in the order given
to ``--steps``; two runs with ``--keep`` and disjoint steps may share a size's vaults (a
million items made that worth it: the index steps and the first git steps ran side by
side, each then on about one core; their CPU times are unaffected, their wall times are
not).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import synth

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_ROOT = Path(tempfile.gettempdir()) / "engram-growth"
TIMEOUT = 45 * 60
CHANGES = 100
#: Each step and the step it needs (its input is that step's output on disk).
STEPS: dict[str, str | None] = {
    "generate": None, "layout": "generate", "cold": "generate", "size": "cold", "vectors": "cold",
    "recall_words": "cold", "recall_default": "cold", "mcp_words": "cold",
    "git_init": "generate", "engram_init": "git_init", "push": "git_init", "sync_usage": "push", "clone": "push",
    "join": "clone", "catch_up": "join", "updates": "join",
    "sync_push": "updates", "sync_pull": "sync_push", "search_after": "sync_pull", "creates_sync": "sync_pull",
    "search_after_clone": "catch_up",
}


# --------------------------------------------------------------------------- timing


def cpu_seconds() -> float:
    """User + system time of this process and of every child it has waited for."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def load() -> float:
    return round(os.getloadavg()[0], 2)


@contextmanager
def measured(out: dict[str, Any]) -> Iterator[None]:
    """Fill ``out`` with the block's wall and CPU seconds and the load before and after."""
    out["load_before"], cpu0, wall0 = load(), cpu_seconds(), time.perf_counter()
    try:
        yield
    finally:
        out["wall_s"] = round(time.perf_counter() - wall0, 3)
        out["cpu_s"] = round(cpu_seconds() - cpu0, 3)
        out["load_after"] = load()


def run(cmd: list[str], cwd: Path, timeout: float = TIMEOUT, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` in its own process group, timed; a non-zero exit or a timeout is
    recorded (with the output's tail), not raised. Its stdout is kept under ``stdout``."""
    shown = cmd[cmd.index("-c") + 2:] if cmd[0] == sys.executable and "-c" in cmd else cmd
    out: dict[str, Any] = {"cmd": " ".join(shown)}
    with measured(out):
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            out["timeout_s"] = timeout
        out["rc"] = proc.returncode
    out["stdout"] = stdout
    if proc.returncode != 0:
        out["stderr_tail"] = stderr[-2000:]
    return out


def git(cwd: Path, *args: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    result = run(["git", *args], cwd, timeout)
    if result["rc"] != 0:
        raise StepFailed(f"git {' '.join(args)}", result)
    if len(result["stdout"]) > 4000:
        del result["stdout"]
    return result


def engram(cwd: Path, actor: str, *args: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    code = "import sys; from engram.cli import main; main(sys.argv[1:])"
    result = run([sys.executable, "-c", code, "--actor", actor, *args], cwd, timeout)
    if result["rc"] not in (0,):
        raise StepFailed(f"engram {' '.join(args)}", result)
    return result


class StepFailed(Exception):
    def __init__(self, doing: str, result: dict[str, Any]) -> None:
        super().__init__(doing)
        self.doing, self.result = doing, result


# --------------------------------------------------------------------------- the steps


@dataclass(frozen=True)
class Paths:
    size: int
    root: Path

    @property
    def vault(self) -> Path:  # the vault generated, indexed, then the first team clone
        return self.root / f"v{self.size}"

    @property
    def team(self) -> Path:
        return self.root / f"g{self.size}"

    @property
    def origin(self) -> Path:
        return self.team / "origin.git"

    @property
    def clone(self) -> Path:  # the second team clone
        return self.team / "clone-b"

    def data(self) -> synth.Synth:
        return synth.generate(self.size, root=self.vault)


def step_generate(p: Paths) -> dict[str, Any]:
    cached = (p.vault / synth.MARKER).is_file()
    data = p.data()
    return {"cached": cached, "items": data.items, "synapses": data.synapses}


def step_layout(p: Paths) -> dict[str, Any]:
    """Files per directory, items and synapse folders apart."""
    items: Counter[str] = Counter()
    synapses: Counter[str] = Counter()
    dirs = 0
    for folder, subdirs, files in os.walk(p.vault):
        subdirs[:] = [d for d in subdirs if d not in (".git", ".engram", ".obsidian")]
        dirs += 1
        rel = os.path.relpath(folder, p.vault)
        target = synapses if rel.split(os.sep)[0] == "synapses" else items
        target[rel] = len([f for f in files if f.endswith((".md", ".yaml"))])
    top_items = items.most_common(3)
    top_syn = synapses.most_common(3)
    folders_with_items = [n for n in items.values() if n]
    return {
        "directories": dirs,
        "item_files": sum(items.values()), "synapse_files": sum(synapses.values()),
        "largest_item_dirs": top_items, "largest_synapse_dirs": top_syn,
        "item_dirs_with_files": len(folders_with_items),
        "median_item_dir_files": sorted(folders_with_items)[len(folders_with_items) // 2] if folders_with_items else 0,
    }


def step_cold(p: Paths) -> dict[str, Any]:
    from benchmarks.scale import cold_index

    return cold_index(p.vault)


def step_size(p: Paths) -> dict[str, Any]:
    from benchmarks.scale import index_size

    return index_size(p.vault)


def step_vectors(p: Paths) -> dict[str, Any]:
    """How many items have a vector, and what one default search says about meaning."""
    from engram.vault import Vault

    with Vault.open(p.vault, actor="bench") as vault:
        counts = vault.state.index.counts()
        missing = vault.unembedded()
        result = vault.search("database index latency")
    return {"items": counts.get("item", 0), "without_vector": missing,
            "with_vector": counts.get("item", 0) - missing, "default_search_meaning": result.meaning.to_json()}


def step_recall_words(p: Paths) -> dict[str, Any]:
    from benchmarks.bench_mcp import WORDS
    from benchmarks.scale import recall_latency, with_settings

    with with_settings(p.vault, WORDS):
        return {"mode": "words only (recall.meaning: 0)", **recall_latency(p.vault, p.data().paths)}


def step_recall_default(p: Paths) -> dict[str, Any]:
    from benchmarks.scale import recall_latency

    return {"mode": "default settings (meaning on, no vectors stored)", **recall_latency(p.vault, p.data().paths)}


def step_mcp_words(p: Paths) -> dict[str, Any]:
    import anyio

    from benchmarks.bench_mcp import WORDS, make_queries, over_stdio
    from benchmarks.scale import with_settings

    data = p.data()
    queries = make_queries(data, 100)
    ids = random.Random(5).sample(list(data.ids), 20)
    with with_settings(p.vault, WORDS):
        result: dict[str, Any] = anyio.run(over_stdio, p.vault, queries, 2, ids)
    return {"mode": "words only (recall.meaning: 0)", "queries": len(queries), "rounds": 2, **result}


def _repo_size(repo: Path) -> dict[str, Any]:
    counts = subprocess.run(["git", "count-objects", "-v"], cwd=repo, capture_output=True, text=True, check=True)
    fields = dict(line.split(": ", 1) for line in counts.stdout.splitlines() if ": " in line)
    du = subprocess.run(["du", "-sk", "."], cwd=repo, capture_output=True, text=True, check=True)
    return {"loose_objects": int(fields["count"]), "loose_mb": round(int(fields["size"]) / 1024, 1),
            "packs": int(fields["packs"]), "size_pack_mb": round(int(fields["size-pack"]) / 1024, 1),
            "du_mb": round(int(du.stdout.split()[0]) / 1024, 1)}


def step_git_init(p: Paths) -> dict[str, Any]:
    root = p.vault
    shutil.rmtree(root / ".git", ignore_errors=True)
    out: dict[str, Any] = {"init": git(root, "init", "--quiet", "--initial-branch=main")}
    (root / ".git" / "info").mkdir(exist_ok=True)  # the generator's cache marker is no part of the vault
    # The generator's cache marker is no part of the vault; .engram/ ignores itself, but
    # the index may be being built beside this step (see the module docstring).
    (root / ".git" / "info" / "exclude").write_text(f"/{synth.MARKER}\n/.engram/\n", encoding="utf-8")
    out["add"] = git(root, "add", "-A")
    out["commit"] = git(root, "commit", "--quiet", "--no-verify", "-m", "the vault")
    out["git_dir_as_is"] = _repo_size(root / ".git")
    return out


def step_engram_init(p: Paths) -> dict[str, Any]:
    """``engram init`` in the repository (template, merge driver, pre-commit hook, a
    refresh of the index built above) and a commit of what it laid (through the hook)."""
    out = {"engram_init": engram(p.vault, "alice", "init", str(p.vault), "--json")}
    git(p.vault, "add", "-A")
    out["commit_template"] = git(p.vault, "commit", "--quiet", "-m", "engram init")
    return out


def step_push(p: Paths) -> dict[str, Any]:
    shutil.rmtree(p.team, ignore_errors=True)
    p.team.mkdir(parents=True)
    git(p.team, "init", "--quiet", "--bare", "--initial-branch=main", str(p.origin))
    git(p.vault, "remote", "add", "origin", str(p.origin))
    out = {"push": git(p.vault, "push", "--quiet", "-u", "origin", "main")}
    out["origin_size"] = _repo_size(p.origin)
    return out


def step_sync_usage(p: Paths) -> dict[str, Any]:
    """The first vault's ``engram sync`` right after publishing: it folds the usage the
    searches above journaled (retrieval counts) into the items and commits and pushes them."""
    result = engram(p.vault, "alice", "sync", "--json")
    result["report"] = _report(result.pop("stdout"))
    return result


def step_clone(p: Paths) -> dict[str, Any]:
    out = {"clone": git(p.team, "clone", "--quiet", f"file://{p.origin}", str(p.clone))}
    out["status_first"] = git(p.clone, "status", "--porcelain")
    out["status_second"] = git(p.clone, "status", "--porcelain")
    out["clean"] = out["status_second"].pop("stdout", "") == "" and out["status_first"].pop("stdout", "") == ""
    out["clone_size"] = _repo_size(p.clone / ".git")
    return out


def step_join(p: Paths) -> dict[str, Any]:
    result = engram(p.clone, "bob", "init", str(p.clone), "--json")
    result["answer"] = json.loads(result.pop("stdout"))
    return result


def step_catch_up(p: Paths) -> dict[str, Any]:
    """The second clone's ``engram sync`` before it edits: nothing local, whatever the
    origin gained since the clone (nothing, unless the clone was made earlier)."""
    result = engram(p.clone, "bob", "sync", "--json")
    result["report"] = _report(result.pop("stdout"))
    return result


def _changed_refs(p: Paths, seed: int) -> list[str]:
    data = p.data()
    return random.Random(seed).sample(list(data.ids), CHANGES)


def step_updates(p: Paths) -> dict[str, Any]:
    """100 items changed through the API in the second clone (a line appended to each)."""
    from engram.vault import Vault

    times: list[float] = []
    with Vault.open(p.clone, actor="bob") as vault:
        for n, ref in enumerate(_changed_refs(p, 3)):
            item = vault.get(ref)
            started = time.perf_counter()
            vault.update(ref, {"content": item.content.rstrip("\n") + f"\n\nChanged by bob, edit {n}.\n"})
            times.append(time.perf_counter() - started)
    first = times[0]
    times.sort()
    return {"updates": len(times), "first_ms": round(first * 1000, 1), "p50_ms": round(times[len(times) // 2] * 1000, 1),
            "max_ms": round(times[-1] * 1000, 1), "total_s": round(sum(times), 2)}


def step_sync_push(p: Paths) -> dict[str, Any]:
    result = engram(p.clone, "bob", "sync", "--json")
    result["report"] = _report(result.pop("stdout"))
    return result


def step_sync_pull(p: Paths) -> dict[str, Any]:
    result = engram(p.vault, "alice", "sync", "--json")
    result["report"] = _report(result.pop("stdout"))
    return result


def _report(text: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(text)
    return {k: v for k, v in report.items() if not isinstance(v, list) or len(v) <= 5}


SEARCH_AFTER = (
    "import json, sys, time; from engram.vault import Vault\n"
    "t = time.perf_counter(); v = Vault.open(sys.argv[1], actor='alice'); o = time.perf_counter() - t\n"
    "t = time.perf_counter(); s = v.refresh(); r = time.perf_counter() - t\n"
    "t = time.perf_counter(); a = v.search(sys.argv[2]); q = time.perf_counter() - t\n"
    "t = time.perf_counter(); v.search(sys.argv[2]); q2 = time.perf_counter() - t\n"
    "n = []\n"
    "for _ in range(5):\n"
    "    t = time.perf_counter(); v.search(sys.argv[2]); n.append(time.perf_counter() - t)\n"
    "t = time.perf_counter(); v.search('database index latency'); q3 = time.perf_counter() - t\n"
    "v.close(); print(json.dumps({'open_s': round(o, 3), 'refresh_s': round(r, 3), 'refresh_changed': s.changed,"
    " 'search_s': round(q, 3), 'second_search_s': round(q2, 3), 'next_five_s': [round(x, 3) for x in n],"
    " 'other_query_s': round(q3, 3), 'hits': len(a.hits), 'meaning': a.meaning.to_json()}))\n"
)


def step_search_after(p: Paths) -> dict[str, Any]:
    """A fresh process after the pull: its first refresh, then one search for a pulled edit."""
    return _search_after(p.vault, "Changed by bob")


def step_search_after_clone(p: Paths) -> dict[str, Any]:
    """The same in the second clone after ``catch_up`` (whatever that pulled)."""
    return _search_after(p.clone, "Alice learned thing")


def _search_after(root: Path, query: str) -> dict[str, Any]:
    result = run([sys.executable, "-c", SEARCH_AFTER, str(root), query], root)
    if result["rc"] != 0:
        raise StepFailed("a fresh process's refresh and search after the pull", result)
    result.update(json.loads(result.pop("stdout")))
    return result


def step_creates_sync(p: Paths) -> dict[str, Any]:
    from engram.vault import Vault

    out: dict[str, Any] = {"creates": {}}
    rng = random.Random(17)
    with measured(out["creates"]), Vault.open(p.vault, actor="alice") as vault:
        for n in range(CHANGES):
            vault.create(f"Growth note {n} {rng.getrandbits(40):x}", f"Alice learned thing {n} about the rollout.",
                         domain=("ops", "growth"), dedupe=False)
    result = engram(p.vault, "alice", "sync", "--json")
    result["report"] = _report(result.pop("stdout"))
    out["sync"] = result
    return out


STEP_FUNCS: dict[str, Callable[[Paths], dict[str, Any]]] = {
    name: globals()[f"step_{name}"] for name in STEPS
}


# --------------------------------------------------------------------------- harness


def child(name: str, p: Paths) -> int:
    """Run one step here and print its JSON as the last line (the parent times the process)."""
    try:
        result = STEP_FUNCS[name](p)
    except StepFailed as exc:
        result = {"failed": exc.doing, **exc.result}
        print(json.dumps(result, default=str))
        return 3
    print(json.dumps(result, default=str))
    return 0


def run_step(name: str, p: Paths, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_growth", "--child", name, "--sizes", str(p.size), "--root", str(p.root)]
    result = run(cmd, Path(__file__).resolve().parents[1], timeout)
    lines = result.pop("stdout").strip().splitlines()
    out: dict[str, Any] = {k: result[k] for k in ("wall_s", "cpu_s", "load_before", "load_after")}
    try:
        out["result"] = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        out["result"] = {"output_tail": "\n".join(lines[-10:])}
    if result["rc"] != 0:
        doing = out["result"].get("failed") if isinstance(out["result"], dict) else None
        out["failed"] = (f"timed out after {timeout:.0f} s" if "timeout_s" in result else f"exit {result['rc']}")
        out["doing"] = doing or name
        out["stderr_tail"] = result.get("stderr_tail", "")[-1500:] or out["result"].get("stderr_tail", "")
    return out


def git_env(root: Path) -> None:
    """git with a known identity and no system settings, in this process and every child."""
    cfg = root / "gitconfig"
    cfg.write_text("[user]\n\tname = Growth Bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n"
                   "[commit]\n\tgpgsign = false\n")
    os.environ.update(GIT_CONFIG_GLOBAL=str(cfg), GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")


def write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    (RESULTS / "growth-latest.json").write_text(text + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where the vaults go")
    parser.add_argument("--steps", nargs="+", choices=list(STEPS), default=list(STEPS))
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds any one step may take")
    parser.add_argument("--keep", action="store_true", help="keep the vaults")
    parser.add_argument("--child", choices=list(STEPS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.root = args.root.resolve()
    args.root.mkdir(parents=True, exist_ok=True)
    git_env(args.root)
    if args.child:
        return child(args.child, Paths(args.sizes[0], args.root))
    from benchmarks.__main__ import machine

    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / f"growth-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    data: dict[str, Any] = {"machine": machine(), "root": str(args.root), "timeout_s": args.timeout,
                            "changes": CHANGES, "sizes": {}}
    for size in args.sizes:
        p = Paths(size, args.root)
        entry: dict[str, Any] = {"started": time.strftime("%H:%M:%SZ", time.gmtime())}
        data["sizes"][str(size)] = entry
        done: set[str] = set()
        for name in args.steps:
            need = STEPS[name]
            if need is not None and need in args.steps and need not in done:
                entry[name] = {"skipped": f"needs {need}, which did not complete"}
                continue
            print(f"{time.strftime('%H:%M:%S')} {size}: {name} (load {load()})", file=sys.stderr, flush=True)
            entry[name] = run_step(name, p, args.timeout)
            if "failed" not in entry[name]:
                done.add(name)
            print(f"  {json.dumps(entry[name], default=str)[:400]}", file=sys.stderr, flush=True)
            write(target, data)
        entry["machine_after"] = machine()
        write(target, data)
        if not args.keep:
            shutil.rmtree(p.vault, ignore_errors=True)
            shutil.rmtree(p.team, ignore_errors=True)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
