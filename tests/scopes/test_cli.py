"""The scope and capture commands of the `engram` CLI, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from engram.cli import cli
from engram.mcp import build_server
from engram.vault import Vault
from tests.mcp_helpers import ok
from tests.scopes.helpers import publish_org, team


def runner(vault: Vault):  # type: ignore[no-untyped-def]
    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--vault", str(vault.root), *args], catch_exceptions=False)

    return invoke


def test_scope_commands_end_to_end(tmp_path: Path) -> None:
    org = publish_org(tmp_path)
    (alice,) = team(tmp_path, "payments", None, "alice")
    run = runner(alice)
    status = run("scopes", "status")
    assert status.exit_code == 0 and "✗ org" in status.output and "engram scopes setup --org" in status.output
    assert run("scopes", "setup", "--org", str(tmp_path / "missing")).exit_code == 2
    assert "engram.yaml updated" in run("scopes", "setup", "--org", str(org)).output
    assert "org: " in run("scopes", "sync").output

    ctx = tmp_path / "project" / ".context"
    ctx.mkdir(parents=True)
    (ctx / "decisions.json").write_text(json.dumps([
        {"id": "dec-001", "summary": "Keep money in integer cents", "why_chosen": "Floats lose cents.",
         "status": "active"}]))
    first = run("distill", "--context-keeper", str(ctx), "--json")
    assert json.loads(first.output)["written"] == 1
    assert "context-keeper: unchanged" in run("distill", "--context-keeper", str(ctx)).output

    need = run("need", "No seed data for staging", "--why", "tests start empty", "--tag", "staging")
    assert need.output.startswith("NEW ")
    item = alice.create("Scratch", "Keep retries idempotent with a client key.", domain=["eng"], visibility="private")
    assert "nothing is eligible yet" in run("promote").output
    assert "endorsed" in run("endorse", item.id, "--note", "held up twice").output
    promoted = json.loads(run("promote", "--json").output)
    assert [(p["id"], p["status"]) for p in promoted] == [(item.id, "promoted")]

    specific = alice.create("Ledger fix", "Edit ledger.py after PAY-5.", domain=["eng"])
    run("endorse", specific.id)
    refused = run("promote", specific.id, "--to", "org")
    assert refused.exit_code == 2 and "names a file ('ledger.py')" in refused.output
    listing = run("promotions")
    assert "eligible" in listing.output and specific.id in listing.output and "pending review:" in listing.output
    note = tmp_path / "general.md"
    note.write_text("Re-check derived totals after a correction.\n")
    done = run("promote", specific.id, "--to", "org", "--org-content-file", str(note))
    assert done.exit_code == 0 and "team → org: promoted" in done.output
    same = run("generalize", specific.id, "--org-content", "Re-check derived totals after a correction.")
    assert "org → org: already — the org body says exactly that." in same.output
    found = run("search", "derived totals correction")
    assert "(org)" in found.output
    alice.close()


@pytest.mark.anyio
async def test_the_cli_gives_cli_commands_as_fixes_and_mcp_gives_tool_calls(tmp_path: Path) -> None:
    """`engram scopes status` and `engram distill` are read by a person at a shell: their
    fixes are commands to type. The MCP status tool gives the tool calls instead."""
    org = publish_org(tmp_path)
    (alice,) = team(tmp_path, "payments", None, "alice")
    run = runner(alice)
    status = run("scopes", "status")
    assert status.exit_code == 0 and "setup(" not in status.output
    assert "fix:   engram scopes setup --org PATH_OR_URL" in status.output
    assert "fix:   engram scopes setup --agentsync PATH_OR_URL" in status.output
    assert "fix:   engram scopes setup --context-keeper PATH" in status.output
    as_json = {w["name"]: w["fix"] for w in json.loads(run("scopes", "status", "--json").output)}
    assert as_json["org"] == "engram scopes setup --org PATH_OR_URL"
    distilled = run("distill")
    assert "setup(" not in distilled.output and "engram scopes setup --agentsync PATH_OR_URL" in distilled.output
    run("scopes", "setup", "--org", str(org))
    assert "fix:   engram scopes sync\n" in run("scopes", "status").output  # not cloned here yet
    alice = Vault.open(alice.root, actor="alice")  # reads the engram.yaml the CLI changed
    async with Client(build_server(alice, config_file=tmp_path / "mcp.yaml", profile="full")) as client:
        wires = {w["name"]: w.get("fix") for w in ok(await client.call_tool("status", {}))["scopes"]}
        assert wires["org"] == "sync_scopes()"
        assert wires["agentsync"] == "setup(agentsync_repo='<clone holding the agentsync branch>')"
        assert wires["context-keeper"] == "setup(context_keeper='<project>/.context')"
        distilled_mcp = ok(await client.call_tool("distill", {}))
        assert distilled_mcp["sources"][0]["fix"].startswith("setup(agentsync_repo=")
