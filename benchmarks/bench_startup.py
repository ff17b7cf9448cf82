"""Start-up cost of the commands people wait on (issue 30): CPU time, not wall time.

Each command runs as its own process, ``--runs`` times (default 5); the figure is the
median of the child's user+sys CPU seconds (``os.wait4``, git's child processes
included), which moves little with the machine's load, beside the median wall time. The
rows:

- ``engram --version`` and ``engram --help``: nothing but the root group;
- ``engram search QUERY`` on a small vault (``engram demo``, index already built), with
  recall by meaning on (the default: the sentence encoder is loaded for the query) and
  on a copy with ``recall.meaning: 0`` (words only);
- the pre-commit hook on a one-file commit: the exact command the installed hook runs
  (``python -m engram.team.precommit --vault .``) with one changed item staged;
- the post-merge hook's Python part after a pull that moved nothing (``ORIG_HEAD`` =
  ``HEAD``; git itself skips the hook after "Already up to date", so this is its floor)
  and after a pull that brought one changed item (``ORIG_HEAD`` = ``HEAD~1``);
- ``python -c pass``: the floor, the interpreter alone;
- ``engram serve`` (stdio) on the demo vault: until it answers MCP's ``initialize``
  (ready), and until it answers the first ``engram_search`` after it — what an agent
  waits for when its session starts. CPU is the server's own (``/proc``) at that moment;
- with ``--hub``, adoption on the 6,571-note vault of :mod:`benchmarks.obsidian_synth`:
  ``engram init`` in a fresh copy, ``engram doctor`` on a first run and on a run after one.

Bytecode. An installed package runs from compiled bytecode (pip compiles it), so the
source trees measured are compiled first and the children may write bytecode even when
``PYTHONDONTWRITEBYTECODE`` is set here; without it every run would compile every module
it imports (half a second for a search).

Before and after. ``--trees OLD NEW`` measures two source trees of engram (each put
first on ``PYTHONPATH``) on the same vaults, one run of each in turn, so both meet the
same load::

    python -m benchmarks.bench_startup [--runs 5] [--hub] [--trees /tmp/engram-before .]

Prints one JSON document (and a Markdown table on stderr).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cpu_of(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(user+sys CPU seconds, wall seconds) of one run of ``argv``."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def engram_exe() -> str:
    found = shutil.which("engram", path=str(Path(sys.executable).parent)) or shutil.which("engram")
    if found is None:
        raise SystemExit("no `engram` on PATH")
    return found


def tree_env(base: dict[str, str], tree: Path | None) -> dict[str, str]:
    """The children's environment for one source tree (None: as this process finds engram)."""
    env = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [base.get("PYTHONPATH")])])
    return env


def compile_tree(env: dict[str, str]) -> None:
    """Compile the engram (and merge driver) that ``env`` imports, as pip does at install."""
    out = subprocess.run(
        [sys.executable, "-c", "import engram, mergedriver; print(engram.__path__[0]); print(mergedriver.__path__[0])"],
        env=env, capture_output=True, text=True, check=True,
    )
    for folder in out.stdout.split():
        compileall.compile_dir(folder, quiet=1)


Prepare = Callable[[], None]


def measure(rows: dict[str, tuple[list[str], Path]], envs: dict[str, dict[str, str]], runs: int,
            prepare: dict[str, Prepare] | None = None) -> dict[str, Any]:
    """Each row ``runs`` times per tree, the trees taking turns; ``prepare[row]``, when
    given, runs before each run of the row (untimed)."""
    results: dict[str, Any] = {name: {} for name in envs}
    for row, (argv, cwd) in rows.items():
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
        for _ in range(runs):
            for name, env in envs.items():
                if prepare and row in prepare:
                    prepare[row]()
                samples[name].append(cpu_of(argv, cwd, env))
        for name, got in samples.items():
            results[name][row] = medians(got)
    return results


def medians(got: list[tuple[float, float]]) -> dict[str, Any]:
    """One row's figures from its (CPU s, wall s) samples."""
    return {"cpu_s": round(statistics.median(r[0] for r in got), 3),
            "wall_s": round(statistics.median(r[1] for r in got), 3), "runs": len(got)}


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench_startup", "version": "1"}}}
SEARCH = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "engram_search", "arguments": {"query": "postgres"}}}


def _cpu_now(pid: int) -> float:
    """User+sys CPU seconds of a running process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_ready(engram: str, vault: Path, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """(CPU, wall) seconds of one ``engram serve`` over stdio until it answers
    ``initialize``, and until it answers the first search after it."""
    started = time.perf_counter()
    proc = subprocess.Popen([engram, "serve"], cwd=vault, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    out: dict[str, tuple[float, float]] = {}
    try:
        for name, message in (("ready", INITIALIZE), ("first search", SEARCH)):
            proc.stdin.write((json.dumps(message) + "\n").encode())
            if name == "first search":  # the client's part of the handshake, before any request
                proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            proc.stdin.flush()
            while True:
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit(f"engram serve stopped before answering {message['method']}")
                if json.loads(line).get("id") == message["id"]:
                    break
            out[name] = (_cpu_now(proc.pid), time.perf_counter() - started)
    finally:
        proc.kill()
        proc.wait()
    return out


def serve_rows(engram: str, vault: Path, envs: dict[str, dict[str, str]], runs: int) -> dict[str, Any]:
    """:func:`serve_ready` ``runs`` times per tree, the trees taking turns; medians."""
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {name: {} for name in envs}
    for _ in range(runs):
        for name, env in envs.items():
            for row, got in serve_ready(engram, vault, env).items():
                samples[name].setdefault(f"engram serve (stdio), {row}", []).append(got)
    return {name: {row: medians(got) for row, got in rows.items()} for name, rows in samples.items()}


def hub_rows(tmp: Path, engram: str, envs: dict[str, dict[str, str]], runs: int) -> dict[str, Any]:
    """Adoption on the 6,571-note vault (:mod:`benchmarks.obsidian_synth`): ``engram init``
    in a fresh copy (git init'ed, nothing indexed), ``engram doctor`` on a first run
    (its memory of clean secret scans deleted) and on a run after one."""
    from benchmarks import obsidian_synth

    source = obsidian_synth.generate().root
    fresh = tmp / "hub-init"
    adopted = tmp / "hub"
    shutil.copytree(source, adopted, ignore=shutil.ignore_patterns(obsidian_synth.MARKER))
    subprocess.run(["git", "init", "-q"], cwd=adopted, check=True)
    subprocess.run([engram, "init"], cwd=adopted, check=True, env=next(iter(envs.values())), capture_output=True)

    def lay_fresh() -> None:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(source, fresh, ignore=shutil.ignore_patterns(obsidian_synth.MARKER))
        subprocess.run(["git", "init", "-q"], cwd=fresh, check=True)

    def forget_scans() -> None:
        (adopted / ".engram" / "clean-scans").unlink(missing_ok=True)

    lay_fresh()
    rows = {
        "engram init (6,571-note hub)": ([engram, "init"], fresh),
        "engram doctor (hub, first run)": ([engram, "doctor"], adopted),
        "engram doctor (hub, again)": ([engram, "doctor"], adopted),
    }
    return measure(rows, envs, runs, prepare={"engram init (6,571-note hub)": lay_fresh,
                                              "engram doctor (hub, first run)": forget_scans})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--trees", nargs="+", type=Path, default=None,
                        help="source trees of engram to measure in turn (default: the one this process imports)")
    parser.add_argument("--hub", action="store_true",
                        help="also `engram init` and `engram doctor` on the 6,571-note Obsidian vault of bench_import")
    args = parser.parse_args()
    base = {**os.environ, "ENGRAM_ACTOR": "bench", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    trees: list[Path | None] = [t.resolve() for t in args.trees] if args.trees else [None]
    envs = {str(t) if t is not None else "current": tree_env(base, t) for t in trees}
    for env in envs.values():
        compile_tree(env)
    setup_env = next(iter(envs.values()))
    engram = engram_exe()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "demo"
        subprocess.run([engram, "demo", str(vault)], check=True, env=setup_env, capture_output=True)
        if not (vault / ".git").exists():
            subprocess.run(["git", "init", "-q"], cwd=vault, check=True)
        if subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=vault, capture_output=True).returncode:
            subprocess.run(["git", "add", "-A"], cwd=vault, check=True)
            subprocess.run(["git", "commit", "-qm", "demo", "--no-verify"], cwd=vault, check=True, env=setup_env)
        subprocess.run([engram, "search", "postgres"], cwd=vault, check=True, env=setup_env, capture_output=True)
        words = Path(tmp) / "words"
        shutil.copytree(vault, words, symlinks=True)
        settings = words / "engram.yaml"
        settings.write_text(settings.read_text(encoding="utf-8") + "recall:\n  meaning: 0\n", encoding="utf-8")
        subprocess.run([engram, "search", "postgres"], cwd=words, check=True, env=setup_env, capture_output=True)
        items = sorted(p for p in vault.rglob("*.md") if ".engram" not in p.parts and p.parent != vault)
        edited = items[0]
        edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        subprocess.run(["git", "add", str(edited)], cwd=vault, check=True)
        subprocess.run(["git", "update-ref", "ORIG_HEAD", "HEAD"], cwd=vault, check=True)
        rows = {
            "python -c pass": ([py, "-c", "pass"], vault),
            "engram --version": ([engram, "--version"], vault),
            "engram --help": ([engram, "--help"], vault),
            "engram search postgres (demo vault)": ([engram, "search", "postgres"], vault),
            "engram search postgres (demo vault, words only)": ([engram, "search", "postgres"], words),
            "pre-commit hook, one staged file": ([py, "-m", "engram.team.precommit", "--vault", "."], vault),
            "post-merge hook, no-op pull": ([py, "-m", "engram.team.hooks", "post-merge", "--vault", "."], vault),
        }
        results = measure(rows, envs, args.runs)
        # A pull that brought one changed item: the staged edit committed, ORIG_HEAD before it.
        subprocess.run(["git", "commit", "-qm", "one more line", "--no-verify"], cwd=vault, check=True, env=setup_env)
        subprocess.run(["git", "update-ref", "ORIG_HEAD", "HEAD~1"], cwd=vault, check=True)
        pull = {"post-merge hook, pull of one changed item":
                ([py, "-m", "engram.team.hooks", "post-merge", "--vault", "."], vault)}
        for name, got in measure(pull, envs, args.runs).items():
            results[name] |= got
        for name, got in serve_rows(engram, vault, envs, args.runs).items():
            results[name] |= got
        if args.hub:
            for name, got in hub_rows(Path(tmp), engram, envs, args.runs).items():
                results[name] |= got
    out = {"load": os.getloadavg(), "cpus": os.cpu_count(), "trees": list(envs), "results": results}
    print(json.dumps(out, indent=2))
    names = list(envs)
    print("| command | " + " | ".join(f"CPU s ({n})" for n in names) + " | " + " | ".join(
        f"wall s ({n})" for n in names) + " |", file=sys.stderr)
    print("|---" * (1 + 2 * len(names)) + "|", file=sys.stderr)
    for row in results[names[0]]:
        cpu = " | ".join(f"{results[n][row]['cpu_s']:.3f}" for n in names)
        wall = " | ".join(f"{results[n][row]['wall_s']:.3f}" for n in names)
        print(f"| `{row}` | {cpu} | {wall} |", file=sys.stderr)


if __name__ == "__main__":
    main()
