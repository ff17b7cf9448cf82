"""Every MCP tool through the SDK's in-memory client: happy paths and bad input.

Bad input — wrong types, unknown ids and kinds, oversize content, stale versions — must
come back as an error result whose message says what to do, never crash the server and
never change the vault.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference
from pydantic import BaseModel

from engram.errors import InvalidInput
from engram.mcp import build_server, models
from engram.mcp.profiles import PROFILES
from engram.mcp.server import toolbox
from engram.store.model import ENGRAM_KINDS
from engram.store.rules import MAX_CONTENT_BYTES
from engram.vault import Vault
from tests.adapter_helpers import merge_concurrent_edits
from tests.mcp_helpers import error, ok

pytestmark = pytest.mark.anyio

MINIMAL = {
    "status", "setup", "engram_search", "engram_create", "engram_get", "engram_update", "engram_list",
    "synapse_create", "engram_learn",
}
#: The default profile: the everyday loop (look, read, write, link, feedback, share)
#: and what its answers send an agent to (doctor, merge review, the org vault's sync).
STANDARD = MINIMAL | {
    "engram_list_paths", "engram_delete", "close_learning_loop", "engram_find_skill", "engram_create_skill",
    "engram_doctor",
    "engram_sync", "engram_conflicts", "engram_resolve_conflict", "sync_scopes", "observe",
}
#: Curation, scope promotion, trash, link maintenance, bulk and admin tools.
FULL_ONLY = {
    "engram_history", "engram_reinforce", "engram_report_failure", "get_evolution_lineage", "verify_entry",
    "upgrade_verification", "refute_entry", "skill_invoke", "contradiction_resolve", "stale_report", "engram_list_proposals",
    "engram_accept_proposal", "engram_dismiss_proposal", "synapse_get", "synapse_list",
    "synapse_delete", "engram_trash_list", "engram_restore", "endorse", "promote", "review_promotions",
    "generalize", "distill", "record_need", "engram_reindex", "engram_import", "engram_export", "engram_merge_stats",
    "engram_maintain", "engram_quarantine_list", "engram_quarantine_release", "engram_audit",
}
#: Tools that reach other repositories (git remotes, the org vault, capture sources).
OPEN_WORLD = {"engram_sync", "promote", "generalize", "sync_scopes", "distill"}
FULL = STANDARD | FULL_ONLY


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return tmp_path / "config" / "engram" / "mcp.yaml"


@pytest.fixture
async def client(vault: Vault, config_file: Path) -> AsyncIterator[Client]:
    async with Client(build_server(vault, profile="full", config_file=config_file)) as c:
        yield c


async def create(client: Client, title: str, **args: Any) -> dict[str, Any]:
    return ok(await client.call_tool("engram_create", {"title": title, **args}))


def vault_files(vault: Vault) -> dict[str, bytes]:
    return {
        p.relative_to(vault.root).as_posix(): p.read_bytes()
        for p in sorted(vault.root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and ".engram" not in p.parts
    }


# ---------------------------------------------------------------------- the catalog


async def test_profiles_nest_and_every_tool_is_described(vault: Vault, config_file: Path) -> None:
    expected = {"minimal": MINIMAL, "standard": STANDARD, "full": FULL}
    for profile in PROFILES:
        async with Client(build_server(vault, profile=profile, config_file=config_file)) as c:
            tools = (await c.list_tools()).tools
            assert {t.name for t in tools} == expected[profile]
            for tool in tools:
                assert tool.title and tool.annotations is not None
                assert tool.annotations.title == tool.title
                assert tool.annotations.read_only_hint is not None
                assert tool.annotations.open_world_hint is (tool.name in OPEN_WORLD)
                assert tool.description and "\n\n" in tool.description  # a summary, then when to use
                assert tool.output_schema is None  # structured output is off by default


def test_unknown_profile_is_refused(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="unknown tool profile 'huge'"):
        build_server(vault, profile="huge")


def test_profile_from_environment(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_MCP_PROFILE", "minimal")
    assert toolbox(build_server(vault)).profile == "minimal"


async def test_instructions_show_domains_with_counts_and_the_house_rule(vault: Vault, config_file: Path) -> None:
    for n in range(3):
        vault.create(f"Postgres fact {n}", f"body {n}", domain=["ops", "postgres"])
    vault.create("Python fact", "body", domain=["engineering", "python"])
    async with Client(build_server(vault, config_file=config_file)) as c:
        assert c.instructions is not None
        assert "ops (3), engineering (1)" in c.instructions
        assert "Look before you write" in c.instructions


# ---------------------------------------------------------------------- items


async def test_create_new_duplicate_and_near_duplicate(client: Client, vault: Vault) -> None:
    body = "VACUUM FULL locks the table for hours, and blocks every write to it meanwhile."
    first = await create(
        client, "Use pg_repack, not VACUUM FULL", content=body, domain="ops/postgres", kind="procedure",
        tags=["postgres"], summary="pg_repack avoids the lock",
    )
    assert first["outcome"] == "NEW" and first["version"] == 1
    assert first["path"] == "ops/postgres/use-pg_repack-not-vacuum-full.md"
    assert (vault.root / first["path"]).is_file()
    again = await create(client, "Use pg_repack, not VACUUM FULL", content=body, domain=["ops", "postgres"])
    assert again["outcome"] == "DUPLICATE" and again["id"] == first["id"] and again["version"] == 2
    near = await create(client, "Use pg_repack instead of VACUUM FULL", content=body, domain="ops/postgres")
    # A near match is a learn decision that never steers the agent into overwriting.
    assert near["outcome"] == "DUPLICATE" and near["id"] == first["id"] and near["similarity"] > 0.9
    assert "engram_update" not in near["message"] and "reinforced" in near["message"]
    assert len(vault.list()) == 1 and vault.get(first["id"]).content == body + "\n"
    forced = await create(client, "Use pg_repack instead of VACUUM FULL", content=body, domain="ops", dedupe=False)
    assert forced["outcome"] == "NEW" and len(vault.list()) == 2


async def test_get_by_id_prefix_path_and_title_at_each_tier(client: Client, vault: Vault) -> None:
    body = "Long body. " * 200
    made = await create(client, "Retry budgets", content=body, domain="eng", tags=["retry"])
    for ref in (made["id"], made["id"][:8], made["path"], "Retry budgets"):
        catalog = ok(await client.call_tool("engram_get", {"ref": ref, "tier": "catalog"}))
        assert catalog["id"] == made["id"] and catalog["tier"] == "catalog"
        assert "content" not in catalog and "tags" not in catalog
    digest = ok(await client.call_tool("engram_get", {"ref": made["id"], "tier": "digest"}))
    assert digest["tags"] == ["retry"] and digest["excerpt"].endswith("…") and "content" not in digest
    content = ok(await client.call_tool("engram_get", {"ref": made["id"], "tier": "content"}))
    assert content["content"] == body + "\n" and content["synapses"] == []  # every byte kept
    assert content["tokens"] > digest["tokens"] > catalog["tokens"]
    roomy = ok(await client.call_tool("engram_get", {"ref": made["id"], "tier": "auto", "token_budget": 100_000}))
    assert roomy["tier"] == "content"
    tight = ok(await client.call_tool("engram_get", {"ref": made["id"], "token_budget": 200}))
    assert tight["tier"] == "digest" and tight["tokens"] <= 200
    tiny = ok(await client.call_tool("engram_get", {"ref": made["id"], "token_budget": 50}))
    assert tiny["tier"] == "catalog"


async def test_update_with_expected_version_and_stale_version(client: Client, vault: Vault) -> None:
    made = await create(client, "Deploy window", content="Tuesdays.", domain="ops")
    updated = ok(await client.call_tool("engram_update", {
        "ref": made["id"], "expected_version": 1, "summary": "Deploy on Tuesdays", "tags": ["deploy"],
        "extra": {"team": "sre"},
    }))
    assert updated["version"] == 2 and updated["summary"] == "Deploy on Tuesdays"
    assert vault.get(made["id"]).extra["team"] == "sre"
    before = vault_files(vault)
    message = error(await client.call_tool("engram_update", {
        "ref": made["id"], "expected_version": 1, "content": "Wednesdays.",
    }))
    assert message.startswith(f"version_conflict: item {made['id']} is at version 2, not 1:")
    assert f"engram_get(ref='{made['id']}')" in message and "expected_version=2" in message
    assert vault_files(vault) == before
    moved = ok(await client.call_tool("engram_update", {"ref": made["id"], "title": "Deploy window moved", "domain": "ops/release"}))
    assert moved["path"] == "ops/release/deploy-window-moved.md" and moved["id"] == made["id"]


async def test_text_that_looks_like_json_stays_text(client: Client, vault: Vault) -> None:
    made = await create(client, "Config snippet", content="[1, 2]", domain="x")
    for body in ('{"retries": 3}', "null", "true", "[]"):
        ok(await client.call_tool("engram_update", {"ref": made["id"], "content": body, "summary": "[draft]"}))
        item = vault.get(made["id"])
        assert (item.content, item.summary) == (body + "\n", "[draft]")
    a = await create(client, "Other", domain="x")
    syn = ok(await client.call_tool("synapse_create", {"source": made["id"], "kind": "extends", "target": a["id"],
                                                       "evidence": '{"seen": true}'}))
    assert syn["evidence"][0]["description"] == '{"seen": true}'


async def test_update_refuses_nothing_and_builtins_in_extra(client: Client) -> None:
    made = await create(client, "Something", domain="x")
    assert error(await client.call_tool("engram_update", {"ref": made["id"]})).startswith(
        "invalid_input: nothing to change."
    )
    message = error(await client.call_tool("engram_update", {"ref": made["id"], "extra": {"version": 9}}))
    assert "'version' cannot be changed by an update." in message


async def test_delete_moves_to_trash_and_then_it_is_gone(client: Client, vault: Vault) -> None:
    made = await create(client, "Mistake", content="oops", domain="x")
    stale = error(await client.call_tool("engram_delete", {"ref": made["id"], "expected_version": 5}))
    assert "expected_version=1" in stale
    gone = ok(await client.call_tool("engram_delete", {"ref": made["id"], "expected_version": 1}))
    assert gone["id"] == made["id"] and "trash" in gone["message"]
    assert not (vault.root / made["path"]).exists()
    assert list((vault.root / ".engram" / "trash").rglob("mistake.md"))
    message = error(await client.call_tool("engram_get", {"ref": made["id"]}))
    assert message.startswith(f"not_found: no item matches '{made['id']}'.")
    assert "engram_search or engram_list" in message


async def test_trash_list_and_restore(client: Client, vault: Vault) -> None:
    a = await create(client, "Keep me", content="body", domain="x")
    b = await create(client, "Linked", content="other", domain="x")
    ok(await client.call_tool("synapse_create", {"source": a["id"], "kind": "extends", "target": b["id"]}))
    ok(await client.call_tool("engram_delete", {"ref": a["id"], "expected_version": 1}))
    listed = ok(await client.call_tool("engram_trash_list", {}))
    assert [(e["id"], e["title"], e["synapses"]) for e in listed["items"]] == [(a["id"], "Keep me", 1)]
    back = ok(await client.call_tool("engram_restore", {"ref": a["id"][:8]}))
    assert back["path"] == a["path"] and len(back["synapses"]) == 1 and back["left"] == []
    assert vault.get(a["id"]).title == "Keep me" and len(vault.synapses(a["id"])) == 1
    assert "is active, not frozen or forgotten: nothing to restore" in error(await client.call_tool("engram_restore", {"ref": a["id"]}))
    assert ok(await client.call_tool("engram_trash_list", {}))["items"] == []


async def test_list_filters_and_pages(client: Client) -> None:
    for n in range(5):
        await create(client, f"Ops note {n}", content=f"distinct text {n} " * (n + 1), domain="ops/db", kind="fact")
    await create(client, "Eng note", content="other", domain="eng", kind="decision", tags=["arch"])
    page = ok(await client.call_tool("engram_list", {"domain": "ops", "limit": 3}))
    assert page["count"] == 3 and page["next_offset"] == 3
    assert {i["tier"] for i in page["items"]} == {"catalog"}
    rest = ok(await client.call_tool("engram_list", {"domain": "ops", "limit": 3, "offset": 3}))
    assert rest["count"] == 2 and "next_offset" not in rest
    decisions = ok(await client.call_tool("engram_list", {"kinds": ["decision"], "tags": ["arch"], "tier": "digest"}))
    assert [i["title"] for i in decisions["items"]] == ["Eng note"] and decisions["items"][0]["tags"] == ["arch"]


async def test_history(client: Client) -> None:
    made = await create(client, "Fact", content="a", domain="x")
    ok(await client.call_tool("engram_update", {"ref": made["id"], "content": "b"}))
    history = ok(await client.call_tool("engram_history", {"ref": made["id"]}))
    assert [e["action"] for e in history["entries"]] == ["create", "update"]
    assert history["entries"][1]["fields"] == ["content"] and history["entries"][1]["actor"] == "tester"


# ---------------------------------------------------------------------- recall


async def test_search_ranks_explains_expands_and_abstains(client: Client, vault: Vault) -> None:
    repack = await create(client, "Use pg_repack instead of VACUUM FULL", content="VACUUM FULL takes an exclusive lock.",
                          domain="ops/postgres", kind="procedure", tags=["postgres"])
    window = await create(client, "Maintenance window is Sunday night", content="Schedule table rewrites then.",
                          domain="ops", kind="decision")
    ok(await client.call_tool("synapse_create", {"source": repack["id"], "kind": "depends_on", "target": window["id"]}))
    found = ok(await client.call_tool("engram_search", {"query": "vacuum full lock", "explain": True}))
    assert found["status"] == "ok" and found["hits"][0]["id"] == repack["id"]
    top = found["hits"][0]
    assert "via" not in top and "vacuum" in top["explanation"]["matched_terms"]  # lexical is implied
    assert "status" not in top and "warnings" not in top and "domain" not in top  # implied or empty
    graph = [h for h in found["hits"] if h.get("via") == "graph"]
    assert [h["id"] for h in graph] == [window["id"]] and graph[0]["explanation"]["path"][0]["kind"] == "depends_on"
    # Both hits carry their bodies: the tier is implied and nothing is left to read.
    assert found["message"] == "2 hit(s), best first." and "tier" not in top
    lean = ok(await client.call_tool("engram_search", {
        "query": "vacuum", "tier": "catalog", "expand": False, "kinds": ["procedure"],
    }))
    assert [h["id"] for h in lean["hits"]] == [repack["id"]] and lean["hits"][0]["tier"] == "catalog"
    assert "explanation" not in lean["hits"][0] and "summary" not in lean["hits"][0]
    assert "engram_get(ref=id) reads one in full" in lean["message"]
    full = ok(await client.call_tool("engram_search", {"query": "sunday window", "tier": "content"}))
    assert full["hits"][0]["content"] == "Schedule table rewrites then.\n"
    nothing = ok(await client.call_tool("engram_search", {"query": "kubernetes ingress certificates"}))
    assert nothing["status"] == "no_confident_match" and nothing["hits"] == []
    assert "Do not assume" in nothing["message"]
    assert error(await client.call_tool("engram_search", {"query": "  ?! "})).startswith("invalid_input:")
    assert "as_of" in error(await client.call_tool("engram_search", {"query": "vacuum", "as_of": "yesterday"}))
    assert "tier" in error(await client.call_tool("engram_search", {"query": "vacuum", "tier": "all"}))


async def test_list_paths_shows_the_domain_tree(client: Client) -> None:
    for title, domain in [("a", "ops/postgres"), ("b", "ops/postgres"), ("c", "ops"), ("d", "eng/python/async")]:
        await create(client, f"Item {title}", content=f"body {title}", domain=domain)
    tree = ok(await client.call_tool("engram_list_paths", {}))
    assert tree["total"] == 4
    ops = tree["children"][0]
    assert (ops["name"], ops["count"], ops["total"]) == ("ops", 1, 3)
    assert ops["children"] == [{"name": "postgres", "path": "ops/postgres", "count": 2, "total": 2, "children": []}]
    eng = ok(await client.call_tool("engram_list_paths", {"domain": "eng", "depth": 1}))
    assert eng["children"] == [{"name": "python", "path": "eng/python", "count": 1, "total": 1, "children": []}]


async def test_import_reports_bad_records_and_skips_what_it_already_did(client: Client, vault: Vault) -> None:
    records = [
        {"title": "Imported fact one", "content": "alpha", "domain": "legacy/wiki", "kind": "fact"},
        {"title": "Imported fact two", "content": "beta", "team": "sre",
         "links": [{"kind": "depends_on", "to": "Imported fact one"}]},
    ]
    checked = ok(await client.call_tool("engram_import", {"records": records, "dry_run": True}))
    assert checked["records"] == 2 and [r["outcome"] for r in checked["results"]] == ["NEW", "NEW"]
    assert vault.list() == []
    done = ok(await client.call_tool("engram_import", {"records": records, "default_domain": "imported",
                                                        "origin": "wiki-export.json"}))
    assert (done["new"], done["duplicate"], done["links"]) == (2, 0, 1)
    second = vault.get(done["results"][1]["id"])
    assert second.domain == "imported" and second.extra["team"] == "sre"
    assert second.source["importer"] == "jsonl" and second.source["from"] == "wiki-export.json"
    before = vault_files(vault)
    again = ok(await client.call_tool("engram_import", {"records": records, "origin": "wiki-export.json"}))
    assert (again["new"], again["skipped"], again["links"]) == (0, 2, 0) and vault_files(vault) == before
    line = '{"title": "Imported fact one", "content": "alpha", "domain": "legacy/wiki", "kind": "fact"}\n'
    other = ok(await client.call_tool("engram_import", {"text": line}))
    assert other["duplicate"] == 1 and other["results"][0]["outcome"] == "DUPLICATE" and vault_files(vault) == before
    mixed = ok(await client.call_tool("engram_import", {"records": [
        {"title": "fine", "content": "new"}, {"content": "no title"}, {"title": "x", "kind": "rumor"}]}))
    assert (mixed["new"], mixed["bad"]) == (1, 2)
    bad = [(r["where"], r["message"]) for r in mixed["results"] if r["outcome"] == "BAD"]
    assert [where for where, _ in bad] == ["line 2", "line 3"]
    assert bad[0][1] == "has no title" and bad[1][1].startswith("unknown kind 'rumor'")
    assert "Fix the BAD records" in mixed["message"]
    assert "either records or text" in error(await client.call_tool("engram_import", {}))
    assert "not valid JSON" in error(await client.call_tool("engram_import", {"text": "[{oops"}))


async def test_import_holds_personal_data_by_name_and_one_argument_says_what_to_do(client: Client, vault: Vault) -> None:
    """The same choice `engram import --personal-data` offers (issue 28): each record that
    holds personal data is HELD with what was found, never dropped in silence; then
    private, redacted or as it is."""
    records = [
        {"title": "Credits", "content": "Fixed by Jane Doe <jane.doe@gmail.com>.", "domain": "handbook"},
        {"title": "Usage", "content": "Run it daily.", "domain": "handbook"},
    ]
    held = ok(await client.call_tool("engram_import", {"records": records}))
    assert (held["new"], held["held"]) == (1, 1)
    result = next(r for r in held["results"] if r["outcome"] == "HELD")
    assert result["where"] == "line 1" and "Email address" in result["message"]
    assert "personal_data='private'" in held["message"]
    assert [i.title for i in vault.list()] == ["Usage"]
    private = ok(await client.call_tool("engram_import", {"records": records[:1], "personal_data": "private"}))
    assert (private["new"], private["held"]) == (1, 0)
    item = vault.get(private["results"][0]["id"])
    assert item.visibility == "private" and (item.path or "").startswith("private/")
    assert item.content.strip() == records[0]["content"]
    redacted = ok(await client.call_tool("engram_import", {
        "records": [{**records[0], "title": "Credits, redacted"}], "personal_data": "redact"}))
    assert redacted["new"] == 1
    assert "gmail" not in vault.get(redacted["results"][0]["id"]).content
    assert "invalid_input" in error(await client.call_tool("engram_import", {"records": records, "personal_data": "drop"}))


# ---------------------------------------------------------------------- synapses


async def test_synapse_create_get_list_delete(client: Client, vault: Vault) -> None:
    a = await create(client, "Timeouts cause retries", content="a", domain="x")
    b = await create(client, "Retry storms", content="b", domain="x")
    syn = ok(await client.call_tool("synapse_create", {
        "source": a["id"], "kind": "causes", "target": "Retry storms", "evidence": "seen in the outage",
    }))
    assert syn["id"].startswith("syn-") and syn["source_title"] == "Timeouts cause retries"
    assert syn["evidence"][0]["description"] == "seen in the outage"
    again = ok(await client.call_tool("synapse_create", {"source": a["id"], "kind": "causes", "target": b["id"]}))
    assert again["id"] == syn["id"]
    assert ok(await client.call_tool("synapse_get", {"synapse_id": syn["id"]}))["target"] == b["id"]
    listed = ok(await client.call_tool("synapse_list", {"ref": b["id"], "direction": "in"}))
    assert [s["id"] for s in listed["synapses"]] == [syn["id"]]
    assert ok(await client.call_tool("synapse_list", {"ref": b["id"], "direction": "out"}))["count"] == 0
    item = ok(await client.call_tool("engram_get", {"ref": a["id"], "tier": "content"}))
    assert item["synapses"] == [{
        "id": syn["id"], "kind": "causes", "direction": "out", "other": b["id"],
        "other_title": "Retry storms", "weight": 0.5,
    }]
    removed = ok(await client.call_tool("synapse_delete", {"synapse_id": syn["id"]}))
    assert removed["id"] == syn["id"] and vault.synapses() == []
    ok(await client.call_tool("synapse_create", {"source": a["id"], "kind": "similar_to", "target": b["id"]}))
    ok(await client.call_tool("synapse_delete", {"source": b["id"], "kind": "similar_to", "target": a["id"]}))
    assert vault.synapses() == []


async def test_synapse_bad_input(client: Client, vault: Vault) -> None:
    a = await create(client, "A thing", domain="x")
    message = error(await client.call_tool("synapse_create", {"source": a["id"], "kind": "loves", "target": a["id"]}))
    assert message.startswith("unknown_kind: unknown synapse kind 'loves'. Use one of: extends, part_of")
    assert "cannot link to itself" in error(
        await client.call_tool("synapse_create", {"source": a["id"], "kind": "extends", "target": a["id"]})
    )
    assert "synapse_list(ref=" in error(await client.call_tool("synapse_get", {"synapse_id": "syn-0000000000000000"}))
    assert "name the synapse" in error(await client.call_tool("synapse_delete", {"source": a["id"]}))
    assert "not both" in error(await client.call_tool("synapse_delete", {"synapse_id": "syn-1", "kind": "extends"}))
    assert vault.synapses() == []


# ---------------------------------------------------------------------- maintenance


async def test_doctor_and_reindex(client: Client, vault: Vault) -> None:
    await create(client, "Healthy", content="fine", domain="x")
    (vault.root / "x" / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    report = ok(await client.call_tool("engram_doctor", {}))
    assert not report["ok"] and [p["code"] for p in report["problems"]] == ["unparseable"]
    assert ok(await client.call_tool("engram_reindex", {}))["errors"] == 1


async def test_sync_commits_and_pushes_to_a_remote(client: Client, vault: Vault, tmp_path: Path) -> None:
    await create(client, "Shared knowledge", content="for the team", domain="x")
    alone = ok(await client.call_tool("engram_sync", {}))
    assert alone["committed"] >= 1 and alone["pushed"] is False and "no remote configured" in alone["message"]
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    subprocess.run(["git", "-C", str(vault.root), "remote", "add", "origin", str(remote)], check=True)
    await create(client, "More shared knowledge", content="also for the team", domain="x")
    shared = ok(await client.call_tool("engram_sync", {"message": "from the agent"}))
    assert shared["pushed"] is True and shared["created_upstream"] is True and shared["remote"] == "origin"
    log = subprocess.run(["git", "--git-dir", str(remote), "log", "--format=%s", "main"],
                         capture_output=True, text=True, check=True).stdout
    assert "from the agent" in log
    nowhere = error(await client.call_tool("engram_sync", {"remote": "nowhere"}))
    assert nowhere.startswith("git_error: there is no remote named 'nowhere'.")


async def test_conflicts_review_and_merge_stats(client: Client, vault: Vault) -> None:
    assert ok(await client.call_tool("engram_merge_stats", {}))["merges"] == 0
    made = await create(client, "The answer", content="41", domain="x")
    merge_concurrent_edits(vault, made["id"])
    flagged = ok(await client.call_tool("engram_conflicts", {}))
    assert flagged["count"] == 1 and flagged["items"][0]["id"] == made["id"]
    assert flagged["items"][0]["conflict_blocks"] == 1
    refused = error(await client.call_tool("engram_resolve_conflict", {"ref": made["id"]}))
    assert refused.startswith("conflict: ") and "pass force=true" in refused
    current = ok(await client.call_tool("engram_get", {"ref": made["id"], "tier": "catalog"}))
    ok(await client.call_tool("engram_update", {"ref": made["id"], "content": "42", "expected_version": current["version"]}))
    resolved = ok(await client.call_tool("engram_resolve_conflict", {"ref": made["id"]}))
    assert resolved["version"] == current["version"] + 2
    assert ok(await client.call_tool("engram_conflicts", {}))["count"] == 0
    again = error(await client.call_tool("engram_resolve_conflict", {"ref": made["id"]}))
    assert "is not flagged for review" in again and "engram_conflicts()" in again
    stats = ok(await client.call_tool("engram_merge_stats", {"days": 30}))
    assert (stats["merges"], stats["kept"], stats["conflicts_kept"]) == (1, 1, 1)
    assert stats["resolve_rate"] == 1.0 and stats["by_via"] == {"driver": 1}


# ---------------------------------------------------------------------- bad input


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("engram_create", {"title": 5}, "invalid_input: engram_create got arguments it cannot use: title: input should be a valid string (got 5). Pass title=<string"),
    ("engram_create", {}, "invalid_input: engram_create got arguments it cannot use: title is required. Pass title=<string"),
    ("engram_create", {"title": "x", "importance": "high"}, "importance"),
    ("engram_create", {"title": "x", "importance": 7}, "invalid_input: importance must be from 0 to 1, not 7"),
    ("engram_create", {"title": "x", "kind": "rumor"}, "unknown_kind: unknown kind 'rumor'. Use one of: "
     + ", ".join(ENGRAM_KINDS)),
    ("engram_create", {"title": "x", "visibility": "public"}, "visibility 'public' is not one of"),
    ("engram_create", {"title": "two\nlines"}, "invalid_input: title must be one line."),
    ("engram_create", {"title": "x", "domain": "../etc"}, "invalid_input"),
    ("engram_create", {"title": "x", "content": "a" * (MAX_CONTENT_BYTES + 1)},
     f"invalid_input: content is {MAX_CONTENT_BYTES + 1:,} bytes; the limit is {MAX_CONTENT_BYTES:,}."),
    ("engram_create", {"title": "x", "content": "nul\x00byte"}, "content contains a NUL character"),
    # NUL (and lone surrogates) are refused in every text an item stores.
    ("engram_create", {"title": "nul\x00title"}, "invalid_input: title contains a NUL character."),
    ("engram_create", {"title": "x", "summary": "s\x00"}, "invalid_input: summary contains a NUL character."),
    ("engram_create", {"title": "x", "tags": ["ok", "t\x00"]}, "invalid_input: tag contains a NUL character."),
    ("engram_create", {"title": "x", "extra": {"note": "a\x00b"}}, "extra value for 'note' contains a NUL"),
    ("engram_create", {"title": "x", "extra": {"deep": {"k\x00": ["v"]}}}, "extra value for 'deep' contains a NUL"),
    ("engram_create", {"title": "lone \ud800 surrogate"}, "title is not valid Unicode text (a lone surrogate)"),
    ("engram_update", {"ref": "Keep me", "title": "t\x00"}, "invalid_input: title contains a NUL character."),
    ("engram_update", {"ref": "Keep me", "summary": "\x00"}, "invalid_input: summary contains a NUL character."),
    ("synapse_create", {"source": "Keep me", "kind": "extends", "target": "Keep me", "evidence": "e\x00"},
     "evidence contains a NUL character"),
    ("engram_create", {"title": "x", "tags": [1, 2]}, "tags.0: input should be a valid string"),
    ("engram_create", {"title": "x", "extra": {"id": "mine"}}, "'id' is a built-in field"),
    ("engram_get", {"ref": "01ZZZZZZZZZZZZZZZZZZZZZZZZ"}, "not_found: no item matches"),
    ("engram_get", {"ref": ""}, "invalid_input: the item reference is empty."),
    ("engram_get", {"ref": "../../etc/passwd"}, "invalid_input"),
    ("engram_get", {"ref": "x", "tier": "everything"}, "tier: input should be 'catalog', 'digest', 'content' or 'auto'"),
    ("engram_get", {"ref": "x", "token_budget": -1}, "greater than or equal to 50"),
    ("engram_update", {"ref": "nope", "summary": "s"}, "not_found"),
    ("engram_update", {"ref": "nope", "expected_version": "one"}, "valid integer"),
    ("engram_delete", {"ref": "nope"}, "not_found"),
    ("engram_list", {"kinds": ["rumor"]}, "unknown_kind"),
    ("engram_list", {"limit": 0}, "greater than or equal to 1"),
    ("engram_list", {"statuses": ["lost"]}, "status 'lost' is not one of"),
    ("synapse_list", {"ref": "nope"}, "not_found"),
    ("synapse_list", {"direction": "sideways"}, "direction: input should be 'both', 'out' or 'in'"),
    ("synapse_create", {"source": "nope", "kind": "extends", "target": "nope2"}, "not_found"),
    ("engram_history", {"ref": "nope"}, "not_found"),
    ("engram_doctor", {"fix": "maybe"}, "valid boolean"),
    ("no_such_tool", {}, "Unknown tool"),
]


async def test_bad_input_never_crashes_or_changes_the_vault(client: Client, vault: Vault) -> None:
    await create(client, "Keep me", content="intact", domain="x")
    before = vault_files(vault)
    for name, args, expected in BAD_CALLS:
        message = error(await client.call_tool(name, args))
        assert expected in message, (name, args, message)
    assert vault_files(vault) == before
    assert ok(await client.call_tool("engram_list", {}))["count"] == 1


async def test_an_unexpected_failure_is_reported_and_the_server_keeps_serving(
    client: Client, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(vault, "list", boom)
    message = error(await client.call_tool("engram_list", {}))
    assert message.startswith("internal_error: engram_list failed with RuntimeError: disk on fire.")
    monkeypatch.undo()
    assert ok(await client.call_tool("engram_list", {}))["count"] == 0


# ---------------------------------------------------------------------- resources and prompts


async def test_item_resource_overview_and_recall_prompt(client: Client, vault: Vault) -> None:
    made = await create(client, "Cache keys include the tenant", content="Always.", domain="eng/cache")
    result = await client.read_resource(f"engram://{made['id']}")
    framed = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    text = framed["markdown"]
    assert text == (vault.root / made["path"]).read_text(encoding="utf-8")
    assert text.startswith("---\nid: " + made["id"]) and framed["frame"].startswith("untrusted-data:")
    assert result.contents[0].mime_type == "application/json"
    overview = (await client.read_resource("engram://overview")).contents[0].text  # type: ignore[union-attr]
    assert "- eng: 1" in overview and "Cache keys include the tenant" in overview
    with pytest.raises(MCPError, match="no item matches"):
        await client.read_resource("engram://01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["engram://{id}"]
    prompt = await client.get_prompt("recall", {"topic": "tenant cache keys"})
    said = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "tenant cache keys" in said and "eng (1)" in said and "engram_search" in said
    hit = {"id": made["id"], "title": "Cache keys include the tenant", "kind": "observation", "domain": "eng/cache",
           "summary": "Always."}
    assert json.dumps(hit, ensure_ascii=False) in said.splitlines()
    unknown = await client.get_prompt("recall", {"topic": "quantum chromodynamics"})
    assert "no confident match" in unknown.messages[0].content.text  # type: ignore[union-attr]


# ---------------------------------------------------------------------- many sessions


async def test_a_second_session_sees_the_first_sessions_writes(vault: Vault, config_file: Path) -> None:
    other = Vault.open(vault.root)
    async with (
        Client(build_server(vault, config_file=config_file)) as one,
        Client(build_server(other, config_file=config_file)) as two,
    ):
        made = await create(one, "Seen by all", content="shared", domain="x")
        assert ok(await two.call_tool("engram_get", {"ref": made["id"]}))["title"] == "Seen by all"
        ok(await two.call_tool("engram_update", {"ref": made["id"], "summary": "edited by two"}))
        assert ok(await one.call_tool("engram_get", {"ref": made["id"], "tier": "digest"}))["version"] == 2
    other.close()


async def test_completion_of_item_ids_and_recall_topics(client: Client, vault: Vault) -> None:
    made = await create(client, "Kafka consumer lag", content="watch it", domain="streaming/kafka")
    template = ResourceTemplateReference(type="ref/resource", uri="engram://{id}")
    by_id = await client.complete(template, {"name": "id", "value": made["id"][:5].lower()})
    assert by_id.completion.values == [made["id"]]
    by_title = await client.complete(template, {"name": "id", "value": "kafka con"})
    assert by_title.completion.values == [made["id"]]
    topic = await client.complete(PromptReference(type="ref/prompt", name="recall"), {"name": "topic", "value": "str"})
    assert topic.completion.values == ["streaming"]
    other = await client.complete(PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""})
    assert other.completion.values == []


def test_every_nullable_result_field_has_a_default() -> None:
    # Results are sent without None fields; a required nullable field would then fail validation.
    for name, model in vars(models).items():
        if isinstance(model, type) and issubclass(model, BaseModel) and model.__module__ == models.__name__:
            for field, info in model.model_fields.items():
                assert not (info.is_required() and "None" in str(info.annotation)), f"{name}.{field}"


# ---------------------------------------------------------------------- first contact


async def test_before_setup_every_tool_answers_with_guidance(
    tmp_path: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "not-yet"
    server = build_server(missing, profile="full", config_file=config_file)
    async with Client(server) as c:
        status = ok(await c.call_tool("status", {}))
        assert status["configured"] is False and "vault" not in status
        gap = status["gaps"][0]
        assert gap["setting"] == "vault" and str(missing) in gap["problem"]
        assert gap["fix"] == f"setup(vault_path='{missing}')" and "refuses" in gap["cost"]
        tools = (await c.list_tools()).tools
        for tool in tools:
            if tool.name in ("status", "setup"):
                continue
            props = tool.input_schema.get("properties", {})
            required = {
                name: ["x"] if props.get(name, {}).get("type") == "array" else "x"
                for name in tool.input_schema.get("required", [])
            }
            message = error(await c.call_tool(tool.name, required))
            assert message.startswith(f"setup_required: {tool.name} needs an engram vault"), message
            assert f"Next: Call setup(vault_path='{missing}')" in message
            assert json.loads(message.split("\n\n", 1)[1])["configured"] is False
        with pytest.raises(MCPError, match="no engram vault is configured"):
            await c.read_resource("engram://overview")
        done = ok(await c.call_tool("setup", {"vault_path": str(missing)}))
        assert done["created"] and done["vault"] == str(missing) and done["git_repository"] is True
        assert ok(await c.call_tool("engram_list", {}))["count"] == 0
    assert not config_file.read_text(encoding="utf-8").count("token")
    async with Client(server) as later:  # a new session sees the new instructions
        assert later.instructions is not None and str(missing) in later.instructions


async def test_setup_refuses_unsafe_or_missing_folders(tmp_path: Path, config_file: Path, hermetic: Path) -> None:
    async with Client(build_server(tmp_path / "none", config_file=config_file)) as c:
        assert "too broad for a vault" in error(await c.call_tool("setup", {"vault_path": "~"}))
        assert "too broad for a vault" in error(await c.call_tool("setup", {"vault_path": "/"}))
        absent = error(await c.call_tool("setup", {"vault_path": str(tmp_path / "absent"), "create": False}))
        assert absent.startswith("vault_not_found: there is no vault at")
        assert "agent_id must be 1-100" in error(await c.call_tool("setup", {"vault_path": str(tmp_path / "v"), "agent_id": "a\nb"}))
        # A relative path would resolve against the server's working folder, unseen by the agent.
        for relative in ("../../etc", "team-memory", "./v", "~no-such-user-here/v"):
            refused = error(await c.call_tool("setup", {"vault_path": relative}))
            assert refused == (
                f"invalid_input: vault_path {relative!r} is not an absolute path. Pass an absolute "
                "path or one under ~, e.g. setup(vault_path='~/team-memory')."
            ), refused
        assert not (tmp_path / "absent").exists() and not (tmp_path / "v").exists()
        assert "No vault_path given" in ok(await c.call_tool("setup", {}))["message"]
    assert not config_file.exists()


async def test_status_names_git_gaps_and_the_call_that_closes_them(vault: Vault, config_file: Path) -> None:
    subprocess.run(["git", "-C", str(vault.root), "config", "--local", "--remove-section", "merge.engram"], check=True)
    async with Client(build_server(vault, config_file=config_file)) as c:
        status = ok(await c.call_tool("status", {}))
        assert status["merge_driver"] is False
        (gap,) = status["gaps"]
        assert gap["setting"] == "merge_driver" and "git config" in gap["problem"]
        assert gap["fix"] == f"setup(vault_path={str(vault.root)!r})"
        assert status["next_step"].startswith(f"Optional: {gap['fix']}")
        ok(await c.call_tool("setup", {"vault_path": str(vault.root)}))
        healed = ok(await c.call_tool("status", {}))
        assert healed["merge_driver"] is True and healed["gaps"] == []
