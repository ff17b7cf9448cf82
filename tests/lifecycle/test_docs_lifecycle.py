"""docs/lifecycle.md lists every lifecycle command and tool, and nothing that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

import click

from engram.cli import cli
from engram.cli.lifecycle import COMMANDS
from engram.mcp import tools_lifecycle
from engram.mcp.catalog import _catalog_server
from engram.mcp.server import toolbox
from tests.conftest import ROOT

DOC = ROOT / "docs" / "lifecycle.md"


def lists() -> tuple[set[str], set[str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- lists:start", 1)[1].split("<!-- lists:end -->", 1)[0]
    commands_part, tools_part = block.split("MCP tools:", 1)
    return set(re.findall(r"`(engram [a-z-]+)`", commands_part)), set(re.findall(r"`([a-z_]+)`", tools_part))


def lifecycle_tools() -> set[str]:
    source = Path(tools_lifecycle.__file__).read_text(encoding="utf-8")
    return set(re.findall(r'@box\.tool\("([a-z_]+)"', source))


def test_every_lifecycle_command_is_listed_and_exists() -> None:
    documented, _ = lists()
    ours = {f"engram {c.name}" for c in COMMANDS}
    assert ours <= documented
    assert {c.removeprefix("engram ") for c in documented} <= set(cli.list_commands(click.Context(cli)))


def test_every_lifecycle_tool_is_listed_and_exists() -> None:
    _, documented = lists()
    assert lifecycle_tools() <= documented
    served = {info.name for info in toolbox(_catalog_server()).declared}
    assert documented <= served


def test_each_listed_command_has_a_section_in_the_cli_reference() -> None:
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented, _ = lists()
    for command in documented:
        assert f"### `{command}`" in reference, command
