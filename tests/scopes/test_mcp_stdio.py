"""Every scope and capture tool over MCP stdio (`engram serve` as a subprocess, the
official client), each with a happy path and a bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.git_helpers import git
from tests.mcp_helpers import error, ok
from tests.scopes.helpers import org_files, publish_org, team

pytestmark = pytest.mark.anyio

BODY = "In payments, change ledger.py and rerun test_ledger_totals (PAY-77) whenever rounding changes."
GENERAL = "Re-check stored totals whenever the rounding rule changes."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve(vault: Path, actor: str) -> StdioServerParameters:
    """The full profile: promotion, generalization, distill and needs are curator tools."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from engram.cli import main; main()", "--vault", str(vault), "serve", "--profile", "full"],
        env={**os.environ, "ENGRAM_ACTOR": actor},
    )


def board(tmp: Path) -> Path:
    repo = tmp / "board"
    git(tmp, "init", "--quiet", "--initial-branch=agentsync", str(repo))
    claim = {"task": "Cache the price lookups", "touches": ["src/prices.py"], "requires": [], "branch": "feat/cache",
             "status": "done", "updated_at": "2026-05-01T10:00:00+00:00", "note": "A 60 s TTL is enough.",
             "changed_files": [{"status": "M", "path": "src/prices.py"}]}
    (repo / "claims.json").write_text(json.dumps({"claims": {"ann": claim}}, indent=2))
    git(repo, "add", "claims.json")
    git(repo, "commit", "--quiet", "-m", "agentsync: ann -> done")
    return repo


async def test_every_scope_tool_over_stdio(tmp_path: Path) -> None:
    org = publish_org(tmp_path)
    (alice,) = team(tmp_path, "payments", org, "alice")
    (carol,) = team(tmp_path, "search", org, "carol")
    specific = alice.create("Totals drift when rounding changes", BODY, domain=["finance"]).id
    alice.close()
    carol.close()
    repo = board(tmp_path)
    # The session is alice's own agent: without roles an agent session is a writer, and
    # promoting or restating an item is its author's (or a curator's) to do.
    async with Client(serve(tmp_path / "payments-alice", "alice"), read_timeout_seconds=120) as c:
        status = ok(await c.call_tool("status", {}))
        wires = {w["name"]: w for w in status["scopes"]}
        assert wires["org"]["wired"] is False and wires["org"]["fix"] == "sync_scopes()"
        assert "not recalled here" in wires["org"]["cost"]
        assert wires["agentsync"]["wired"] is False and wires["agentsync"]["fix"].startswith("setup(agentsync_repo=")
        assert "never captured" in wires["agentsync"]["cost"]

        assert "does not exist" in error(await c.call_tool("setup", {"agentsync_repo": str(tmp_path / "nowhere")}))
        wired = ok(await c.call_tool("setup", {"agentsync_repo": str(repo)}))
        assert {w["name"]: w["wired"] for w in wired["scopes"]}["agentsync"] is True

        synced = ok(await c.call_tool("sync_scopes", {}))
        assert synced["branch"] == "main" and synced["settled"] == []

        made = ok(await c.call_tool("distill", {}))
        assert made["written"] == 1 and made["sources"][0]["status"] == "read"
        assert ok(await c.call_tool("distill", {}))["written"] == 0
        missing = error(await c.call_tool("distill", {"context_keeper": str(tmp_path / "gone" / ".context")}))
        assert "invalid_input" in missing and "does not exist" in missing

        need = ok(await c.call_tool("record_need", {"content": "No seed data for staging", "why": "tests start empty"}))
        assert need["outcome"] == "NEW"
        assert "empty" in error(await c.call_tool("record_need", {"content": "   "}))

        seen = ok(await c.call_tool("observe", {"text": "We chose integer cents over floats because floats lose "
                                                "cents when many amounts are summed."}))
        assert seen["decision"] == "proposed" and seen["proposal"].startswith("prop-")
        assert ok(await c.call_tool("observe", {"text": "Ran the tests again."}))["layer"] == "rules"
        assert "8,000 characters" in error(await c.call_tool("observe", {"text": "because " * 1200}))
        accepted = ok(await c.call_tool("engram_accept_proposal", {"id": seen["proposal"]}))
        assert accepted["status"] == "accepted"

        assert "not_found" in error(await c.call_tool("endorse", {"ref": "no-such-item"}))
        endorsed = ok(await c.call_tool("endorse", {"ref": specific, "note": GENERAL}))
        assert endorsed["endorsements"] == 1 and endorsed["scope"] == "team"

        review = ok(await c.call_tool("review_promotions", {}))
        (eligible,) = review["eligible"]
        assert eligible["id"] == specific and not eligible["ready"]
        assert "names a file ('ledger.py')" in eligible["tells"] and eligible["suggestion"] == GENERAL

        refused = error(await c.call_tool("promote", {"ref": specific, "to": "org"}))
        assert "not_general" in refused and "names its own project ('payments')" in refused
        assert "cites a ticket ('PAY-77')" in refused and GENERAL in refused
        assert "to must be team or org" in error(await c.call_tool("promote", {"ref": specific, "to": "mars"}))
        promoted = ok(await c.call_tool("promote", {"ref": specific, "to": "org", "org_content": GENERAL}))
        (step,) = promoted["promotions"]
        assert step["status"] == "promoted" and step["pushed"] is True

        assert "not_found" in error(await c.call_tool("generalize", {"ref": "no-such-item"}))
        again = ok(await c.call_tool("generalize", {"ref": specific, "org_content": GENERAL}))
        assert again["status"] == "already"
        still = error(await c.call_tool("generalize", {"ref": specific, "org_content": "Edit ledger.py again."}))
        assert "names a file ('ledger.py')" in still
    assert GENERAL in "".join(org_files(org).values())

    async with Client(serve(tmp_path / "search-carol", "carol-agent"), read_timeout_seconds=120) as c:
        ok(await c.call_tool("sync_scopes", {}))
        found = ok(await c.call_tool("engram_search", {"query": "rounding rule totals"}))
        assert [(h["id"], h["scope"]) for h in found["hits"]] == [(specific, "org")]
        read = ok(await c.call_tool("engram_get", {"ref": specific, "tier": "content"}))
        assert read["content"].strip() == GENERAL and read["visibility"] == "org"
        theirs = ok(await c.call_tool("endorse", {"ref": specific, "note": "true for search too"}))
        assert theirs["scope"] == "org" and theirs["endorsements"] == 2
