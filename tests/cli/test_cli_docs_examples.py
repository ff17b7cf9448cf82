"""docs/cli.md's examples run as written, and print what the docs show.

Every ``$ engram …`` line of a ``console`` block runs in a real shell with the installed
console script, one after another against one vault (``ENGRAM_VAULT``), after a prelude
that makes what the examples name (the items a link joins, the Obsidian folder an
import reads). The example id ``01J9K2V6…`` stands for the id the first ``add`` printed.
Printed output must match the documented lines, numbers aside. The two examples that
start long-running servers (an MCP client registration, the viewer) are left to the
server tests.

Also: every command's ``--help`` shows its examples, and the kinds the reference lists
for ``engram add --kind`` are the kinds engram knows.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from engram.cli import cli
from engram.store.model import ENGRAM_KINDS
from engram.vault import Vault
from tests.conftest import ROOT

DOC = ROOT / "docs" / "cli.md"
DOC_ID = "01J9K2V6Q8M3T5X7Z9B1C3D5F7"
SERVERS = ("claude mcp add", "viewer")


def examples(text: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown under it) for each ``$`` line of console blocks."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        lines = block.replace("\\\n", "").splitlines()
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:].strip(), []))
            elif out and line.strip():
                out[-1][1].append(line)
    return out


def pattern(line: str, real_id: str) -> re.Pattern[str]:
    """A documented output line as a regex: the example id is the real one, numbers and
    synapse ids may differ."""
    text = re.escape(re.sub(r"syn-[0-9a-f]{16}", "\1", line.replace(DOC_ID, "\0")))
    text = re.sub(r"\d[\d,]*", r"\\d[\\d,]*", text)
    text = text.replace("\1", "syn-[0-9a-f]{16}")
    return re.compile("^" + text.replace("\0", re.escape(real_id)) + "$")


def test_the_examples_are_found() -> None:
    found = examples(DOC.read_text(encoding="utf-8"))
    commands = [c for c, _ in found]
    assert len(commands) >= 8 and commands[0].startswith('engram add "Use pg_repack, not VACUUM FULL"')
    assert any("| engram add" in c for c in commands)


def test_the_cli_reference_examples_run_as_written(tmp_path: Path, hermetic: Path) -> None:
    exe = shutil.which("engram", path=str(Path(sys.executable).parent))
    assert exe, "the engram console script is not installed in this environment"
    root = tmp_path / "team-memory"
    Vault.init(root).close()
    env = dict(os.environ, ENGRAM_VAULT=str(root), PATH=f"{Path(exe).parent}{os.pathsep}{os.environ['PATH']}")
    # What the examples name: two items for `engram link`, an Obsidian folder for `engram import`.
    prelude = Vault.open(root)
    prelude.create("Copy a frozen dataclass", "Use dataclasses.replace.", domain=["engineering", "python"])
    prelude.create("Prefer immutable values", "Frozen dataclasses.", domain=["engineering"])
    prelude.close()
    work = hermetic / "Obsidian" / "Work"
    (work / ".obsidian").mkdir(parents=True)
    (work / "Standup.md").write_text("We meet at ten.\n", encoding="utf-8")
    (work / "Projects").mkdir()
    (work / "Projects" / "Atlas.md").write_text("See [[Standup]].\n", encoding="utf-8")
    (work / "Archive").mkdir()
    (work / "Archive" / "Atlas.md").write_text("See [[Standup]].\n", encoding="utf-8")  # a repeat
    (work / "diagram.png").write_bytes(b"\x89PNG\r\n")
    # A handbook whose notes hold personal data (`engram import --personal-data`).
    handbook = hermetic / "Downloads" / "handbook"
    handbook.mkdir(parents=True)
    (handbook / "Setup.md").write_text("# Setup\nInstall to /Users/yourusername/Library/app.\n", encoding="utf-8")
    (handbook / "Credits.md").write_text("# Credits\nFixed by jane.doe@gmail.com.\n", encoding="utf-8")
    (handbook / "Usage.md").write_text("# Usage\nRun it daily.\n", encoding="utf-8")
    # Notes of a person's, one holding an older engram's counters (`engram adopt --clean-residue`).
    (root / "Notes").mkdir()
    (root / "Notes" / "Deploying.md").write_text(
        "---\nid: 01J8ZQ3V5W6X7Y8Z9A0B1C2D3E\nreinforcementScore: 1.0\nretrievalCount: 3\n"
        "lastRetrievedAt: 2026-11-02T10:00:00.000Z\n---\n# Deploying\nAsk in the channel first.\n", encoding="utf-8")
    (root / "Notes" / "Runbook.md").write_text("---\nid: 01J8ZQ3V5W6X7Y8Z9A0B1C2D3F\n---\n# Runbook\nSteps.\n",
                                               encoding="utf-8")

    real_id = ""
    ran = 0
    for command, shown in examples(DOC.read_text(encoding="utf-8")):
        if any(command.startswith(s) or f"engram --vault ~/team-memory {s}" in command for s in SERVERS):
            continue
        if real_id:
            # The docs abbreviate the id; a ULID's leading characters are its timestamp, so
            # items made within a second share them: the test passes the whole id.
            command = command.replace(DOC_ID[:8], real_id)
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        # `search` exits 1 when nothing answers confidently; every example here should answer.
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        printed = proc.stdout.splitlines()
        if not real_id:
            real_id = printed[0]
            assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", real_id), printed
        for line in shown:
            assert any(pattern(line, real_id).match(p) for p in printed), (command, line, printed)
        ran += 1
    assert ran >= 6
    vault = Vault.open(root)
    item = vault.get(real_id)
    assert (item.version, item.tags, item.importance) == (2, ("postgres", "runbook"), 0.8)
    assert vault.get("Client timeouts").content == "ALB idle timeout is 60 s; clients use 55 s.\n"
    assert [s.kind for s in vault.synapses("Prefer immutable values")] == ["extends"]
    assert vault.get("Projects/Atlas.md").title == "Atlas"
    assert "[redacted: home folder path]" in vault.get("Setup.md").content
    assert (root / "Notes" / "Deploying.md").read_text(encoding="utf-8") == (
        "---\nid: 01J8ZQ3V5W6X7Y8Z9A0B1C2D3E\n---\n# Deploying\nAsk in the channel first.\n")
    vault.close()


def walk(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    ctx = click.Context(group)  # the root group loads its commands lazily: ask it, not .commands
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        out.append((*prefix, name))
        if isinstance(command, click.Group):
            out += walk(command, (*prefix, name))
    return out


def test_every_command_has_help_with_an_example() -> None:
    runner = CliRunner()
    for path in walk(cli):
        result = runner.invoke(cli, [*path, "--help"], prog_name="engram")
        assert result.exit_code == 0, path
        command = cli
        for name in path:
            assert isinstance(command, click.Group)
            command = command.get_command(click.Context(command), name)  # type: ignore[assignment]
        if isinstance(command, click.Group) or len(path) == 1:
            assert "Example" in result.stdout, f"`engram {' '.join(path)} --help` shows no example"
        assert f"Usage: engram {' '.join(path)}" in result.stdout


def test_the_reference_lists_every_kind_add_takes() -> None:
    section = DOC.read_text(encoding="utf-8").split("### `engram add`", 1)[1].split("\n### ", 1)[0]
    listed = re.search(r"`--kind` / `-k`: (.+)\.", section)
    assert listed is not None
    named = [k.strip().removesuffix(" (default)") for k in listed.group(1).split(",")]
    assert named == list(ENGRAM_KINDS)
