"""The factory: ``build_server(vault_or_path, profile=...)`` → an ``MCPServer``.

The server is assembled from one module per concern — first contact
(:mod:`~engram.mcp.tools_setup`), items, synapses, maintenance, resources and prompts —
each registering its tools on a :class:`~engram.mcp.registry.Toolbox`. It takes an open
:class:`~engram.vault.Vault` (tests, embedding), a path, or ``None`` (resolve as
:func:`engram.mcp.context.open_holder` describes; no vault means first-contact mode), so
tests can run it in memory with the SDK's client and ``engram serve`` can run the very
same object over stdio or HTTP.

Server instructions carry the vault's top-level domains with item counts; they are
recomputed when ``setup`` swaps a vault in, so sessions that connect later (HTTP) see
the new vault.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from engram import DISTRIBUTION
from engram.mcp import (
    protocol,
    resources,
    tools_import,
    tools_items,
    tools_lifecycle,
    tools_maintenance,
    tools_merge,
    tools_recall,
    tools_scopes,
    tools_setup,
    tools_synapses,
    tools_sync,
    tools_trash,
    tools_trust,
)
from engram.mcp.context import VaultHolder, holder_for, open_holder
from engram.mcp.overview import instructions
from engram.mcp.profiles import Profile, resolve_profile, resolve_structured_output
from engram.mcp.registry import Toolbox
from engram.vault import Vault

SERVER_NAME = "engram"
TOOL_MODULES = (
    tools_setup, tools_recall, tools_items, tools_lifecycle, tools_import, tools_synapses, tools_maintenance,
    tools_sync, tools_merge, tools_trash, tools_scopes, tools_trust,
)


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0"


def build_server(
    vault_or_path: Vault | str | Path | None = None,
    *,
    profile: str | None = None,
    actor: str | None = None,
    config_file: Path | None = None,
    structured_output: bool | None = None,
) -> MCPServer:
    """Build the engram MCP server.

    Args:
        vault_or_path: an open vault, a vault path, or None to resolve one (flag/env is
            the caller's business: pass the path).
        profile: minimal, standard or full; None resolves ENGRAM_MCP_PROFILE, the vault's
            ``mcp.profile`` setting, then standard.
        actor: the agent id writes are attributed to (default: see ``open_holder``).
        config_file: the user config file setup writes (default under XDG_CONFIG_HOME).
        structured_output: publish output schemas and send structured content too; None
            resolves ENGRAM_MCP_STRUCTURED_OUTPUT, the vault's ``mcp.structuredOutput``,
            then off (each answer goes out once, as compact JSON text).

    Raises InvalidInput for an unknown profile or a structured-output setting that is
    not a yes or no.
    """
    if isinstance(vault_or_path, Vault):
        holder = holder_for(vault_or_path, config_file=config_file)
    else:
        holder = open_holder(
            str(vault_or_path) if vault_or_path is not None else None,
            actor,
            config_file=config_file,
        )
    chosen = resolve_profile(profile, holder.vault)
    return _assemble(holder, chosen, structured=resolve_structured_output(structured_output, holder.vault))


def _assemble(holder: VaultHolder, profile: Profile, *, structured: bool = False) -> MCPServer:
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="engram team memory",
        description="Team memory for AI agents and people, kept as plain Markdown in git.",
        instructions=instructions(holder.vault),
        version=_version(),
    )

    def on_change(vault: Vault) -> None:
        # The SDK reads instructions when a session starts; later sessions see the new vault.
        server._lowlevel_server.instructions = instructions(vault)

    holder.on_change = on_change
    box = Toolbox(
        server=server,
        holder=holder,
        profile=profile,
        status=lambda: tools_setup.build_status(holder, profile),
        structured=structured,
    )
    for module in TOOL_MODULES:
        module.register(box)
    resources.register(server, holder)
    protocol.register(server, holder)
    server.engram_toolbox = box  # type: ignore[attr-defined]  # for the catalog and tests
    return server


def toolbox(server: MCPServer) -> Toolbox:
    """The toolbox a server was built with (profile, holder, declared tools)."""
    box: Toolbox = server.engram_toolbox  # type: ignore[attr-defined]
    return box
