"""`engram serve` as a real subprocess over stdio, driven by the official `mcp` client."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from engram.vault import Vault
from tests.mcp_helpers import error, ok

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve_params(*args: str, serve: tuple[str, ...] = (), cwd: Path | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from engram.cli import main; main()", *args, "serve", *serve],
        env=dict(os.environ),
        cwd=cwd,
    )


async def test_stdio_session_round_trip(vault: Vault) -> None:
    vault.create("Seeded before the session", "body", domain=["ops"])
    async with Client(serve_params("--vault", str(vault.root)), read_timeout_seconds=60) as client:
        assert client.instructions is not None and "ops (1)" in client.instructions
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"engram_create", "engram_get", "status", "setup"} <= names
        made = ok(await client.call_tool("engram_create", {"title": "Over stdio", "content": "yes", "domain": "x"}))
        got = ok(await client.call_tool("engram_get", {"ref": made["id"], "tier": "content"}))
        assert got["content"] == "yes\n" and got["created_by"] == "tester"
        assert "not_found" in error(await client.call_tool("engram_get", {"ref": "missing-item"}))
        text = (await client.read_resource(f"engram://{made['id']}")).contents[0].text  # type: ignore[union-attr]
        assert "title: Over stdio" in text
    assert vault.get(made["id"]).title == "Over stdio"


async def test_profile_flag(vault: Vault) -> None:
    async with Client(serve_params("--vault", str(vault.root), serve=("--profile", "minimal")), read_timeout_seconds=60) as c:
        assert "engram_delete" not in {t.name for t in (await c.list_tools()).tools}


async def test_structured_output_flag(vault: Vault) -> None:
    vault.create("Structured over stdio", "body", domain=["ops"])
    async with Client(serve_params("--vault", str(vault.root)), read_timeout_seconds=60) as c:
        assert all(t.output_schema is None for t in (await c.list_tools()).tools)
        plain = await c.call_tool("engram_search", {"query": "structured"})
        assert plain.structured_content is None and ok(plain)["hits"]
    params = serve_params("--vault", str(vault.root), serve=("--structured-output",))
    async with Client(params, read_timeout_seconds=60) as c:
        assert all(t.output_schema is not None for t in (await c.list_tools()).tools)
        both = await c.call_tool("engram_search", {"query": "structured"})  # validated by the client
        assert both.structured_content is not None and ok(both) == both.structured_content


async def test_first_contact_then_setup_without_restart(tmp_path: Path, hermetic: Path) -> None:
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    target = tmp_path / "team-memory"
    async with Client(serve_params(cwd=empty), read_timeout_seconds=60) as client:
        assert client.instructions is not None and "no vault is configured" in client.instructions
        status = ok(await client.call_tool("status", {}))
        assert status["configured"] is False and status["gaps"][0]["setting"] == "vault"
        guidance = error(await client.call_tool("engram_list", {}))
        assert guidance.startswith("setup_required: engram_list needs an engram vault")
        assert "setup(vault_path='~/team-memory')" in guidance
        done = ok(await client.call_tool("setup", {"vault_path": str(target), "agent_id": "agent-7"}))
        assert done["created"] is True and done["configured"] is True and done["agent_id"] == "agent-7"
        made = ok(await client.call_tool("engram_create", {"title": "First memory", "domain": "x"}))
        assert ok(await client.call_tool("engram_get", {"ref": made["id"], "tier": "content"}))["created_by"] == "agent-7"
    config = hermetic / ".config" / "engram" / "mcp.yaml"
    assert config.read_text(encoding="utf-8").splitlines()[1:] == [f"vault: {target}", "agentId: agent-7"]
    # The next session (no flags, another folder) finds the vault through the config file.
    async with Client(serve_params(cwd=empty), read_timeout_seconds=60) as client:
        status = ok(await client.call_tool("status", {}))
        assert status["vault"] == str(target) and status["vault_source"] == "the user config file"
        assert status["agent_id"] == "tester"  # ENGRAM_ACTOR still wins over the config file


async def test_lifecycle_tools_over_stdio(vault: Vault) -> None:
    """Every learning and lifecycle tool through `engram serve` and the official client,
    with a happy path and a refusal each."""
    async with Client(serve_params("--vault", str(vault.root), serve=("--profile", "full")), read_timeout_seconds=60) as c:
        first = ok(await c.call_tool("engram_learn", {"content": "The staging database listens on port 5432.", "domain": "ops"}))
        # A supersession is put to the agent (this client cannot sample): the judge handshake.
        lesson = {"content": "The staging database now listens on port 6432."}
        asked = ok(await c.call_tool("engram_learn", lesson))
        assert asked["action"] == "needs_judgment" and "id" not in asked and asked["relation"] == "contradicts"
        shown = asked["question"]["candidates"][0]
        assert shown["id"] == first["id"] and "5432" in shown["text"] and asked["frame"]
        assert "invalid_input" in error(await c.call_tool("engram_learn", {**lesson, "judgment": {"relation": "shrug"}}))
        assert "invalid_input" in error(await c.call_tool(
            "engram_learn", {**lesson, "judgment": {"relation": "contradicts", "target": first["id"]}}))  # no version
        fixed = ok(await c.call_tool("engram_learn", {**lesson, "judgment": {
            "relation": "contradicts", "target": first["id"], "version": shown["version"], "reason": "6432 replaced 5432"}}))
        assert fixed["action"] == "superseded" and fixed["target"] == first["id"] and fixed["decided_by"] == "judge"
        # The same judgment again: the item it names has changed since (it is superseded now).
        stale = error(await c.call_tool("engram_learn", {**lesson, "judgment": {
            "relation": "contradicts", "target": first["id"], "version": shown["version"]}}))
        assert "invalid_input" in stale or "version_conflict" in stale
        assert "invalid_input" in error(await c.call_tool("engram_learn", {"content": ""}))
        new = fixed["id"]
        assert ok(await c.call_tool("engram_reinforce", {"ref": new}))["changes"][0]["importanceDelta"] > 0
        assert ok(await c.call_tool("engram_report_failure", {"ref": new, "confidence": 0.2}))["outcome"] == "failed"
        assert ok(await c.call_tool("close_learning_loop", {"id": new, "outcome": "success"}))["outcome"] == "helped"
        assert "not_found" in error(await c.call_tool("engram_reinforce", {"ref": "missing-item"}))
        assert ok(await c.call_tool("get_evolution_lineage", {"ref": first["id"]}))["current"] == new
        assert "not_found" in error(await c.call_tool("get_evolution_lineage", {"ref": "missing-item"}))
        assert ok(await c.call_tool("upgrade_verification", {"ref": new, "evidence": "saw it"}))["verification_status"] == "plausible"
        assert ok(await c.call_tool("verify_entry", {"id": new}))["verification_status"] == "verified"
        assert "invalid_input" in error(await c.call_tool("upgrade_verification", {"ref": new, "evidence": ""}))
        assert ok(await c.call_tool("stale_report", {"include_fresh": True}))["checked"] >= 1
        other = ok(await c.call_tool("engram_create", {"title": "Staging DB port", "content": "It is 7000.", "domain": "ops"}))
        done = ok(await c.call_tool("contradiction_resolve", {"old": new, "new": other["id"], "resolution": "archive"}))
        assert {r["id"] for r in done["retired"]} == {new, other["id"]}
        assert "invalid_input" in error(await c.call_tool("contradiction_resolve", {"old": new, "new": new, "resolution": "merge"}))
        assert ok(await c.call_tool("engram_maintain", {"stage": "rem"}))["stage"] == "rem"
        assert "invalid_input" in error(await c.call_tool("engram_maintain", {"stage": "nap"}))
        flaky = ok(await c.call_tool("engram_create", {"title": "Flaky restart step", "content": "restart by hand"}))
        for _ in range(3):
            await c.call_tool("engram_report_failure", {"ref": flaky["id"]})
        props = ok(await c.call_tool("engram_list_proposals", {"kind": "archive"}))["proposals"]
        assert props and props[0]["targets"] == [flaky["id"]]
        assert ok(await c.call_tool("engram_dismiss_proposal", {"id": props[0]["id"], "note": "keep"}))["status"] == "dismissed"
        assert "invalid_input" in error(await c.call_tool("engram_accept_proposal", {"id": props[0]["id"]}))
        assert "not_found" in error(await c.call_tool("engram_accept_proposal", {"id": "prop-00000000"}))
        skill = ok(await c.call_tool("engram_create_skill", {"title": "Rebuild a bloated table", "steps": ["check disk", "run pg_repack"]}))
        assert ok(await c.call_tool("engram_find_skill", {"task": "rebuild the bloated orders table"}))["skills"][0]["id"] == skill["id"]
        assert error(await c.call_tool("engram_find_skill", {"task": "x", "limit": 0}))
        history = ok(await c.call_tool("engram_history", {"ref": new}))
        assert history["entries"][0]["action"] == "create"


def test_every_line_gets_an_answer_even_one_that_is_not_a_message(vault: Vault) -> None:
    """Raw lines a client library would never send: each gets a JSON-RPC error, and the
    server keeps serving (the SDK alone drops them and the client waits forever)."""
    import json
    import subprocess

    params = serve_params("--vault", str(vault.root))
    proc = subprocess.Popen(
        [params.command, *params.args], env=params.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [
        json.dumps(init),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"\\ud800"}}',
        "[" * 20_000 + "]" * 20_000,
        "not json at all",
        '{"jsonrpc":"2.0","id":"q","params":{}}',
        '{"jsonrpc":"2.0","id":9,"method":"tools/list"}',
    ]
    import threading

    watchdog = threading.Timer(60, proc.kill)  # a missing answer fails the test, never hangs it
    watchdog.start()
    answers: list[dict[str, Any]] = []
    try:
        proc.stdin.write(("\n".join(lines) + "\n").encode())
        proc.stdin.flush()
        while not answers or answers[-1].get("id") != 9:
            line = proc.stdout.readline()
            assert line, f"the server stopped answering after {answers}"
            answers.append(json.loads(line))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if not proc.stdin.closed:
            proc.stdin.close()
    by_id = {a.get("id"): a for a in answers if a.get("id") not in (None, 1)}
    nulls = [a for a in answers if a.get("id") is None]
    assert by_id[7]["error"] == {
        "code": -32700,
        "message": "Parse error: a string holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text.",
    }
    assert by_id["q"]["error"]["code"] == -32600 and "method" in by_id["q"]["error"]["message"]
    assert [a["error"]["code"] for a in nulls] == [-32700, -32700]
    assert "recursion limit exceeded" in nulls[0]["error"]["message"]
    assert "tools" in by_id[9]["result"]  # still serving after all that
