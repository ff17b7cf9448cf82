"""The MCP server: the vault as tools, resources and prompts in an agent's loop.

A thin adapter over :class:`engram.vault.Vault` (the core never imports it). Modules:

- :mod:`~engram.mcp.server` — ``build_server(vault_or_path, profile=...)``, the factory;
- :mod:`~engram.mcp.registry` — tool declaration, profiles, annotation presets;
- :mod:`~engram.mcp.errors` — every outcome rendered in one place;
- :mod:`~engram.mcp.context` — which vault and agent id, the user config file;
- :mod:`~engram.mcp.tools_setup`, ``tools_items``, ``tools_synapses``,
  ``tools_maintenance`` — the tools, one module per concern;
- :mod:`~engram.mcp.resources` — ``engram://{id}``, ``engram://overview``, the recall prompt;
- :mod:`~engram.mcp.views`, :mod:`~engram.mcp.models` — core values → pydantic results;
- :mod:`~engram.mcp.http` — streamable HTTP on loopback (DNS-rebinding guard, bearer token);
- :mod:`~engram.mcp.catalog` — the tool catalog in ``docs/mcp.md``, generated.
"""

from engram.mcp.server import build_server

__all__ = ["build_server"]
