"""The learning and lifecycle tools through the SDK's in-memory client: happy paths,
bad input, and sampling (a client that answers, one that disagrees, one too slow, none)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CreateMessageRequestParams, CreateMessageResult, TextContent

from engram.mcp import build_server
from engram.vault import Vault
from tests.mcp_helpers import error, ok

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(vault: Vault, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(build_server(vault, profile="full", config_file=tmp_path / "mcp.yaml")) as c:
        yield c


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    return ok(await client.call_tool(tool, args))


async def test_learn_inserts_supersedes_and_reinforces(client: Client, vault: Vault) -> None:
    first = await call(client, "engram_learn", content="The staging database listens on port 5432.", domain="ops")
    assert first["action"] == "inserted" and first["relation"] == "novel" and first["decided_by"] == "offline"
    again = await call(client, "engram_learn", content="The staging database listens on port 5432.")
    assert again["action"] == "reinforced" and again["id"] == first["id"]
    # judge=False: the offline verdict acts (the default asks the agent first, tests/mcp/test_stdio.py).
    fixed = await call(client, "engram_learn", content="The staging database now listens on port 6432.", judge=False)
    assert fixed["action"] == "superseded" and fixed["target"] == first["id"]
    assert fixed["target_status"] == "superseded" and "port: 5432 → 6432" in " ".join(fixed["reasons"])
    old = vault.get(first["id"])
    assert old.superseded_by == fixed["id"] and old.deactivated_at and "5432" in old.content
    lineage = await call(client, "get_evolution_lineage", ref=first["id"])
    assert lineage["current"] == fixed["id"] and lineage["descendants"][0]["id"] == fixed["id"]
    dry = await call(client, "engram_learn", content="The staging database listens on port 7000.", dry_run=True)
    assert dry["action"] == "none" and dry["relation"] == "contradicts" and dry["target"] == fixed["id"]
    assert vault.get(fixed["id"]).status == "active"


async def test_learn_refuses_bad_input_and_changes_nothing(client: Client, vault: Vault) -> None:
    message = error(await client.call_tool("engram_learn", {"content": "   "}))
    assert message.startswith("invalid_input: the lesson is empty.")
    bad_kind = error(await client.call_tool("engram_learn", {"content": "x y z", "kind": "gossip"}))
    assert "gossip" in bad_kind
    assert vault.list() == []


async def test_create_near_match_is_a_learn_decision_never_an_update_instruction(client: Client, vault: Vault) -> None:
    template = "Status: accepted. Context: we need a store. Decision: use {db} for the {what}. Consequences: one more system."
    first = await call(client, "engram_create", title="ADR 12: use Postgres for billing",
                       content=template.format(db="Postgres", what="billing ledger"))
    second = await call(client, "engram_create", title="ADR 13: use Kafka for order events",
                        content=template.format(db="Kafka", what="order events"))
    assert "engram_update" not in second["message"]
    assert second["outcome"] in ("NEW", "DUPLICATE", "EXTENDED", "SUPERSEDED", "DISPUTED")
    assert second["outcome"] == "NEW" and second["id"] != first["id"]
    assert vault.get(first["id"]).content == template.format(db="Postgres", what="billing ledger") + "\n"


async def test_feedback_tools_explain_every_change(client: Client, vault: Vault) -> None:
    a = vault.create("Use pg_repack", "pg_repack rebuilds tables online.", domain=["ops"]).item
    b = vault.create("Table bloat", "Mass deletes leave bloat behind.", domain=["ops"]).item
    vault.link(a.id, "derives_from", b.id, weight=0.8)
    helped = await call(client, "engram_reinforce", ref=a.id, confidence=0.5, note="fixed the bloat")
    assert helped["pending"] is True and helped["changes"][0]["importanceDelta"] == pytest.approx(0.025)
    assert helped["changes"][1]["id"] == b.id and helped["changes"][1]["via"]
    failed = await call(client, "engram_report_failure", ref=a.id)
    assert failed["changes"][0]["importanceDelta"] < 0 and len(failed["changes"]) == 1
    loop = await call(client, "close_learning_loop", id=a.id, outcome="partial", effectiveness=0.8)
    assert loop["outcome"] == "helped" and loop["confidence"] == pytest.approx(0.4)
    bad = error(await client.call_tool("close_learning_loop", {"id": a.id, "outcome": "meh"}))
    assert "success, partial or failure" in bad
    missing = error(await client.call_tool("engram_reinforce", {"ref": "nope-nope"}))
    assert missing.startswith("not_found")
    vault.fold()
    assert vault.get(a.id).effective_retrievals == 2 and vault.get(a.id).failed_uses == 1


async def test_refute_entry_records_what_was_found_false(client: Client, vault: Vault) -> None:
    item = vault.create("Logs are kept 30 days", "Logs are kept 30 days.", domain=["ops"]).item
    up = await call(client, "upgrade_verification", ref=item.id, evidence="the config says so")
    assert up["verification_status"] == "plausible"
    up = await call(client, "upgrade_verification", ref=item.id, evidence="the runbook agrees")
    assert up["verification_status"] == "probable"
    done = await call(client, "refute_entry", id=item.id, evidence="the bucket deletes logs after 7 days")
    assert done["verification_status"] == "refuted" and "7 days" in done["message"]
    assert vault.get(item.id).status == "active" and vault.get(item.id).content == item.content
    stuck = error(await client.call_tool("upgrade_verification", {"ref": item.id, "evidence": "said so"}))
    assert stuck.startswith("invalid_input:") and "refuted" in stuck and "verify_entry" in stuck
    empty = error(await client.call_tool("refute_entry", {"id": item.id, "evidence": "  "}))
    assert "evidence is empty" in empty
    back = await call(client, "verify_entry", id=item.id, note="raised to 30 days again")
    assert back["verification_status"] == "verified"


async def test_verification_stale_report_and_resolve(client: Client, vault: Vault) -> None:
    item = vault.create("Cron runs in UTC", "Cron jobs run in UTC.", domain=["ops"]).item
    up = await call(client, "upgrade_verification", ref=item.id, evidence="checked crontab")
    assert up["verification_status"] == "plausible"
    checked = await call(client, "verify_entry", id=item.id, note="still true", valid_while="on the shared scheduler")
    assert checked["verification_status"] == "verified" and checked["last_verified_at"]
    assert vault.get(item.id).valid_while == "on the shared scheduler"
    report = await call(client, "stale_report", include_fresh=True)
    assert report["entries"][0]["id"] == item.id and report["entries"][0]["validWhile"] == "on the shared scheduler"
    empty = error(await client.call_tool("upgrade_verification", {"ref": item.id, "evidence": " "}))
    assert "evidence is empty" in empty
    other = vault.create("Cron runs in local time", "Cron jobs run in the local time zone.", domain=["ops"]).item
    done = await call(client, "contradiction_resolve", old=item.id, new=other.id, resolution="keep_old")
    assert done["kept"][0]["id"] == item.id and vault.get(other.id).status == "frozen"
    bad = error(await client.call_tool("contradiction_resolve", {"old": item.id, "new": other.id, "resolution": "both"}))
    assert "keep_new" in bad


async def test_proposals_through_maintenance_accept_and_dismiss(client: Client, vault: Vault) -> None:
    item = vault.create("Restart the worker after deploys", "Restart it.", domain=["ops"]).item
    for _ in range(3):
        await call(client, "engram_report_failure", ref=item.id)
    listed = await call(client, "engram_list_proposals")
    archive = next(p for p in listed["proposals"] if p["kind"] == "archive")
    assert archive["targets"] == [item.id] and (vault.root / archive["path"]).is_file()
    accepted = await call(client, "engram_accept_proposal", id=archive["id"], note="agreed")
    assert accepted["status"] == "accepted" and vault.get(item.id).status == "frozen"
    again = error(await client.call_tool("engram_accept_proposal", {"id": archive["id"]}))
    assert "accepted already" in again
    report = await call(client, "engram_maintain", stage="rem")
    assert report["stage"] == "rem" and report["folded"]["feedback"]["entries"] == 3
    unknown = error(await client.call_tool("engram_dismiss_proposal", {"id": "prop-0000000000000000"}))
    assert unknown.startswith("not_found")
    bad_stage = error(await client.call_tool("engram_maintain", {"stage": "nap"}))
    assert "light, deep or rem" in bad_stage


async def test_skills_are_found_for_a_task_and_learn_from_feedback(client: Client, vault: Vault) -> None:
    made = await call(client, "engram_create_skill", title="Rebuild a bloated Postgres table online",
                      steps=["check free disk", "run pg_repack on the table", "check the size"],
                      preconditions=["the table has a primary key"])
    assert made["steps"][1] == "run pg_repack on the table" and made["success_rate"] == 0.5
    await call(client, "close_learning_loop", id=made["id"], outcome="success")
    found = await call(client, "engram_find_skill", task="the orders table in Postgres is bloated, rebuild it")
    assert found["skills"][0]["id"] == made["id"] and found["skills"][0]["success_rate"] == pytest.approx(2 / 3, abs=1e-3)
    none = await call(client, "engram_find_skill", task="bake sourdough bread")
    assert none["skills"] == [] and "engram_create_skill" in none["message"]
    bad = error(await client.call_tool("engram_create_skill", {"title": "x", "steps": []}))
    assert "steps" in bad


# ---------------------------------------------------------------------- sampling


def _sampler(answer: str, delay: float = 0.0) -> Any:
    asked: list[str] = []

    async def callback(context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        block = params.messages[0].content
        asked.append(block.text if isinstance(block, TextContent) else "")
        if delay:
            await anyio.sleep(delay)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=answer), model="test-model")

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


async def _seed(vault: Vault) -> str:
    return vault.learn("The staging database listens on port 5432.").item.id  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sampling_confirms_a_contradiction(vault: Vault, tmp_path: Path, mode: str) -> None:
    old = await _seed(vault)
    sampler = _sampler("YES: the port changed")
    server = build_server(vault, profile="full", config_file=tmp_path / "mcp.yaml")
    async with Client(server, sampling_callback=sampler, mode=mode) as c:  # type: ignore[arg-type]
        out = await call(c, "engram_learn", content="The staging database listens on port 6432.")
    assert sampler.asked and "EXISTING" in sampler.asked[0]
    assert out["decided_by"] == "sampling" and out["action"] == "superseded" and out["target"] == old


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_model_that_disagrees_keeps_the_old_item(vault: Vault, tmp_path: Path, mode: str) -> None:
    old = await _seed(vault)
    server = build_server(vault, profile="full", config_file=tmp_path / "mcp.yaml")
    async with Client(server, sampling_callback=_sampler("NO: both can hold"), mode=mode) as c:  # type: ignore[arg-type]
        out = await call(c, "engram_learn", content="The staging database listens on port 6432.")
    assert out["decided_by"] == "sampling" and out["action"] == "linked" and out["relation"] == "novel"
    assert vault.get(old).status == "active"


async def test_a_slow_model_leaves_the_offline_verdict_in_charge(vault: Vault, tmp_path: Path) -> None:
    await _seed(vault)
    (vault.root / "engram.yaml").write_text("lifecycle:\n  samplingBudgetSeconds: 0.2\n", encoding="utf-8")
    reopened = Vault.open(vault.root)
    server = build_server(reopened, profile="full", config_file=tmp_path / "mcp.yaml")
    async with Client(server, sampling_callback=_sampler("YES", delay=2.0), mode="legacy") as c:
        out = await call(c, "engram_learn", content="The staging database listens on port 6432.", judge=False)
        asked = await call(c, "engram_learn", content="The staging database listens on port 7000.")
    reopened.close()
    assert out["decided_by"].startswith("offline (sampling timed out") and out["action"] == "superseded"
    assert asked["action"] == "needs_judgment"  # no answer in time: the agent is asked in the result instead


async def test_without_sampling_the_answer_says_offline_decided(client: Client, vault: Vault) -> None:
    await _seed(vault)
    out = await call(client, "engram_learn", content="The staging database listens on port 6432.", judge=False)
    assert out["decided_by"] == "offline (the client cannot sample)" and out["action"] == "superseded"
    plain = await call(client, "engram_learn", content="Design reviews happen on Thursdays.")
    assert plain["decided_by"] == "offline"


async def test_skill_invoke_expands_a_composed_skill_and_records_the_outcome(client: Client, vault: Vault) -> None:
    check = await call(client, "engram_create_skill", title="Check the table", steps=["check free disk"], domain="ops")
    repack = await call(client, "engram_create_skill", title="Repack the table", steps=["run pg_repack"], domain="ops")
    both = await call(client, "engram_create_skill", title="Rebuild a bloated table", steps=["vacuum analyze"],
                      components=[check["id"], repack["id"]], domain="ops")
    assert both["composed_of"] == [check["id"], repack["id"]]
    run = await call(client, "skill_invoke", id=both["id"])
    assert [s["step"] for s in run["steps"]] == ["check free disk", "run pg_repack", "vacuum analyze"]
    assert [s["skill"] for s in run["steps"]] == [check["id"], repack["id"], both["id"]]
    assert run.get("outcome") is None and "outcome" in run["message"]
    done = await call(client, "skill_invoke", id=both["id"], outcome="success", note="took 4 minutes")
    assert done["success_rate"] == pytest.approx(2 / 3, abs=1e-4) and done["successes"] == 1
    vault.update(check["id"], {"composedOf": [both["id"]], "steps": [f"skill:{both['id']}"]})
    cycle = error(await client.call_tool("skill_invoke", {"id": both["id"]}))
    assert cycle.startswith("invalid_input:") and "cycle" in cycle and f"{both['id']} → {check['id']} → {both['id']}" in cycle
    bad = error(await client.call_tool("skill_invoke", {"id": repack["id"], "outcome": "helped"}))
    assert "success" in bad
