"""Registering tools: profiles, annotations, descriptions, and the one error renderer.

Tool modules declare each tool once with :meth:`Toolbox.tool`, naming the smallest
profile it belongs to (see :mod:`engram.mcp.profiles`); the toolbox registers it with
the SDK only when the server's profile includes that one, wraps the body with
:func:`engram.mcp.errors.guarded` and the holder's lock, and passes the body's docstring
(cleaned) as the description the model reads.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from engram.mcp.context import VaultHolder
from engram.mcp.errors import SetupRequired, guarded
from engram.mcp.models import StatusOut
from engram.mcp.profiles import Profile, includes
from engram.vault import Vault

F = TypeVar("F", bound=Callable[..., Any])

# An optional free-text argument (omitted = None). The SDK json-decodes a string argument
# whose annotation is not exactly ``str`` (a workaround for clients that send lists as
# JSON text), which would turn content such as '{"a": 1}' or 'null' into a dict or None.
# So the SDK sees ``str`` (default None, never validated) while the type checker sees
# ``str | None``.
if TYPE_CHECKING:
    OptionalText = str | None
else:
    OptionalText = str

#: Annotation presets. Every engram tool works on the local vault only (closed world),
#: except sync, which talks to git remotes.
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ADD = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
ADD_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
NETWORK = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    profile: Profile


@dataclass
class Toolbox:
    """What tool modules register against: the server, the vault holder, the profile."""

    server: MCPServer
    holder: VaultHolder
    profile: Profile
    status: Callable[[], StatusOut]
    registered: list[ToolInfo] = field(default_factory=list)
    #: Every tool declared, including those the profile left out (for the catalog).
    declared: list[ToolInfo] = field(default_factory=list)

    def vault(self) -> Vault:
        """The vault, or :class:`SetupRequired` with the status guidance."""
        vault = self.holder.vault
        if vault is None:
            raise SetupRequired(self.status())
        return vault

    def tool(
        self,
        name: str,
        *,
        title: str,
        profile: Profile,
        annotations: ToolAnnotations,
        needs_vault: bool = True,
    ) -> Callable[[F], F]:
        """Declare a tool (the decorated body's docstring is its description).

        Unless ``needs_vault`` is False (status, setup), a call made before a vault is
        configured gets the first-contact guidance before its arguments are looked at.
        """

        def decorator(fn: F) -> F:
            info = ToolInfo(name, profile)
            self.declared.append(info)
            if not includes(self.profile, profile):
                return fn

            @functools.wraps(fn)
            def checked(*args: Any, **kwargs: Any) -> Any:
                if needs_vault:
                    self.vault()
                return fn(*args, **kwargs)

            body = guarded(name, checked)
            holder = self.holder

            @functools.wraps(body)  # the SDK follows __wrapped__ to fn's signature
            def locked(*args: Any, **kwargs: Any) -> CallToolResult:
                with holder.use():
                    return body(*args, **kwargs)

            self.server.add_tool(
                locked,
                name=name,
                title=title,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=annotations.model_copy(update={"title": title}),
            )
            self.registered.append(info)
            return fn

        return decorator
