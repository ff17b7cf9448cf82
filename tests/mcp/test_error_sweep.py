"""Every tool's refusals, swept: schema errors and domain errors are tool errors
(``isError``, no structured content) whose message names the problem and the call that
fixes it — in this server's tools, never a CLI command — and nothing changes on disk.

The sweeps are generated from ``tools/list`` of the full profile, so a tool added later is
covered the day it lands: each required argument left out, each argument given a value
of the wrong type, each reference argument naming nothing.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import Tool

from engram.mcp import build_server
from engram.vault import Vault
from tests.adapter_helpers import Seeded, changed, git_state, seed, tree
from tests.mcp_helpers import error, ok

pytestmark = pytest.mark.anyio

MISSING_ITEM = "01ZZZZZZZZZZZZZZZZZZZZZZZZ"
#: Arguments that name an item, a synapse or a proposal.
REFERENCES = {"ref", "id", "source", "target", "synapse_id", "old", "new"}


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


async def catalog(client: Client) -> list[Tool]:
    return (await client.list_tools()).tools


def kind_of(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    return kind if isinstance(kind, str) else "any"


def valid(prop: dict[str, Any]) -> Any:
    """A value that passes the schema (not necessarily one the vault accepts)."""
    if prop.get("enum"):
        return next(v for v in prop["enum"] if v is not None)
    return {"string": "x", "integer": 60, "number": 0.5, "boolean": True, "array": ["x"], "object": {},
            "any": "x"}[kind_of(prop)]


def wrong(prop: dict[str, Any]) -> Any:
    """A value of the wrong type (or outside the enum) for ``prop``."""
    if prop.get("enum"):
        return "no-such-choice"
    return {"string": {"not": "text"}, "integer": "many", "number": "high", "boolean": "maybe",
            "array": {"not": "a list"}, "object": ["not", "a", "mapping"], "any": 5}[kind_of(prop)]


def no_cli_phrasing(message: str) -> None:
    """No CLI command and no command-line flag: an agent can only call tools."""
    assert "`engram " not in message and not re.search(r"\bengram [a-z-]+ --", message), message
    assert not re.search(r"(?<![\w-])--[a-z]", message), message


def says_what_to_do(message: str, tool_names: set[str]) -> None:
    """The message names the call that fixes it, in this server's tools."""
    no_cli_phrasing(message)
    named = set(re.findall(r"\b([a-z_]+)\(", message)) | (set(re.findall(r"\b(engram_[a-z_]+)\b", message)))
    assert named & tool_names, f"no call of this server's tools in: {message}"


async def test_every_missing_required_argument_is_named_with_what_to_pass(client: Client, vault: Vault) -> None:
    before, head = tree(vault.root), git_state(vault.root)
    swept = 0
    for tool in await catalog(client):
        required = tool.input_schema.get("required", [])
        if not required:
            continue
        message = error(await client.call_tool(tool.name, {}))
        assert message.startswith(f"invalid_input: {tool.name} got arguments it cannot use: "), message
        for name in required:
            assert f"{name} is required" in message and f"{name}=<" in message, (tool.name, message)
        assert "pydantic" not in message and "http" not in message
        swept += 1
    assert swept >= 25
    assert changed(before, tree(vault.root)) == [] and git_state(vault.root) == head


async def test_every_argument_of_the_wrong_type_is_refused_by_name(client: Client, vault: Vault) -> None:
    before, head = tree(vault.root), git_state(vault.root)
    swept = 0
    for tool in await catalog(client):
        props: dict[str, dict[str, Any]] = tool.input_schema.get("properties", {})
        base = {name: valid(props[name]) for name in tool.input_schema.get("required", [])}
        for name, prop in props.items():
            message = error(await client.call_tool(tool.name, {**base, name: wrong(prop)}))
            if prop.get("enum") and not message.startswith(f"invalid_input: {tool.name} got"):
                # A choice the schema lists but the vault checks: refused there, by value
                # (unless the placeholder reference is refused first).
                if message.startswith("not_found: ") and REFERENCES & set(base):
                    continue
                if (tool.name, name) == ("synapse_delete", "kind"):  # an edge is named in full first
                    assert message.startswith("invalid_input: name the synapse"), message
                    continue
                assert re.match(r"(invalid_input|unknown_kind): ", message), message
                assert "'no-such-choice'" in message, message
                continue
            assert message.startswith(f"invalid_input: {tool.name} got arguments it cannot use: {name}"), (
                tool.name, name, message)
            assert f"Pass {name}=<" in message, message
            swept += 1
    assert swept >= 140
    assert changed(before, tree(vault.root)) == [] and git_state(vault.root) == head


async def test_every_reference_to_nothing_is_not_found_with_the_call_that_finds_it(
    client: Client, vault: Vault
) -> None:
    tools = await catalog(client)
    names = {t.name for t in tools}
    before = tree(vault.root)
    swept = 0
    for tool in tools:
        props: dict[str, dict[str, Any]] = tool.input_schema.get("properties", {})
        refs = [p for p in props if p in REFERENCES]
        if not refs or tool.name in ("generalize", "synapse_delete"):  # no org vault; one way to name an edge
            continue
        args = {name: valid(props[name]) for name in tool.input_schema.get("required", [])}
        if "evidence" in args:
            args["evidence"] = "seen in prod"
        if tool.name == "engram_update":
            args["summary"] = "something to change"
        for ref in refs:
            args[ref] = ("syn-00000000000000ff" if ref == "synapse_id" else
                         "prop-0000000000000000" if tool.name.endswith("_proposal") else MISSING_ITEM)
        message = error(await client.call_tool(tool.name, args))
        if tool.name == "engram_quarantine_release":
            # Without roles an MCP session is a writer: refused before the lookup, so a
            # session that may not release learns nothing about what the vault holds.
            assert message.startswith("forbidden: tester (writer) may not release"), message
            continue
        assert message.startswith("not_found: "), (tool.name, message)
        says_what_to_do(message, names)
        swept += 1
    assert swept >= 20
    assert changed(before, tree(vault.root)) == []


#: Domain refusals: (tool, arguments, the start of the message). Each must also name
#: the call that fixes it.
DomainCall = tuple[str, Callable[[Seeded], dict[str, Any]], str]
DOMAIN_ERRORS: list[DomainCall] = [
    ("engram_search", lambda s: {"query": "?! ..."}, "invalid_input: the query has no words"),
    ("engram_search", lambda s: {"query": "vacuum", "as_of": "last week"}, "invalid_input: as_of"),
    ("engram_update", lambda s: {"ref": s.repack, "expected_version": 9, "summary": "x"}, "version_conflict: item"),
    ("engram_update", lambda s: {"ref": s.repack}, "invalid_input: nothing to change."),
    ("engram_delete", lambda s: {"ref": s.repack, "expected_version": 4}, "version_conflict"),
    ("engram_restore", lambda s: {"ref": s.repack}, "invalid_input: "),
    ("engram_accept_proposal", lambda s: {"id": "prop-0000000000000000"}, "not_found: no proposal"),
    ("engram_dismiss_proposal", lambda s: {"id": "prop-0000000000000000"}, "not_found: no proposal"),
    ("synapse_get", lambda s: {"synapse_id": "syn-00000000000000ff"}, "not_found: no synapse"),
    ("synapse_delete", lambda s: {"source": s.window, "kind": "causes", "target": s.repack}, "not_found: there is no causes edge"),
    ("synapse_create", lambda s: {"source": s.repack, "kind": "extends", "target": s.repack}, "invalid_input: an item cannot link to itself"),
    ("engram_resolve_conflict", lambda s: {"ref": s.repack}, "invalid_input: item"),
    ("engram_resolve_conflict", lambda s: {"ref": s.flagged}, "conflict: "),
    ("generalize", lambda s: {"ref": s.repack, "org_content": "Rebuild tables online."}, "invalid_input: no org vault"),
    ("promote", lambda s: {"ref": s.repack, "to": "org"}, "invalid_input: no org vault"),
    ("upgrade_verification", lambda s: {"ref": s.repack, "evidence": "  "}, "invalid_input: evidence is empty."),
    ("contradiction_resolve", lambda s: {"old": s.repack, "new": s.repack, "resolution": "merge"}, "invalid_input: old and new"),
    ("engram_sync", lambda s: {"remote": "nowhere"}, "git_error: there is no remote named 'nowhere'."),
    ("engram_import", lambda s: {}, "invalid_input: "),
    ("engram_import", lambda s: {"text": "[{broken"}, "invalid_input: "),
    ("record_need", lambda s: {"content": "   "}, "invalid_input: the need is empty."),
    ("engram_learn", lambda s: {"content": ""}, "invalid_input: the lesson is empty."),
    ("setup", lambda s: {"vault_path": "relative/path"}, "invalid_input: vault_path 'relative/path' is not an absolute path."),
]


async def test_domain_refusals_name_the_fix_in_tool_terms_and_change_nothing(
    client: Client, vault: Vault, seeded: Seeded
) -> None:
    names = {t.name for t in await catalog(client)}
    assert {name for name, _, _ in DOMAIN_ERRORS} <= names
    before, head = tree(vault.root), git_state(vault.root)
    for name, args, start in DOMAIN_ERRORS:
        message = error(await client.call_tool(name, args(seeded)))
        assert message.startswith(start), (name, message)
        no_cli_phrasing(message)
        _, _, fix = message.partition(". ")
        assert fix.strip(), f"{name}: the message says what is wrong but not what to do: {message}"
    assert changed(before, tree(vault.root)) == [] and git_state(vault.root) == head


async def test_a_decided_proposal_points_at_the_open_ones(client: Client, vault: Vault, seeded: Seeded) -> None:
    ok(await client.call_tool("engram_dismiss_proposal", {"id": seeded.proposal, "note": "keep it"}))
    before = tree(vault.root)
    names = {t.name for t in await catalog(client)}
    for tool in ("engram_accept_proposal", "engram_dismiss_proposal"):
        message = error(await client.call_tool(tool, {"id": seeded.proposal}))
        assert message.startswith(f"invalid_input: proposal {seeded.proposal} is dismissed already (by tester).")
        says_what_to_do(message, names)
    assert changed(before, tree(vault.root)) == []


async def test_a_disputed_item_cannot_be_verified_until_the_dispute_is_settled(
    client: Client, vault: Vault, seeded: Seeded
) -> None:
    ok(await client.call_tool("engram_update", {"ref": seeded.window, "verification_status": "disputed"}))
    before = tree(vault.root)
    names = {t.name for t in await catalog(client)}
    for tool, args in (("verify_entry", {"id": seeded.window}),
                       ("upgrade_verification", {"ref": seeded.window, "evidence": "looked again"})):
        message = error(await client.call_tool(tool, args))
        assert message.startswith(f"invalid_input: {seeded.window} is disputed"), message
        says_what_to_do(message, names)
        assert "contradiction_resolve(" in message
    assert changed(before, tree(vault.root)) == []


async def test_restoring_an_id_the_trash_does_not_hold_says_where_to_look(client: Client, vault: Vault, seeded: Seeded) -> None:
    ok(await client.call_tool("engram_restore", {"ref": seeded.trashed}))
    message = error(await client.call_tool("engram_restore", {"ref": seeded.trashed}))
    # Back in the vault and active: nothing to restore, and the message says how to find what can be.
    assert message.startswith(f"invalid_input: {seeded.trashed} is active"), message
    says_what_to_do(message, {t.name for t in await catalog(client)})


async def test_after_every_refusal_the_server_still_serves(client: Client, seeded: Seeded) -> None:
    for name, args, _ in DOMAIN_ERRORS:
        await client.call_tool(name, args(seeded))
    got = ok(await client.call_tool("engram_get", {"ref": seeded.repack, "tier": "catalog"}))
    assert got["id"] == seeded.repack and got["version"] == 1
