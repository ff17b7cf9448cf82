"""docs/mcp.md's tool catalog is generated from the server and must be current."""

from __future__ import annotations

from engram.mcp.catalog import main, render, splice
from tests.conftest import ROOT

DOC = ROOT / "docs" / "mcp.md"


def test_the_catalog_in_docs_is_current() -> None:
    current = DOC.read_text(encoding="utf-8")
    assert splice(current, render()) == current, (
        "docs/mcp.md is stale: run python -m engram.mcp.catalog --write docs/mcp.md"
    )
    assert main(["--check", str(DOC)]) == 0


def test_every_tool_is_in_the_catalog() -> None:
    catalog = render()
    for name in ("status", "setup", "engram_create", "engram_get", "engram_reindex", "synapse_delete"):
        assert f"### `{name}`" in catalog
    assert "`engram://{id}`" in catalog and "`recall(topic)`" in catalog
