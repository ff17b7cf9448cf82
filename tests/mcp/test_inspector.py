"""The MCP Inspector's one-shot CLI (a third-party client, Node) against `engram serve` on stdio.

The Inspector starts the server itself with a minimal environment, so the hermetic
variables (who writes, where git reads its config) are handed over with ``-e``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from engram.vault import Vault
from tests.mcp_helpers import INSPECTOR, engram_command, node_env, node_tool

PASSED_ON = ("ENGRAM_ACTOR", "ENGRAM_FSYNC", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "XDG_CONFIG_HOME", "HOME")


def inspect(vault: Path, *method: str, serve: tuple[str, ...] = ()) -> dict[str, Any]:
    command = [*node_tool(INSPECTOR), "--cli"]
    for key in PASSED_ON:
        command += ["-e", f"{key}={os.environ[key]}"]
    command += [*engram_command("--vault", str(vault), "serve", *serve), *method]
    proc = subprocess.run(
        command, env=node_env(dict(os.environ)), capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def answer(result: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer: its one text block's JSON."""
    assert result["isError"] is False and len(result["content"]) == 1, result
    parsed: dict[str, Any] = json.loads(result["content"][0]["text"])
    return parsed


def test_inspector_lists_every_tool_with_annotations_and_input_schemas(vault: Vault) -> None:
    tools = {t["name"]: t for t in inspect(vault.root, "--method", "tools/list")["tools"]}
    assert {"status", "setup", "engram_create", "engram_get", "engram_update", "engram_list"} <= set(tools)
    create = tools["engram_create"]
    assert create["annotations"]["readOnlyHint"] is False
    assert create["inputSchema"]["required"] == ["title"]
    assert not any("outputSchema" in t for t in tools.values())  # structured output is off by default
    assert tools["engram_get"]["annotations"]["readOnlyHint"] is True
    structured = {t["name"]: t for t in inspect(vault.root, "--method", "tools/list", serve=("--structured-output",))["tools"]}
    assert set(structured) == set(tools)
    outcome = structured["engram_create"]["outputSchema"]["properties"]["outcome"]
    assert outcome["enum"] == ["NEW", "DUPLICATE", "EXTENDED", "SUPERSEDED", "DISPUTED"]


def test_inspector_calls_tools_with_tool_args(vault: Vault) -> None:
    made = inspect(
        vault.root,
        "--method", "tools/call", "--tool-name", "engram_create",
        "--tool-arg", "title=Written by the Inspector",
        "--tool-arg", "domain=ops/tools",
        "--tool-arg", "importance=0.7",
        "--tool-arg", 'tags=["inspector", "cli"]',
    )
    assert "structuredContent" not in made and answer(made)["outcome"] == "NEW"
    item = vault.get(answer(made)["id"])
    assert (item.title, item.importance, item.tags, item.created_by) == (
        "Written by the Inspector", 0.7, ("inspector", "cli"), "tester"
    )
    got = inspect(
        vault.root, "--method", "tools/call", "--tool-name", "engram_get",
        "--tool-arg", f"ref={item.id[:10]}", "--tool-arg", "tier=digest",
    )
    assert answer(got)["tags"] == ["inspector", "cli"]


def test_inspector_validates_structured_output_when_it_is_on(vault: Vault) -> None:
    """The Inspector's client (the TypeScript SDK) checks structured content against the
    tool's output schema: with --structured-output every answer must pass it."""
    item = vault.create("Seen through the Inspector", "A body.", domain=["ops"], tags=["inspector"])
    for tool, args in (
        ("engram_search", ["--tool-arg", "query=inspector"]),
        ("engram_get", ["--tool-arg", f"ref={item.id}", "--tool-arg", "tier=content"]),
        ("status", []),
    ):
        result = inspect(vault.root, "--method", "tools/call", "--tool-name", tool, *args, serve=("--structured-output",))
        assert result["structuredContent"] == answer(result)
    assert answer(result)["configured"] is True


def test_inspector_sees_actionable_errors_and_resources(vault: Vault) -> None:
    missing = inspect(vault.root, "--method", "tools/call", "--tool-name", "engram_get", "--tool-arg", "ref=nope")
    assert missing["isError"] is True and "structuredContent" not in missing
    assert missing["content"][0]["text"].startswith("not_found: no item matches 'nope'.")
    vault.create("Visible as a resource", "body", domain=["docs"])
    overview = inspect(vault.root, "--method", "resources/read", "--uri", "engram://overview")
    assert "- docs: 1" in overview["contents"][0]["text"]
