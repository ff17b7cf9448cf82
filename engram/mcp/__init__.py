"""The MCP server: the vault as tools, resources and prompts in an agent's loop.

A thin adapter over :class:`engram.vault.Vault` (the core never imports it). Modules:

- :mod:`~engram.mcp.server` — ``build_server(vault_or_path, profile=...)``, the factory;
- :mod:`~engram.mcp.registry` — tool declaration and annotation presets;
- :mod:`~engram.mcp.profiles` — minimal / standard / full, and how one is chosen;
- :mod:`~engram.mcp.errors` — every outcome rendered in one place;
- :mod:`~engram.mcp.context` — which vault and agent id, the user config file;
- :mod:`~engram.mcp.tools_setup`, ``tools_recall``, ``tools_items``, ``tools_import``,
  ``tools_synapses``, ``tools_maintenance``, ``tools_sync`` — the tools, one module per
  concern;
- :mod:`~engram.mcp.resources` — ``engram://{id}``, ``engram://overview``, the recall prompt;
- :mod:`~engram.mcp.protocol` — argument completion, the legacy logging level;
- :mod:`~engram.mcp.views`, :mod:`~engram.mcp.models` — core values → pydantic results;
- :mod:`~engram.mcp.http` — streamable HTTP on loopback (DNS-rebinding guard, bearer token);
- :mod:`~engram.mcp.catalog` — the tool catalog in ``docs/mcp.md``, generated.

The package imports the SDK only when :func:`build_server` is first used, so the CLI can
import :mod:`engram.mcp.profiles` without paying for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.mcp.server import build_server

__all__ = ["build_server"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from engram.mcp.server import build_server

        return build_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
