"""Which vault a server serves, who it writes as, and the machine-local file setup writes.

A server process serves at most one vault at a time, held by :class:`VaultHolder`. At
start the vault is looked up in this order (first hit wins):

1. ``--vault`` / ``ENGRAM_VAULT`` (``source="flag"``);
2. the vault at or above the current folder (``"cwd"``);
3. the ``vault`` key of the user config file (``"config"``).

No hit is not an error: the server starts in first-contact mode and every tool but
``status`` and ``setup`` answers with guidance. ``setup`` opens (or lays out) a vault and
swaps it in under the holder's lock, so it takes effect on the next call, no restart.

The agent id (recorded as ``createdBy``/``updatedBy`` and in the audit log) comes from
``--actor`` (``source="flag"``), else ``ENGRAM_ACTOR`` (``"env"``), else the config
file's ``agentId`` (``"config"``), else ``git config user.name`` of the vault's
repository (``"git"``), else the login name (``"login"``); ``status`` says which.

Every vault a holder serves acts as an agent session
(:attr:`engram.items.state.VaultState.agent_session`): in a vault whose ``engram.yaml``
has no ``roles``, its actor is a writer — it changes, retires and deletes only its own
items — where a person at the CLI is a curator (see :mod:`engram.trust.roles`).

The user config file is ``$XDG_CONFIG_HOME/engram/mcp.yaml`` (``~/.config/...``): two
keys, ``vault`` and ``agentId``. It holds no secrets and is written atomically.

Invariant: tool bodies reach the vault only through :meth:`VaultHolder.use`, which holds
a process-local lock for the call, so a ``setup`` never swaps the vault out from under a
running call and calls within one process do not interleave. Processes still coordinate
through the vault's own file lock.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from engram.errors import EngramError, InvalidInput, StorageError, VaultNotFound
from engram.items.state import resolve_actor
from engram.store.fsio import atomic_write
from engram.team.gitstore import ensure_merge_driver
from engram.vault import Vault
from mergedriver import codec

V = TypeVar("V", Vault, Vault | None)
CONFIG_NAME = "mcp.yaml"
#: Actor sources that nobody chose for this server: they follow the vault's repository.
DERIVED_SOURCES = frozenset({"git", "login"})
MAX_AGENT_ID_CHARS = 100


def default_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "engram" / CONFIG_NAME


@dataclass(frozen=True, slots=True)
class UserConfig:
    """The machine-local settings ``setup`` records (no secrets)."""

    vault: str | None = None
    agent_id: str | None = None

    @classmethod
    def load(cls, path: Path) -> UserConfig:
        """Read the file; a missing or unreadable file is an empty config (never fatal)."""
        try:
            data = codec.load_yaml(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, codec.CodecError):
            return cls()
        if not isinstance(data, dict):
            return cls()
        vault, agent = data.get("vault"), data.get("agentId")
        return cls(
            vault=vault if isinstance(vault, str) and vault else None,
            agent_id=agent if isinstance(agent, str) and agent else None,
        )

    def save(self, path: Path) -> None:
        data: dict[str, Any] = {}
        if self.vault:
            data["vault"] = self.vault
        if self.agent_id:
            data["agentId"] = self.agent_id
        text = "# Written by engram's MCP setup tool. No secrets: a path and an agent id.\n"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create {path.parent}: {exc.strerror}.", hint="Check permissions."
            ) from exc
        atomic_write(path, (text + codec.dump_yaml(data)).encode("utf-8"))


def check_agent_id(value: str) -> str:
    agent = value.strip()
    if not agent or len(agent) > MAX_AGENT_ID_CHARS or not agent.isprintable():
        raise InvalidInput(
            f"agent_id must be 1-{MAX_AGENT_ID_CHARS} printable characters on one line, "
            f"not {value[:40]!r}.",
            field="agent_id",
            hint="e.g. 'claude-code@alice-laptop'.",
        )
    return agent


def suggest_agent_id(name: str, host: str) -> str:
    """An agent id for ``name`` (a person's or login name) on ``host``, shaped like the
    examples (``dana-ortiz-agent@laptop``): letters, digits, ``.``, ``_`` and ``-`` only,
    so it needs no quoting in ``ENGRAM_ACTOR``, ``--actor`` or ``roles``, and always
    within what :func:`check_agent_id` accepts."""

    def word(text: str, most: int) -> str:
        kept = "".join(c if c.isalnum() or c in "._-" else "-" for c in text.casefold())
        return re.sub(r"-{2,}", "-", kept).strip("-.")[:most].strip("-.")

    place = word(host, 40) or "localhost"
    suffix = f"-agent@{place}"
    return check_agent_id((word(name, MAX_AGENT_ID_CHARS - len(suffix)) or "someone") + suffix)


class VaultHolder:
    """The vault a server serves (or none yet), and who it writes as."""

    def __init__(
        self,
        vault: Vault | None,
        *,
        vault_source: str | None,
        actor: str,
        actor_source: str,
        config_file: Path,
        requested: str | None = None,
        on_change: Callable[[Vault], None] | None = None,
    ) -> None:
        self._vault = _as_agent(vault)
        self.vault_source = vault_source if vault is not None else None
        self.actor = actor
        self.actor_source = actor_source
        self.config_file = config_file
        #: A vault path that was asked for but could not be opened (shown by status).
        self.requested = requested
        self.lock = threading.RLock()
        self.on_change = on_change

    @property
    def vault(self) -> Vault | None:
        return self._vault

    @contextmanager
    def use(self) -> Iterator[Vault | None]:
        """Hold the process-local lock for one call; yields the vault or None."""
        with self.lock:
            yield self._vault

    def adopt(self, path: Path, *, agent_id: str | None, create: bool) -> tuple[Vault, bool]:
        """Open or lay out the vault at ``path``, swap it in, record it; (vault, created)."""
        path = path.expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        _refuse_unsafe(path)
        agent = check_agent_id(agent_id) if agent_id is not None else None
        existed = _looks_like_vault(path)
        if not existed and not create:
            raise VaultNotFound(
                f"there is no vault at {path}.",
                hint="Pass create=true to lay one out there, or give the path of an existing vault.",
            )
        with self.lock:
            if agent is not None:
                self.actor, self.actor_source = agent, "setup"
            derived = self.actor_source in DERIVED_SOURCES
            vault = _as_agent(Vault.init(path, actor=None if derived else self.actor))
            if derived:  # the new vault's repository may name someone else
                self.actor, self.actor_source = vault.actor, vault.state.actor_source
            vault.refresh()
            old, self._vault = self._vault, vault
            self.vault_source, self.requested = "setup", None
            if old is not None:
                old.close()
            recorded = UserConfig.load(self.config_file)
            UserConfig(
                vault=str(vault.root),
                agent_id=agent if agent is not None else recorded.agent_id,
            ).save(self.config_file)
            if self.on_change is not None:
                self.on_change(vault)
            return vault, not existed

    def close(self) -> None:
        with self.lock:
            if self._vault is not None:
                self._vault.close()


def _as_agent(vault: V) -> V:
    """``vault``, marked as served to an agent (its role without ``roles`` is a writer's)."""
    if vault is not None:
        vault.state.agent_session = True
    return vault


def _looks_like_vault(path: Path) -> bool:
    return (path / "engram.yaml").is_file() or (path / ".engram").is_dir()


def _refuse_unsafe(path: Path) -> None:
    """Setup lays files into the folder and may `git init` it: never the root or $HOME."""
    resolved = path.resolve()
    if resolved == Path(resolved.anchor) or resolved == Path.home().resolve():
        raise InvalidInput(
            f"{resolved} is too broad for a vault (setup would write into it and may git-init it).",
            field="vault_path",
            hint="Use a folder of its own, e.g. ~/team-memory.",
        )
    if resolved.exists() and not resolved.is_dir():
        raise InvalidInput(f"{resolved} is a file, not a folder.", field="vault_path", hint="Pick a folder.")


def open_holder(
    vault_path: str | None,
    actor: str | None,
    *,
    config_file: Path | None = None,
    on_change: Callable[[Vault], None] | None = None,
) -> VaultHolder:
    """Resolve the vault and the agent id as the module docstring describes."""
    config_file = config_file or default_config_file()
    config = UserConfig.load(config_file)
    actor_value: str | None
    if actor and actor.strip():
        actor_value, actor_source = actor.strip(), "flag"
    elif os.environ.get("ENGRAM_ACTOR", "").strip():
        actor_value, actor_source = os.environ["ENGRAM_ACTOR"].strip(), "env"
    elif config.agent_id:
        actor_value, actor_source = config.agent_id, "config"
    else:
        actor_value, actor_source = None, ""  # the vault's repository decides, below

    vault: Vault | None = None
    source: str | None = None
    requested: str | None = None
    candidates: list[tuple[str, str | None]] = []
    if vault_path:
        candidates.append(("flag", vault_path))
    else:
        candidates.append(("cwd", None))
        if config.vault:
            candidates.append(("config", config.vault))
    for where, candidate in candidates:
        try:
            vault = Vault.open(Path(candidate).expanduser() if candidate else None, actor=actor_value)
        except EngramError:
            if candidate is not None:
                requested = candidate
            continue
        source = where
        break
    if vault is not None:
        ensure_merge_driver(vault.root)  # a fresh clone of a vault merges field by field at once
    if actor_value is None:
        if vault is not None:
            actor_value, actor_source = vault.actor, vault.state.actor_source
        else:
            actor_value, actor_source = resolve_actor()
    return VaultHolder(
        vault,
        vault_source=source,
        actor=actor_value,
        actor_source=actor_source,
        config_file=config_file,
        requested=requested,
        on_change=on_change,
    )


def holder_for(vault: Vault, *, config_file: Path | None = None) -> VaultHolder:
    """A holder around an already open vault (tests, embedding)."""
    return VaultHolder(
        vault,
        vault_source="flag",
        actor=vault.actor,
        actor_source=vault.state.actor_source,
        config_file=config_file or default_config_file(),
    )
