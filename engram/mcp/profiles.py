"""Tool profiles — ``minimal`` ⊂ ``standard`` ⊂ ``full`` — and how one is chosen.

Kept free of the MCP SDK so that the CLI can offer ``--profile`` choices without
loading it (``engram add`` must start fast).

- ``minimal``: first contact, look up, read, write (status, setup, search, get, list,
  create, update, synapse_create);
- ``standard`` (the default): plus the domain tree, delete, history, synapse reading
  and removal, doctor, sync, reviewing items a merge flagged, the quarantine (release
  is for curators only) and the audit log;
- ``full``: everything, including reindex, bulk import and merge statistics.

The profile comes from ``--profile``, else ``ENGRAM_MCP_PROFILE``, else the vault's
``engram.yaml`` (``mcp: {profile: ...}``), else ``standard``.
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


def includes(profile: Profile, smallest: Profile) -> bool:
    """Whether a server with ``profile`` offers a tool whose smallest profile is ``smallest``."""
    return PROFILES.index(smallest) <= PROFILES.index(profile)
