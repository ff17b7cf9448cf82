"""Tool profiles — ``minimal`` ⊂ ``standard`` ⊂ ``full`` — and the structured-output
setting: how each is chosen.

Kept free of the MCP SDK so that the CLI can offer ``--profile`` choices without
loading it (``engram add`` must start fast).

- ``minimal``: first contact, look up, read, write (status, setup, search, get, list,
  create, update, synapse_create);
- ``standard`` (the default): the everyday loop — plus the domain tree, delete,
  feedback (close_learning_loop), skills, observe, sync (team and org), and what
  their answers send an agent to: doctor and reviewing items a merge flagged;
- ``full``: everything, adding history, curation (verification, staleness, lineage,
  contradictions, proposals, the quarantine and the audit log), promotion and endorsement, the trash, single links,
  recording needs, distill, bulk import, maintenance, reindex and merge
  statistics.

Every listed tool costs tokens in every session, so ``standard`` keeps what an agent
uses in most sessions and ``full`` what a curator uses now and then (each is also a
CLI command). A tool's description points only at tools its profile offers
(tests/mcp/test_cost.py).

The profile comes from ``--profile``, else ``ENGRAM_MCP_PROFILE``, else the vault's
``engram.yaml`` (``mcp: {profile: ...}``), else ``standard``.

Structured output (``--structured-output``, ``ENGRAM_MCP_STRUCTURED_OUTPUT``,
``mcp: {structuredOutput: true}``; off by default): with it, every tool publishes an
output schema and every answer carries its JSON twice, as structured content and (as
the protocol asks, for compatibility) as text. Without it, tools publish no output
schema and an answer is its compact JSON once, as text. Output schemas are most of what
tools/list costs and common hosts do not show them to the model, so the default spends
those tokens only for clients that validate structured content and ask for it.
"""

from __future__ import annotations

import os
from typing import Literal

from engram.errors import InvalidInput
from engram.vault import Vault

Profile = Literal["minimal", "standard", "full"]
PROFILES: tuple[Profile, ...] = ("minimal", "standard", "full")
DEFAULT_PROFILE: Profile = "standard"


def check_profile(value: str) -> Profile:
    for profile in PROFILES:
        if value == profile:
            return profile
    raise InvalidInput(
        f"unknown tool profile {value!r}.", field="profile", hint=f"Use one of: {', '.join(PROFILES)}."
    )


def resolve_profile(flag: str | None, vault: Vault | None) -> Profile:
    """``--profile``, else ``ENGRAM_MCP_PROFILE``, else the vault setting, else standard."""
    if flag:
        return check_profile(flag)
    if os.environ.get("ENGRAM_MCP_PROFILE"):
        return check_profile(os.environ["ENGRAM_MCP_PROFILE"])
    if vault is not None:
        section = vault.state.settings.data.get("mcp")
        if isinstance(section, dict) and isinstance(section.get("profile"), str):
            return check_profile(section["profile"])
    return DEFAULT_PROFILE


def resolve_structured_output(flag: bool | None, vault: Vault | None) -> bool:
    """``--structured-output``, else ``ENGRAM_MCP_STRUCTURED_OUTPUT``, else the vault's
    ``mcp.structuredOutput``, else off."""
    if flag is not None:
        return flag
    env = os.environ.get("ENGRAM_MCP_STRUCTURED_OUTPUT", "").strip().lower()
    if env:
        if env in _TRUE or env in _FALSE:
            return env in _TRUE
        raise InvalidInput(
            f"ENGRAM_MCP_STRUCTURED_OUTPUT is {env!r}, not a yes or no.",
            field="ENGRAM_MCP_STRUCTURED_OUTPUT",
            hint="Set it to 1 or 0 (true/false, yes/no, on/off), or unset it.",
        )
    if vault is not None:
        section = vault.state.settings.data.get("mcp")
        value = section.get("structuredOutput") if isinstance(section, dict) else None
        if value is not None:
            if not isinstance(value, bool):
                raise InvalidInput(
                    f"engram.yaml sets mcp.structuredOutput to {value!r}, not true or false.",
                    field="mcp.structuredOutput",
                    hint="Write `mcp: {structuredOutput: true}` (or false, or remove the key).",
                )
            return value
    return False


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def includes(profile: Profile, smallest: Profile) -> bool:
    """Whether a server with ``profile`` offers a tool whose smallest profile is ``smallest``."""
    return PROFILES.index(smallest) <= PROFILES.index(profile)
