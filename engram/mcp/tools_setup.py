"""First contact: the ``status`` and ``setup`` tools, and the guidance every tool gives.

``status`` reports what is set (vault, agent id, profile, config file), what the vault
holds, and each gap with what it costs and the exact ``setup(...)`` call that closes it.
Before a vault is configured, every other tool answers with this same report (see
:class:`~engram.mcp.errors.SetupRequired`), so an agent is never left with a bare error.

``setup`` lays out or adopts a vault through :meth:`Vault.init` (what ``engram init``
runs: template files, ``git init`` when needed, the merge driver), records the vault
path and agent id in the user config file (no secrets), and swaps the vault into the
running server: the next call uses it, no restart.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Annotated

from pydantic import Field

from engram.errors import EngramError, InvalidInput
from engram.mcp.context import DERIVED_SOURCES, VaultHolder, suggest_agent_id
from engram.mcp.models import Gap, SetupOut, StatusOut, WireOut
from engram.mcp.overview import domain_counts, synapse_count
from engram.mcp.profiles import Profile
from engram.mcp.registry import ADD_IDEMPOTENT, READ, OptionalText, Toolbox
from engram.team import gitstore

SUGGESTED_VAULT = "~/team-memory"
_SOURCE_LABELS = {
    "flag": "--vault / ENGRAM_VAULT",
    "cwd": "the current folder",
    "config": "the user config file",
    "setup": "setup",
}
_ACTOR_LABELS = {
    "flag": "--actor",
    "env": "ENGRAM_ACTOR",
    "config": "the user config file",
    "setup": "setup",
    "git": "git config user.name of the vault's repository",
    "login": "the login name",
}


def _actor_label(holder: VaultHolder) -> str:
    """Where the agent id came from, truthfully: with no vault yet, git was asked in the
    server's working folder, not in a vault's repository."""
    if holder.actor_source == "git" and holder.vault is None:
        return "git config user.name in the server's working folder (there is no vault yet)"
    return _ACTOR_LABELS[holder.actor_source]


def _call(vault_path: str, agent_id: str | None = None) -> str:
    args = f"vault_path={vault_path!r}"
    if agent_id:
        args += f", agent_id={agent_id!r}"
    return f"setup({args})"


def build_status(holder: VaultHolder, profile: Profile) -> StatusOut:
    """Everything ``status`` reports; also the guidance of unconfigured tools."""
    vault = holder.vault
    gaps: list[Gap] = []
    suggested_agent = suggest_agent_id(holder.actor, socket.gethostname())
    unnamed = holder.actor_source in DERIVED_SOURCES  # nobody chose an id for this agent
    agent_fix = suggested_agent if unnamed else None
    extra: dict[str, object] = {}
    if vault is None:
        target = holder.requested or SUGGESTED_VAULT
        problem = (
            f"the vault {holder.requested!r} asked for could not be opened"
            if holder.requested
            else "no vault is configured"
        )
        gaps.append(
            Gap(
                setting="vault",
                problem=problem,
                cost="every tool except status and setup refuses: the team's knowledge is "
                "invisible and nothing learned in this session is kept",
                fix=_call(target, agent_fix),
            )
        )
    else:
        root = str(vault.root)
        try:
            counts = domain_counts(vault)
            extra.update(
                items=sum(d.items for d in counts),
                synapses=synapse_count(vault),
                broken_files=len(vault.broken_files()),
                domains=counts,
            )
        except EngramError:
            pass
        try:
            repo = gitstore.is_work_tree(vault.root)
            driver = gitstore.merge_driver_status(vault.root) if repo else None
        except EngramError:
            repo, driver = False, None
        extra.update(git_repository=repo, merge_driver=bool(driver and driver.installed and driver.routed))
        with contextlib.suppress(EngramError):
            extra["scopes"] = [WireOut(**w.to_json("mcp")) for w in vault.scopes_status()]
        if not repo:
            gaps.append(
                Gap(
                    setting="git_repository",
                    problem="the vault is not in a git repository",
                    cost="no history to recover from, and no way to share it with teammates",
                    fix=_call(root, agent_fix),
                )
            )
        elif not (driver and driver.installed and driver.routed):
            gaps.append(
                Gap(
                    setting="merge_driver",
                    problem="engram's merge driver is not registered in this clone's git config"
                    if not (driver and driver.installed)
                    else ".gitattributes does not route items and synapses to engram's merge driver",
                    cost="concurrent edits from teammates merge as plain text, with conflict "
                    "markers instead of field-by-field merges",
                    fix=_call(root, agent_fix),
                )
            )
    if unnamed:
        gaps.append(
            Gap(
                setting="agent_id",
                problem=f"no agent id is set; writes are attributed to {holder.actor!r} "
                f"(from {_actor_label(holder)})",
                cost="teammates and the audit log cannot tell this agent's writes from the "
                "person's or from other agents'",
                fix=_call(str(vault.root) if vault else holder.requested or SUGGESTED_VAULT, suggested_agent),
            )
        )
    if vault is None:
        step = f"Call {gaps[0].fix} to create or adopt a vault (ask the user where, if unsure)."
    elif gaps:
        step = f"Optional: {gaps[0].fix} closes the first gap. The vault is usable now."
    else:
        step = "Nothing is missing. Look before you write: engram_search or engram_list first."
        wires = extra.get("scopes")
        unwired = [w for w in wires if not w.wired and w.fix] if isinstance(wires, list) else []
        if unwired:
            step += f" Also worth wiring: {unwired[0].name} ({unwired[0].fix}; see scopes)."
    return StatusOut(
        configured=vault is not None,
        vault=str(vault.root) if vault else None,
        vault_source=_SOURCE_LABELS.get(holder.vault_source or ""),
        agent_id=holder.actor,
        agent_id_source=_actor_label(holder),
        profile=profile,
        config_file=str(holder.config_file),
        gaps=gaps,
        next_step=step,
        **extra,  # type: ignore[arg-type]
    )


def register(box: Toolbox) -> None:
    @box.tool("status", title="Memory status and setup check", profile="minimal", annotations=READ, needs_vault=False)
    def status() -> StatusOut:
        """Report how this engram memory server is configured and what is missing.

        Use it first in a session, or when another tool answers setup_required: it shows
        the vault, the agent id writes are attributed to, the tool profile, what the vault
        holds, git and merge-driver health, and for each gap what it costs and the exact
        setup(...) call that fixes it.
        """
        return build_status(box.holder, box.profile)

    @box.tool(
        "setup", title="Create or adopt a memory vault", profile="minimal", annotations=ADD_IDEMPOTENT,
        needs_vault=False,
    )
    def setup(
        vault_path: Annotated[
            OptionalText,
            Field(description="Vault folder, absolute or ~/...; omit to keep the current one."),
        ] = None,
        agent_id: Annotated[
            OptionalText,
            Field(description="Who writes, e.g. 'claude-code@alice-laptop'."),
        ] = None,
        create: Annotated[
            bool, Field(description="Lay out a new vault if the folder holds none (false: adopt only).")
        ] = True,
        org_repo: Annotated[
            OptionalText,
            Field(description="The org vault repository (path or URL) many teams share; '' removes it."),
        ] = None,
        agentsync_repo: Annotated[
            OptionalText, Field(description="Repository of an agentsync board to capture from; '' removes it.")
        ] = None,
        context_keeper: Annotated[
            OptionalText, Field(description="A context-keeper .context/ folder to capture from; '' removes it.")
        ] = None,
    ) -> SetupOut:
        """Create or adopt an engram vault for this server and record the agent id.

        Use it when status() or a setup_required answer says a vault or an agent id is
        missing, with the call they suggest (ask the user for the folder when unsure).
        Like `engram init PATH`: lays out the vault, runs git init if needed, registers
        the merge driver, keeps existing files. Saved in the user config file (path and
        agent id, never secrets); applies from the next call, no restart. org_repo,
        agentsync_repo and context_keeper record the org vault and capture sources in the
        vault's engram.yaml. Safe to repeat. Not for browsing folders.
        """
        holder = box.holder
        if vault_path is None:
            if holder.vault is None:
                return _setup_out(box, created=False, message="No vault_path given and none is configured: nothing done.")
            vault_path = str(holder.vault.root)
        vault, created = holder.adopt(vault_folder(vault_path), agent_id=agent_id, create=create)
        what = "Laid out a new vault" if created else "Adopted the vault"
        wired = ""
        if any(v is not None for v in (org_repo, agentsync_repo, context_keeper)):
            changed = vault.configure_scopes(org_repo=org_repo, agentsync_repo=agentsync_repo,
                                             context_keeper=context_keeper)
            wired = " Wired the scopes and capture sources in engram.yaml (engram_sync shares it)." if changed else ""
        return _setup_out(box, created=created, message=f"{what}; tools use it from the next call on.{wired}")


def vault_folder(vault_path: str) -> Path:
    """The folder ``setup`` was given: absolute or ``~/...`` only. A relative path would
    resolve against the server's working folder, which the agent cannot see or choose."""
    try:
        path = Path(vault_path.strip()).expanduser() if "\x00" not in vault_path else Path()
    except RuntimeError:  # ~user with no such user
        path = Path()
    if not path.is_absolute():
        raise InvalidInput(
            f"vault_path {vault_path[:80]!r} is not an absolute path.",
            field="vault_path",
            hint=f"Pass an absolute path or one under ~, e.g. setup(vault_path={SUGGESTED_VAULT!r}).",
        )
    return path


def _setup_out(box: Toolbox, *, created: bool, message: str) -> SetupOut:
    status = build_status(box.holder, box.profile)
    return SetupOut(**status.model_dump(), created=created, message=message)
