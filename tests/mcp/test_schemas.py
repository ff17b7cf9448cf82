"""What tools/list costs and how schema errors read: compact schemas, house-style errors.

The published schemas drop what carries nothing for a model (pydantic's per-field
``title``, ``default: null``, dead ``null`` branches of output fields) but accept the
same input; arguments that fail the input schema come back as ``invalid_input: …``
naming the argument and what to pass — never pydantic's text with a URL.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from engram.mcp import build_server
from engram.mcp.registry import compact_schema
from engram.vault import Vault
from tests.mcp_helpers import error, ok

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(vault: Vault, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(build_server(vault, config_file=tmp_path / "mcp.yaml")) as c:
        yield c


async def test_a_missing_argument_reads_in_the_house_style(client: Client, vault: Vault) -> None:
    text = error(await client.call_tool("engram_get", {}))
    assert text.startswith("invalid_input: engram_get got arguments it cannot use: ref is required.")
    assert "Pass ref=<string" in text
    assert "pydantic" not in text and "http" not in text
    wrong = error(await client.call_tool("engram_search", {"query": "x", "limit": "many"}))
    assert wrong.startswith("invalid_input: engram_search") and "limit:" in wrong and "Pass limit=<integer" in wrong
    over = error(await client.call_tool("engram_search", {"query": "x", "limit": 500}))
    assert "limit:" in over and "500" in over
    vault.create("Pool sizing", "Size pools from p99.")
    assert ok(await client.call_tool("engram_search", {"query": "pool", "limit": 1}))["hits"]


async def test_published_schemas_are_compact_and_still_validate(vault: Vault, tmp_path: Path) -> None:
    server = build_server(vault, structured_output=True, config_file=tmp_path / "mcp.yaml")
    async with Client(server) as client:
        tools = await client.list_tools()
        listed = json.dumps([t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in tools.tools])
        assert '"title": "Ref"' not in listed and '"default": null' not in listed
        search = next(t for t in tools.tools if t.name == "engram_search")
        assert search.input_schema["properties"]["domain"]["type"] == ["string", "null"]
        assert search.input_schema["required"] == ["query"]
        hit = search.output_schema["$defs"]["SearchHitOut"]["properties"] if search.output_schema else {}
        assert "title" in hit and hit["tier"]["enum"] == ["catalog", "digest"]
        # None-valued optional arguments are still accepted as the full schema accepted them.
        result = await client.call_tool("engram_search", {"query": "nothing here", "domain": None})
        assert not result.is_error and result.structured_content is not None


def test_compact_schema_keeps_fields_named_title_and_drops_only_noise() -> None:
    schema = {
        "title": "Out", "type": "object", "additionalProperties": False,
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "summary": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Summary"},
            "tags": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]},
        },
    }
    assert compact_schema(schema, output=True) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "summary": {"type": "string"}, "tags": {"items": {"type": "string"}, "type": "array"}},
    }
    inputs = compact_schema(schema, output=False)
    assert inputs["additionalProperties"] is False
    assert inputs["properties"]["summary"] == {"type": ["string", "null"]}
    assert inputs["properties"]["tags"] == {"items": {"type": "string"}, "type": ["array", "null"]}
