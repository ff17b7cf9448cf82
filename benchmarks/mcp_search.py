"""``engram_search`` as an agent calls it: one ``engram serve`` over stdio, the official
``mcp`` client, the vault's own settings, nothing but the query and a limit.

:func:`stdio_search` starts the server on a vault and yields a blocking ``search``
function (the client runs in an event loop on a portal thread, so the harness stays
plain code). Every call goes through JSON-RPC framing, argument validation, the search
with usage recording on, and the answer's JSON text — what an agent gets, including
the heat earlier answers leave.

Before the server starts, every item gets its vectors (:func:`embedded`), as a vault has
them once ``engram serve`` has run for a while or after ``engram reindex --embed``: the
figures are those of a vault in use, not of the first seconds after a fresh start, when
the background fill is still going and searches say ``meaning: partial``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

#: ``search(query, **arguments)`` → the structured answer of ``engram_search``.
Search = Callable[..., dict[str, Any]]


#: ``call(tool, arguments)`` → the structured answer of any tool.
Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def embedded(root: Path) -> int:
    """Embed the items of the vault at ``root`` that have no vector yet, with the models
    its settings turn on (none when both are off); how many were embedded."""
    from engram.errors import InvalidInput
    from engram.vault import Vault

    with Vault.open(root, actor="bench") as vault:
        try:
            return vault.embed_all()
        except InvalidInput:  # recall.meaning and recall.semantic both 0: nothing to embed
            return 0


@contextmanager
def stdio_session(root: Path, actor: str = "bench") -> Iterator[Call]:
    """A live stdio session on the vault at ``root`` (default profile) as ``actor``;
    yields :data:`Call`. A tool error is raised as RuntimeError with its text."""
    embedded(root)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from engram.cli import main; main()", "--vault", str(root), "--actor", actor, "serve"],
        env=dict(os.environ),
    )
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(
        Client(params, read_timeout_seconds=600)
    ) as client:

        def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = portal.call(client.call_tool, tool, arguments)
            if result.is_error:
                block = result.content[0]
                raise RuntimeError(block.text if isinstance(block, TextContent) else str(block))
            return answer_of(result)

        yield call


@contextmanager
def stdio_search(root: Path) -> Iterator[Search]:
    """A live stdio session on the vault at ``root`` (default profile); yields :data:`Search`."""
    with stdio_session(root) as call:

        def search(query: str, **arguments: Any) -> dict[str, Any]:
            return call("engram_search", {"query": query, **arguments})

        yield search


def answer_of(result: CallToolResult) -> dict[str, Any]:
    """A tool's answer: the JSON of its text block (structured content, when the server
    sends it, is the same JSON)."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    answer: dict[str, Any] = json.loads(block.text)
    return answer


def hit_ids(answer: dict[str, Any]) -> list[str]:
    """The ids of an answer's hits, best first (none when it abstained)."""
    return [str(h["id"]) for h in answer.get("hits", [])]
