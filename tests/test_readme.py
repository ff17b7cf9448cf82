"""The README's command blocks run as written (each is a test)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"


def block(heading: str) -> str:
    """The first ```sh block under ``## heading``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, f"no sh block under '## {heading}'"
    return match.group(1)


def run_block(script: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a README block in bash (stop at the first failure) with ``engram`` on PATH.

    ``pip install`` lines are left out: the package under test is installed already.
    """
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("pip install")]
    env = dict(os.environ, HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(lines)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def test_use_it_block_runs_as_written(hermetic: Path, tmp_path: Path) -> None:
    script = block("Use it")
    proc = run_block(script, hermetic, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    vault = hermetic / "team-memory"
    assert (vault / "ops" / "postgres" / "use-pg_repack-not-vacuum-full.md").is_file()
    # `engram list` shows titles; the search follows the link to the bloat note
    assert "procedure   Use pg_repack, not VACUUM FULL  (ops/postgres/" in proc.stdout
    assert " 2. Table bloat after mass deletes  (linked)" in proc.stdout
    assert len(list((vault / "synapses" / "derives_from").glob("syn-*.yaml"))) >= 1
    assert re.search(r"^committed \d+ local change\(s\)$", proc.stdout, re.M)
    assert re.search(r"\n\d+ items, \d+ synapses, 0 problem\(s\), 0 open$", proc.stdout.rstrip())


def test_share_it_with_a_team_runs_as_written(hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a user's machine: git's own default branch (master), so the bare
    repository's HEAD and a new vault's branch (main) disagree."""
    config = hermetic / "user.gitconfig"
    config.write_text("[user]\n\tname = Dana Ortiz\n\temail = dana@example.invalid\n[protocol \"file\"]\n\tallow = always\n")
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Share it with a team\n", 1)[1].split("\n## ", 1)[0]
    yours, theirs = re.findall(r"```sh\n(.*?)```", section, re.S)[:2]
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    first = run_block(yours, hermetic, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    bare = hermetic / "shared" / "team-memory.git"
    head = subprocess.run(["git", "--git-dir", str(bare), "symbolic-ref", "HEAD"], capture_output=True, text=True)
    assert head.stdout.strip() == "refs/heads/master"  # git's default; the vault went there
    assert "pushed to origin/master" in first.stdout and "git clone" in first.stdout
    second = run_block(theirs, hermetic, tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "registered engram's merge driver" in second.stderr
    assert "pushed to origin/master" in second.stdout
    back = run_block("engram --vault ~/team-memory sync\nengram --vault ~/team-memory list", hermetic, tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert "Staging is read-only on Fridays" in back.stdout
    author = subprocess.run(["git", "-C", str(hermetic / "team-memory"), "log", "-1", "--format=%an %s"],
                            capture_output=True, text=True).stdout
    assert author.startswith("Dana Ortiz")
