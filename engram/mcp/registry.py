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
from pydantic import ValidationError

from engram.mcp.context import VaultHolder
from engram.mcp.errors import SetupRequired, guarded, render_invalid
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
#: Writes a file outside the vault, replacing an earlier one of its kind (engram_export).
REPLACE_FILE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
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
    #: Publish output schemas and send structured content (see :mod:`engram.mcp.profiles`).
    structured: bool = False
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

            body = guarded(name, checked, structured=self.structured)
            holder = self.holder

            @functools.wraps(body)  # the SDK follows __wrapped__ to fn's signature
            def locked(*args: Any, **kwargs: Any) -> CallToolResult:
                if _INVALID in kwargs:
                    invalid: CallToolResult = kwargs[_INVALID]
                    return invalid
                with holder.use():
                    return body(*args, **kwargs)

            self.server.add_tool(
                locked,
                name=name,
                title=title,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=annotations.model_copy(update={"title": title}),
                structured_output=self.structured,
            )
            _adapt(self.server, name)
            self.registered.append(info)
            return fn

        return decorator


def _adapt(server: MCPServer, name: str) -> None:
    """Two things the SDK does its own way, done engram's way for the tool just added.

    Schemas are published without what carries nothing for a model — pydantic's
    ``title`` on every field, ``default: null``, and (in output schemas, whose ``None``
    fields are never sent) the ``null`` branch of optional fields and
    ``additionalProperties: false`` — which halves what tools/list costs. And arguments
    that fail validation come back as :func:`engram.mcp.errors.render_invalid` renders
    them: the SDK's own message is pydantic's text with a URL.
    """
    tool = server._tool_manager.get_tool(name)
    assert tool is not None
    meta = tool.fn_metadata
    if meta.output_schema is not None:
        meta.output_schema = compact_schema(meta.output_schema, output=True)
    tool.parameters = compact_schema(tool.parameters, output=False)
    validate = meta.validate_arguments
    schema = tool.parameters

    def validate_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return validate(arguments)
        except ValidationError as exc:
            return {_INVALID: render_invalid(name, exc, schema)}

    object.__setattr__(meta, "validate_arguments", validate_arguments)  # an instance hook
    if tool.resolved_params:
        # The SDK runs a tool's resolvers (engram_learn's sampling question) on the
        # validated arguments before the body: on arguments that failed validation they
        # would look up what is not there and crash. Answer the refusal before them.
        run = tool.run

        async def run_checked(arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
            checked = validate_arguments(arguments)
            if _INVALID in checked:
                invalid: CallToolResult = checked[_INVALID]
                return meta.convert_result(invalid) if convert_result else invalid
            return await run(arguments, context, convert_result)

        object.__setattr__(tool, "run", run_checked)


#: The keyword a failed validation hands the tool body instead of its arguments.
_INVALID = "__engram_invalid__"


def compact_schema(schema: Any, *, output: bool) -> Any:
    """``schema`` without the keys :func:`_adapt` names; same JSON accepted on input."""
    if isinstance(schema, list):
        return [compact_schema(s, output=output) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if output and key == "additionalProperties" and value is False:
            continue
        if key in ("properties", "$defs"):
            out[key] = {k: compact_schema(v, output=output) for k, v in value.items()}
        else:
            out[key] = compact_schema(value, output=output)
    branches = out.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0].get("type"), str):
            # Output: None is never sent, so the null branch is dead. Input: the same
            # schema, shorter ({"type": ["string", "null"]} accepts what the anyOf did).
            del out["anyOf"]
            nullable = [kept[0]["type"], "null"]
            out = {**kept[0], **out, "type": kept[0]["type"] if output else nullable}
    return out
