"""What an agent and a person see of an adopted vault: MCP engram_search / engram_get and
the CLI's synapses listing, on a copy of the real kepano-obsidian vault."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from engram.cli import cli
from engram.mcp import build_server
from engram.vault import Vault
from tests.conftest import VAULTS, shared
from tests.mcp_helpers import ok

TRIP = "Notes/2023 Japan Trip.md"


@pytest.fixture
def kepano(tmp_path: Path) -> Path:
    target = tmp_path / "kepano"
    shutil.copytree(shared(VAULTS / "kepano-obsidian"), target)
    Vault.init(target).close()
    return target


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(kepano: Path, tmp_path: Path) -> AsyncIterator[Client]:
    with Vault.open(kepano) as vault:
        server = build_server(vault, config_file=tmp_path / "config" / "engram" / "mcp.yaml")
        async with Client(server) as c:
            yield c


@pytest.mark.anyio
async def test_engram_search_and_get_follow_typed_links(client: Client) -> None:
    found = ok(await client.call_tool("engram_search", {"query": "Japan trip"}))
    assert found["hits"][0]["path"] == TRIP
    item = ok(await client.call_tool("engram_get", {"ref": TRIP, "tier": "content"}))
    links = {(e["kind"], e["direction"], e["other_title"]) for e in item["synapses"]}
    # categories: [[Trips]], loc: [[Kyoto]], [[Japan]] (Japan has no note yet)
    assert {("links_to", "out", "Trips"), ("links_to", "out", "Kyoto")} <= links
    kyoto = ok(await client.call_tool("engram_get", {"ref": "References/Kyoto.md", "tier": "content"}))
    assert ("links_to", "in", "2023 Japan Trip") in {
        (e["kind"], e["direction"], e["other_title"]) for e in kyoto["synapses"]
    }


@pytest.mark.anyio
async def test_engram_doctor_reports_the_adoption_summary(client: Client) -> None:
    report = ok(await client.call_tool("engram_doctor", {}))
    assert report["ok"] is True and report["problems"] == []
    adoption = report["adoption"]
    assert adoption["indexed_only"] == 103 and adoption["with_id"] == 0 and adoption["links"] >= 80
    assert f"{TRIP}: [[Japan]]" in adoption["unresolved"]


def test_cli_synapses_lists_the_wikilinks_of_a_note(kepano: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(kepano), "synapses", TRIP])
    assert result.exit_code == 0, result.output
    assert f"wikilink  {TRIP} --links_to--> References/Kyoto.md  [[Kyoto]]" in result.output
    assert f"wikilink  {TRIP} --links_to--> missing  [[Japan]]" in result.output
    data = json.loads(runner.invoke(cli, ["--vault", str(kepano), "synapses", TRIP, "--kind", "links_to", "--json"]).output)
    assert data["synapses"] == [] and {"from": TRIP, "link": "Trips", "status": "ok", "to": "Categories/Trips.md",
                                       "embed": False, "inProperty": True} in data["wikilinks"]


def test_the_viewer_shows_an_adopted_vault(kepano: Path) -> None:
    from urllib.parse import quote

    from tests.viewer.conftest import start, stop

    with Vault.open(kepano) as vault:
        trip = vault.get(TRIP)
        viewer = start(vault, {})
        try:
            for path in ("/", "/items", f"/item/{quote(trip.id)}", "/graph", "/search?q=Kyoto", "/health"):
                reply = viewer.request("GET", path)
                assert reply.status == 200, (path, reply.status, reply.text[:500])
            assert "2023 Japan Trip" in viewer.request("GET", "/items").text
        finally:
            stop(viewer)
