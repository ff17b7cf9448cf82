"""Tool annotations tell a client what a call may do; these tests hold each hint to it.

- ``readOnlyHint`` — the call changes no file: not the vault, not its local state (audit
  log, trash, proposals, merge records), not git. Only the derived index and the
  retrieval journal may move (searches journal what they returned, by design).
- ``idempotentHint`` — a second identical call changes nothing the first did not.
- ``destructiveHint: false`` — the call only adds: no file disappears and no item's body
  loses a byte (it may grow).
- ``openWorldHint: false`` — the call never reaches another repository: a configured
  remote's refs do not move.

And the profiles expose what docs/mcp.md says they do, chosen in the documented order.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import Tool

from engram.errors import InvalidInput
from engram.mcp import build_server
from engram.mcp.profiles import PROFILES
from engram.mcp.server import toolbox
from engram.vault import Vault
from tests.adapter_helpers import Seeded, changed, git_state, seed, tree
from tests.conftest import ROOT
from tests.git_helpers import bare_origin, git
from tests.mcp_helpers import error, ok

pytestmark = pytest.mark.anyio

Args = Callable[[Seeded], dict[str, Any]]

#: One valid call of every read-only tool, against the seeded vault.
READ_CALLS: dict[str, Args] = {
    "status": lambda s: {},
    "engram_search": lambda s: {"query": "vacuum full lock", "explain": True},
    "engram_list_paths": lambda s: {},
    "engram_get": lambda s: {"ref": s.repack, "tier": "content"},
    "engram_list": lambda s: {"include_hidden": True},
    "engram_history": lambda s: {"ref": s.repack},
    "get_evolution_lineage": lambda s: {"ref": s.repack},
    "stale_report": lambda s: {"include_fresh": True},
    "engram_list_proposals": lambda s: {},
    "engram_find_skill": lambda s: {"task": "rebuild a bloated table"},
    "synapse_get": lambda s: {"synapse_id": s.synapse},
    "synapse_list": lambda s: {"ref": s.repack},
    "engram_conflicts": lambda s: {},
    "engram_merge_stats": lambda s: {"days": 30},
    "engram_trash_list": lambda s: {},
    "review_promotions": lambda s: {},
    "engram_quarantine_list": lambda s: {},
    "engram_audit": lambda s: {"refused": True, "since": "1d"},
}

#: Idempotent tools that write: the first call may change files, the second must not.
IDEMPOTENT_CALLS: dict[str, Args] = {
    "synapse_create": lambda s: {"source": s.window, "kind": "extends", "target": s.flaky, "weight": 0.7},
    "synapse_delete": lambda s: {"synapse_id": s.synapse},
    "engram_delete": lambda s: {"ref": s.window},
    "engram_restore": lambda s: {"ref": s.trashed},
    "engram_doctor": lambda s: {"fix": True},
    "engram_reindex": lambda s: {},
}

#: Tools that only add (destructiveHint false, not read-only), each with a valid call.
ADDING_CALLS: dict[str, Args] = {
    "engram_create": lambda s: {"title": "Kafka consumer lag alert", "content": "Page at 10k.", "domain": "streaming"},
    "engram_reinforce": lambda s: {"ref": s.repack, "note": "worked"},
    "engram_report_failure": lambda s: {"ref": s.window},
    "close_learning_loop": lambda s: {"id": s.repack, "outcome": "success"},
    "engram_maintain": lambda s: {"stage": "rem"},
    "engram_create_skill": lambda s: {"title": "Rotate the TLS certificate", "steps": ["issue", "deploy"]},
    "skill_invoke": lambda s: {"id": "Rotate the TLS certificate", "outcome": "success"},  # the skill just made
    "engram_import": lambda s: {"records": [{"title": "Imported rule", "content": "alpha beta", "domain": "legacy"}]},
    "endorse": lambda s: {"ref": s.repack, "note": "hit it in prod"},
    "record_need": lambda s: {"content": "No seed data for staging", "why": "tests start empty"},
    "observe": lambda s: {"text": "We chose pg_repack over VACUUM FULL because it does not lock the table."},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def seeded(vault: Vault) -> Seeded:
    return seed(vault)


@pytest.fixture
async def client(vault: Vault, seeded: Seeded, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(build_server(vault, profile="full", config_file=tmp_path / "mcp.yaml")) as c:
        yield c


async def tools(client: Client) -> dict[str, Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


def hinted(found: dict[str, Tool], **hints: bool) -> set[str]:
    out = set()
    for name, tool in found.items():
        a = tool.annotations
        assert a is not None
        values = {"read_only": a.read_only_hint, "destructive": a.destructive_hint,
                  "idempotent": a.idempotent_hint, "open_world": a.open_world_hint}
        if all(values[k] is v for k, v in hints.items()):
            out.add(name)
    return out


async def test_read_only_tools_change_no_file_and_no_git_state(client: Client, vault: Vault, seeded: Seeded) -> None:
    found = await tools(client)
    assert hinted(found, read_only=True) == set(READ_CALLS), (
        "a read-only tool was added or lost its hint: give READ_CALLS a valid call of it"
    )
    for name, args in READ_CALLS.items():
        before, head = tree(vault.root), git_state(vault.root)
        ok(await client.call_tool(name, args(seeded)))
        assert changed(before, tree(vault.root)) == [], name
        assert git_state(vault.root) == head, name


async def test_read_only_tools_are_not_destructive_and_are_idempotent(client: Client) -> None:
    found = await tools(client)
    read_only = hinted(found, read_only=True)
    assert read_only <= hinted(found, destructive=False, idempotent=True)


async def test_idempotent_writes_change_nothing_the_second_time(client: Client, vault: Vault, seeded: Seeded) -> None:
    found = await tools(client)
    writers = hinted(found, read_only=False, idempotent=True, open_world=False) - {"setup"}
    # engram_export writes outside the vault (a file of the project beside it).
    export = vault.root.parent / "KNOWLEDGE.md"
    calls = {**IDEMPOTENT_CALLS, "engram_export": lambda s: {"path": str(export)}}
    assert writers == set(calls), "give IDEMPOTENT_CALLS a valid call of every idempotent writer"
    for name, args in calls.items():
        before = tree(vault.root)
        ok(await client.call_tool(name, args(seeded)))
        if name == "engram_export":
            assert export.is_file() and changed(before, tree(vault.root)) == []
            written = export.read_bytes()
        elif name not in ("engram_doctor", "engram_reindex"):  # those may find nothing to do
            assert changed(before, tree(vault.root)), f"{name} wrote nothing: is it really a write?"
        once = tree(vault.root)
        await client.call_tool(name, args(seeded))  # may answer "already gone": never writes
        assert changed(once, tree(vault.root)) == [], name
    assert export.read_bytes() == written


async def test_setup_twice_on_the_same_vault_changes_nothing(client: Client, vault: Vault, tmp_path: Path) -> None:
    config = tmp_path / "mcp.yaml"
    ok(await client.call_tool("setup", {"vault_path": str(vault.root), "agent_id": "agent-1"}))
    once, recorded = tree(vault.root), config.read_bytes()
    again = ok(await client.call_tool("setup", {"vault_path": str(vault.root), "agent_id": "agent-1"}))
    assert again["created"] is False
    assert changed(once, tree(vault.root)) == [] and config.read_bytes() == recorded


async def test_tools_that_only_add_never_remove_a_file_or_shorten_a_body(
    client: Client, vault: Vault, seeded: Seeded
) -> None:
    found = await tools(client)
    assert hinted(found, read_only=False, destructive=False, idempotent=False, open_world=False) == set(ADDING_CALLS)
    for name, args in ADDING_CALLS.items():
        files = set(tree(vault.root, allow=(".engram/",)))
        bodies = {i.id: i.content for i in vault.list(include_hidden=True)}
        ok(await client.call_tool(name, args(seeded)))
        assert files <= set(tree(vault.root, allow=(".engram/",))), f"{name} removed a file"
        for item in vault.list(include_hidden=True):
            if item.id in bodies:
                assert item.content.startswith(bodies[item.id].rstrip("\n")), f"{name} rewrote {item.id}"


async def test_closed_world_tools_never_reach_the_remote(client: Client, vault: Vault, seeded: Seeded, tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    git(vault.root, "remote", "add", "origin", str(origin))
    shared = ok(await client.call_tool("engram_sync", {}))
    assert shared["pushed"] is True
    refs = git(tmp_path, "ls-remote", str(origin)).stdout
    assert refs
    calls = {**{k: v for k, v in READ_CALLS.items()}, **ADDING_CALLS, **IDEMPOTENT_CALLS}
    calls["engram_update"] = lambda s: {"ref": s.repack, "summary": "never VACUUM FULL"}
    calls["engram_learn"] = lambda s: {"content": "The staging database listens on port 5432."}
    calls["verify_entry"] = lambda s: {"id": s.repack}
    found = await tools(client)
    assert set(calls) <= hinted(found, open_world=False)
    for name, args in calls.items():
        await client.call_tool(name, args(seeded))
        assert git(tmp_path, "ls-remote", str(origin)).stdout == refs, name


# ---------------------------------------------------------------------- profiles


def documented_catalog() -> dict[str, tuple[str, str]]:
    """docs/mcp.md's catalog table: tool → (profile, hints)."""
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[`(\w+)`\]\(#\w+\) \| [^|]+ \| (\w+) \| ([^|]+) \|$", text, flags=re.MULTILINE)
    return {name: (profile, hints.strip()) for name, profile, hints in rows}


def hint_words(tool: Tool) -> str:
    a = tool.annotations
    assert a is not None
    words = [word for word, on in (("read-only", a.read_only_hint), ("destructive", a.destructive_hint),
                                    ("idempotent", a.idempotent_hint), ("open-world", a.open_world_hint)) if on]
    return ", ".join(words) or "writes"


async def test_each_profile_exposes_what_the_docs_say_with_the_documented_hints(vault: Vault, tmp_path: Path) -> None:
    docs = documented_catalog()
    assert len(docs) == len(toolbox(build_server(vault, profile="full", config_file=tmp_path / "c.yaml")).declared)
    for profile in PROFILES:
        async with Client(build_server(vault, profile=profile, config_file=tmp_path / "c.yaml")) as c:
            live = await tools(c)
        expected = {n for n, (p, _) in docs.items() if PROFILES.index(p) <= PROFILES.index(profile)}
        assert set(live) == expected, profile
        for name, tool in live.items():
            assert hint_words(tool) == docs[name][1], name
    counts = re.search(r"`minimal` \((\d+) tools\), `standard` \((\d+) tools\), `full` \((\d+) tools\)",
                       (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8"))
    assert counts is not None
    assert [int(n) for n in counts.groups()] == [
        sum(PROFILES.index(p) <= PROFILES.index(profile) for p, _ in docs.values()) for profile in PROFILES
    ]


async def test_profile_prose_in_the_docs_holds(vault: Vault, tmp_path: Path) -> None:
    sets = {}
    for profile in PROFILES:
        async with Client(build_server(vault, profile=profile, config_file=tmp_path / "c.yaml")) as c:
            sets[profile] = set(await tools(c))
    # minimal: first contact, look up, read and write.
    assert {"status", "setup", "engram_search", "engram_get", "engram_list", "engram_create", "engram_update"} <= sets["minimal"]
    # standard: the everyday loop — plus the domain tree, deleting, feedback, skills, passive
    # capture, sharing (team and org), and what their answers send an agent to: vault health
    # and the items a merge flagged.
    assert {"engram_list_paths", "engram_delete", "close_learning_loop", "engram_find_skill", "engram_create_skill",
            "observe", "engram_sync", "sync_scopes", "engram_doctor", "engram_conflicts",
            "engram_resolve_conflict"} <= sets["standard"] - sets["minimal"]
    # full: everything, adding curation, promotion and endorsement, the trash, single links,
    # needs, distill, bulk import, maintenance, the index rebuild and merge statistics.
    assert {"verify_entry", "stale_report", "get_evolution_lineage", "contradiction_resolve", "engram_list_proposals",
            "promote", "endorse", "engram_trash_list", "synapse_list", "synapse_delete", "record_need", "distill",
            "engram_import", "engram_export", "engram_maintain", "engram_reindex", "engram_merge_stats",
            "engram_history"} <= sets["full"] - sets["standard"]
    assert sets["minimal"] < sets["standard"] < sets["full"]


async def test_a_tool_outside_the_profile_is_unknown_and_changes_nothing(vault: Vault, seeded: Seeded, tmp_path: Path) -> None:
    before = tree(vault.root)
    async with Client(build_server(vault, profile="minimal", config_file=tmp_path / "c.yaml")) as c:
        message = error(await c.call_tool("engram_delete", {"ref": seeded.repack}))
        assert "Unknown tool" in message and "engram_delete" in message
        assert ok(await c.call_tool("engram_get", {"ref": seeded.repack, "tier": "catalog"}))["id"] == seeded.repack
    assert changed(before, tree(vault.root)) == []


def write_profile_setting(vault: Vault, value: str) -> Vault:
    settings = vault.root / "engram.yaml"
    settings.write_text(settings.read_text(encoding="utf-8") + f"\nmcp:\n  profile: {value}\n", encoding="utf-8")
    return Vault.open(vault.root)


def test_profile_order_flag_then_environment_then_vault_setting_then_standard(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "c.yaml"
    assert toolbox(build_server(vault, config_file=config)).profile == "standard"
    configured = write_profile_setting(vault, "minimal")
    try:
        assert toolbox(build_server(configured, config_file=config)).profile == "minimal"
        monkeypatch.setenv("ENGRAM_MCP_PROFILE", "full")
        assert toolbox(build_server(configured, config_file=config)).profile == "full"
        assert toolbox(build_server(configured, profile="standard", config_file=config)).profile == "standard"
        # Through a path too, as `engram serve --vault` builds it.
        monkeypatch.delenv("ENGRAM_MCP_PROFILE")
        assert toolbox(build_server(vault.root, config_file=config)).profile == "minimal"
    finally:
        configured.close()


@pytest.mark.parametrize("where", ["env", "setting"])
def test_an_unknown_profile_anywhere_is_refused_with_the_choices(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    target = vault
    if where == "env":
        monkeypatch.setenv("ENGRAM_MCP_PROFILE", "everything")
    else:
        target = write_profile_setting(vault, "everything")
    with pytest.raises(InvalidInput, match=r"unknown tool profile 'everything'") as caught:
        build_server(target, config_file=tmp_path / "c.yaml")
    assert caught.value.hint == "Use one of: minimal, standard, full."
    if target is not vault:
        target.close()
