"""What answers cost an agent (issue 14, item 7).

By default tools publish no output schema and an answer is its compact JSON once, as
text; with structured output on (flag, environment, vault setting) every tool publishes
its output schema and every answer carries the same JSON as structured content too.
Descriptions in a profile point only at tools that profile offers. And the default
profile's tools/list and a default ``engram_search`` answer stay within half of what the
issue measured (tools/list ≈ 15.5k tokens; an answer ≈ 2.5k tokens sent twice), with the
project's estimate (``ceil(characters / 4)``), over a real stdio session.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from engram.errors import InvalidInput
from engram.mcp import build_server
from engram.mcp.catalog import _catalog_server
from engram.mcp.profiles import PROFILES, includes
from engram.mcp.server import toolbox
from engram.vault import Vault
from tests.conftest import DATASETS, ROOT, shared
from tests.mcp_helpers import error, ok, text

pytestmark = pytest.mark.anyio

#: Half of what issue 14 measured for the default profile's tools/list (≈ 15.5k tokens)
#: and for a default search answer (≈ 2.5k tokens, sent twice).
TOOLS_LIST_BUDGET = 7_750
SEARCH_ANSWER_BUDGET = 2_500
#: How far the costs docs/mcp.md states ("about 6.9k") may be from what is measured.
DOC_TOLERANCE = 0.05
MCP_DOC = ROOT / "docs" / "mcp.md"


def documented_costs() -> dict[str, float]:
    """The costs docs/mcp.md states: the default tools/list and answer (tokens), the
    tolerance it claims for them, and the budgets it says this module keeps."""
    text = " ".join(MCP_DOC.read_text(encoding="utf-8").split())
    said = re.search(
        r"`tools/list` costs about ([\d.]+)k tokens and a default `engram_search` answer about ([\d.]+)k"
        r" \(a test keeps both within (\d+)% of what it measures\)", text,
    )
    kept = re.search(r"keeps the default `tools/list` under ([\d,]+) tokens and a default search answer"
                     r" under ([\d,]+)", text)
    assert said and kept, "docs/mcp.md no longer states the costs in the form this test reads"
    return {
        "tools_list": float(said[1]) * 1000, "answer": float(said[2]) * 1000, "tolerance": int(said[3]) / 100,
        "tools_list_budget": int(kept[1].replace(",", "")), "answer_budget": int(kept[2].replace(",", "")),
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def structured(vault: Vault, tmp_path: Path) -> AsyncIterator[Client]:
    server = build_server(vault, profile="full", structured_output=True, config_file=tmp_path / "mcp.yaml")
    async with Client(server) as c:
        yield c


def _compact(answer: str) -> bool:
    return answer == json.dumps(json.loads(answer), ensure_ascii=False, separators=(",", ":"))


async def test_by_default_no_output_schemas_and_each_answer_is_its_json_once(vault: Vault, tmp_path: Path) -> None:
    vault.create("Pool sizing", "Size pools from p99 latency.", domain=["ops"], tags=["postgres"])
    async with Client(build_server(vault, profile="full", config_file=tmp_path / "mcp.yaml")) as c:
        tools = (await c.list_tools()).tools
        assert tools and all(t.output_schema is None for t in tools)
        for name, args in (("engram_search", {"query": "pool"}), ("engram_list", {}), ("status", {})):
            result = await c.call_tool(name, args)
            assert not result.is_error and result.structured_content is None and len(result.content) == 1
            assert _compact(text(result))
        found = ok(await c.call_tool("engram_search", {"query": "pool sizing"}))
        hit = found["hits"][0]
        # Implied fields are left out: a team item's scope, the tier of a hit carrying its body.
        assert hit["content"].startswith("Size pools") and "tier" not in hit and "scope" not in hit
        assert "near_misses" not in found and "truncated" not in found
        assert error(await c.call_tool("engram_get", {"ref": "nope"})).startswith("not_found:")


async def test_a_search_answer_says_when_the_budget_ran_out(vault: Vault, tmp_path: Path) -> None:
    for n in range(6):
        vault.create(f"Replica lag note {n}", "Replica lag grows when the WAL sender stalls. " * 20, domain=["ops"],
                     dedupe=False)
    async with Client(build_server(vault, config_file=tmp_path / "mcp.yaml")) as c:
        roomy = ok(await c.call_tool("engram_search", {"query": "replica lag", "token_budget": 100_000}))
        assert len(roomy["hits"]) == 6 and "budget_reached" not in roomy
        assert all("tier" not in h for h in roomy["hits"])  # every hit carries its body
        tight = ok(await c.call_tool("engram_search", {"query": "replica lag", "token_budget": 400}))
        assert len(tight["hits"]) == 6 and tight["budget_reached"] is True and "left_out" not in tight
        # Every hit's catalog line first; the spare upgrades the best hit as far as it fits.
        assert tight["hits"][0]["tier"] == "digest" and tight["hits"][-1]["tier"] == "catalog"
        assert "engram_get(ref=id) reads one in full" in tight["message"]


def _json_tokens(data: object) -> int:
    """The project's estimate (``engram.mcp.views.estimate_tokens``), spelled out."""
    return -(-len(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) // 4)


async def test_tier_auto_keeps_a_search_answer_within_its_budget_and_says_what_it_left_out(
    vault: Vault, tmp_path: Path
) -> None:
    """Issue 29 item 10: 205 tokens were answered for a budget of 120 (every catalog line
    was always sent). The hits now fit the budget; the answer says how many it left out
    and the budget that brings them, and that budget does."""
    for n in range(8):
        vault.create(f"Replica lag note {n} on the primary cluster", "Replica lag grows when the WAL sender "
                     "stalls. " * 20, domain=["ops", "postgres"], dedupe=False)
    async with Client(build_server(vault, config_file=tmp_path / "mcp.yaml")) as c:
        for budget in (60, 120, 400):
            tight = ok(await c.call_tool("engram_search", {"query": "replica lag", "token_budget": budget}))
            assert _json_tokens(tight["hits"]) <= budget and tight["tokens"] <= budget, (budget, tight)
            assert tight["hits"] and tight["budget_reached"] is True
            assert len(tight["hits"]) + tight["left_out"] == 8
            needed = int(re.search(r"token_budget=(\d+)", tight["message"]).group(1))  # type: ignore[union-attr]
            assert f"{tight['left_out']} more hit(s)" in tight["message"] and "tier='catalog'" in tight["message"]
            everything = ok(await c.call_tool("engram_search", {"query": "replica lag", "token_budget": needed}))
            assert len(everything["hits"]) == 8 and "left_out" not in everything
            assert _json_tokens(everything["hits"]) <= needed
            # The same ranking: what fitted before comes first, the rest after it.
            assert [h["id"] for h in everything["hits"][: len(tight["hits"])]] == [h["id"] for h in tight["hits"]]
        lines = ok(await c.call_tool("engram_search", {"query": "replica lag", "tier": "catalog"}))
        assert len(lines["hits"]) == 8 and "left_out" not in lines


async def test_tier_auto_keeps_engram_get_within_its_budget(vault: Vault, tmp_path: Path) -> None:
    """Issue 29 item 10: ``engram_get`` auto with a budget of 50 answered 60 tokens. The
    item's view (all but the untrusted-data frame every answer carries) fits the budget,
    or the answer is an error naming the budget that fits its smallest view."""
    long_title = "Replica lag on the primary cluster grows whenever the WAL sender stalls under load"
    made = vault.create(long_title, "Watch pg_stat_replication. " * 40, domain=["ops", "postgres", "replication"])
    async with Client(build_server(vault, config_file=tmp_path / "mcp.yaml")) as c:
        catalog = ok(await c.call_tool("engram_get", {"ref": made.id, "tier": "catalog"}))
        del catalog["frame"]
        smallest = _json_tokens(catalog)
        assert smallest > 50  # the item whose catalog view overran a budget of 50
        refused = error(await c.call_tool("engram_get", {"ref": made.id, "token_budget": 50}))
        assert refused.startswith("invalid_input:") and f"token_budget={smallest}" in refused
        assert "tier='catalog'" in refused
        for budget in (smallest, 150, 400, 100_000):
            view = ok(await c.call_tool("engram_get", {"ref": made.id, "token_budget": budget}))
            del view["frame"]
            assert _json_tokens(view) <= budget and view["tokens"] == _json_tokens(view), (budget, view)
        assert view["tier"] == "content"


async def test_structured_output_publishes_schemas_and_sends_the_same_json_twice(
    structured: Client, vault: Vault
) -> None:
    tools = (await structured.list_tools()).tools
    assert all(t.output_schema is not None and t.output_schema["type"] == "object" for t in tools)
    made = ok(await structured.call_tool("engram_create", {"title": "Structured", "content": "body"}))
    for name, args in (
        ("engram_get", {"ref": made["id"], "tier": "content"}),
        ("engram_search", {"query": "structured"}),
        ("engram_list", {}),
        ("status", {}),
        ("engram_list_paths", {}),
    ):
        result = await structured.call_tool(name, args)  # the SDK client validates against the schema
        assert not result.is_error
        assert result.structured_content == json.loads(text(result))
    failed = await structured.call_tool("engram_get", {"ref": "nope"})
    assert failed.is_error and failed.structured_content is None  # clients validate errors too


def test_structured_output_is_chosen_by_flag_environment_or_vault(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "mcp.yaml"
    assert toolbox(build_server(vault, config_file=config)).structured is False
    assert toolbox(build_server(vault, structured_output=True, config_file=config)).structured is True
    settings = vault.root / "engram.yaml"
    settings.write_text(settings.read_text() + "mcp:\n  structuredOutput: true\n")
    reopened = Vault.open(vault.root)
    assert toolbox(build_server(reopened, config_file=config)).structured is True
    monkeypatch.setenv("ENGRAM_MCP_STRUCTURED_OUTPUT", "off")  # the environment overrides the vault
    assert toolbox(build_server(reopened, config_file=config)).structured is False
    assert toolbox(build_server(reopened, structured_output=True, config_file=config)).structured is True
    monkeypatch.setenv("ENGRAM_MCP_STRUCTURED_OUTPUT", "maybe")
    with pytest.raises(InvalidInput, match="ENGRAM_MCP_STRUCTURED_OUTPUT is 'maybe'") as bad_env:
        build_server(reopened, config_file=config)
    assert "1 or 0" in (bad_env.value.hint or "")
    monkeypatch.delenv("ENGRAM_MCP_STRUCTURED_OUTPUT")
    settings.write_text(settings.read_text().replace("structuredOutput: true", "structuredOutput: 'yes'"))
    with pytest.raises(InvalidInput, match=r"mcp\.structuredOutput to 'yes', not true or false"):
        build_server(Vault.open(vault.root), config_file=config)
    reopened.close()


def test_descriptions_point_only_at_tools_their_profile_offers() -> None:
    box = toolbox(_catalog_server())
    smallest = {info.name: info.profile for info in box.declared}
    tools = {t.name: t for t in box.server._tool_manager.list_tools()}
    assert set(tools) == set(smallest)
    named = re.compile(r"\b(" + "|".join(sorted(smallest, key=len, reverse=True)) + r")\b")
    for name, tool in tools.items():
        said = (tool.description or "") + json.dumps(tool.parameters)
        for other in set(named.findall(said)) - {name}:
            for profile in PROFILES:
                if includes(profile, smallest[name]):
                    assert includes(profile, smallest[other]), (
                        f"{name} ({profile} profile) points at {other}, which {profile} does not offer"
                    )


def test_default_tools_list_and_search_answers_stay_within_half_the_issue_baseline(tmp_path: Path) -> None:
    shared(DATASETS / "vaults" / "dendron-site")  # the synthetic vault's text comes from there
    from benchmarks import synth
    from benchmarks.bench_mcp import make_queries
    from benchmarks.bench_tokens import profile_cost

    data = synth.generate(300, root=tmp_path / "vault")
    with Vault.open(data.root) as vault:
        vault.refresh()
    cost = profile_cost(data.root, "standard", make_queries(data, 12), [])
    listed, answers = cost["tools_list"], cost["engram_search"]
    assert listed["output_schema_tokens"] == 0
    assert listed["tokens"] <= TOOLS_LIST_BUDGET, listed
    # The answers are full (ten hits, most of the 2,000-token budget spent on bodies), so
    # the bound says something, and each is sent once.
    assert answers["hits"] == 10 and answers["text_tokens"] >= 1_500 and answers["structured_tokens"] == 0
    assert answers["tokens"] <= SEARCH_ANSWER_BUDGET, answers
    # What docs/mcp.md tells a reader is what this measures (issue 28: it said 6.5k for 6.8k).
    doc = documented_costs()
    assert doc["tolerance"] == DOC_TOLERANCE
    assert (doc["tools_list_budget"], doc["answer_budget"]) == (TOOLS_LIST_BUDGET, SEARCH_ANSWER_BUDGET)
    for said, measured in ((doc["tools_list"], listed["tokens"]), (doc["answer"], answers["tokens"])):
        assert abs(said - measured) <= DOC_TOLERANCE * measured, (
            f"docs/mcp.md says about {said / 1000:.1f}k tokens; measured {measured}: update the doc"
        )
