"""Protocol utilities beyond tools: argument completion and the legacy logging level.

- ``completion/complete`` completes the ``id`` of ``engram://{id}`` from what the vault
  holds (an id prefix, or the start of a title), and the ``topic`` of the ``recall``
  prompt from the vault's domain names. Anything else completes to nothing.
- ``logging/setLevel`` (clients of the handshake-era protocol send it) is accepted and
  remembered. engram sends no log notifications to clients — its logs go to stderr —
  so there is nothing to filter; accepting it keeps those clients from failing.

Both go through the SDK's low-level ``add_request_handler`` (typed, unlike the
``MCPServer.completion`` decorator); the SDK documents it as the way to re-provide a
spec method the 2026 revision removed, such as ``logging/setLevel``.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
)

from engram.mcp.context import VaultHolder
from engram.mcp.overview import complete_ids, domain_counts

MAX_COMPLETIONS = 100


def register(server: MCPServer, holder: VaultHolder) -> None:
    def complete(ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument) -> list[str]:
        with holder.use() as vault:
            if vault is None:
                return []
            if isinstance(ref, ResourceTemplateReference) and ref.uri == "engram://{id}" and argument.name == "id":
                return complete_ids(vault, argument.value, MAX_COMPLETIONS)
            if isinstance(ref, PromptReference) and ref.name == "recall" and argument.name == "topic":
                prefix = argument.value.casefold()
                names = [d.domain for d in domain_counts(vault) if d.domain]
                return [n for n in names if n.casefold().startswith(prefix)][:MAX_COMPLETIONS]
            return []

    async def handle_completion(ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        values = await anyio.to_thread.run_sync(complete, params.ref, params.argument)
        return CompleteResult(completion=Completion(values=values, has_more=len(values) >= MAX_COMPLETIONS))

    levels: dict[str, str] = {}

    async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        levels["level"] = params.level
        return EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("completion/complete", CompleteRequestParams, handle_completion)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
