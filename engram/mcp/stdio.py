"""The stdio transport: the SDK's, plus an answer for every line it cannot read.

The SDK's stdio reader turns a line that is not a valid JSON-RPC message into an exception
on the read stream, and the server drops it without a reply: a client that sent a lone
surrogate (``"\\ud800"``) or 20,000-deep JSON waits forever. :class:`AnswerBadInput`
wraps the read stream and answers each such line with a JSON-RPC error — ``-32700``
(parse error) for text that is not JSON the SDK can read, ``-32600`` (invalid request)
for JSON that is not a message — carrying the request's ``id`` when the line still shows
one, else ``null`` as JSON-RPC 2.0 says. The server keeps serving the next line.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError
from pydantic import ValidationError

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _request_id(value: Any) -> str | int | None:
    if isinstance(value, dict):
        rid = value.get("id")
        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
            return rid
    return None


def _lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        part = stack.pop()
        if isinstance(part, str):
            try:
                part.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(part, dict):
            stack.extend([*part.keys(), *part.values()])
        elif isinstance(part, list):
            stack.extend(part)
    return False


def error_for(exc: ValidationError) -> JSONRPCError:
    """The JSON-RPC error answering the line ``exc`` refused."""
    errors = exc.errors(include_url=False)
    first: Mapping[str, Any] = errors[0] if errors else {}
    given = first.get("input")
    if first.get("type") == "json_invalid":
        rid, reason = None, str(first.get("msg", "invalid JSON")).removeprefix("Invalid JSON: ")
        if isinstance(given, str):
            try:  # the SDK's parser refuses what Python's reads: a lone surrogate
                parsed = json.loads(given)
            except (ValueError, RecursionError):
                parsed = None  # not JSON, or nested too deep to read: no id to answer to
            rid = _request_id(parsed)
            if _lone_surrogate(parsed):
                reason = "a string holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text"
        return JSONRPCError(
            jsonrpc="2.0",
            id=rid,
            error=ErrorData(code=PARSE_ERROR, message=f"Parse error: {reason}."),
        )
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "the message"
    return JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(given),
        error=ErrorData(
            code=INVALID_REQUEST,
            message=f"Invalid request: {where}: {first.get('msg', 'not a JSON-RPC 2.0 message')}.",
        ),
    )


class AnswerBadInput:
    """A read stream that answers unreadable lines itself and yields only messages."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        # The dispatcher reads the sender's context from the stream it iterates.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, ValidationError):
                return item  # type: ignore[no-any-return]
            answer = error_for(item)
            logger.warning("answered an unreadable message: %s", answer.error.message)
            await self._write.send(SessionMessage(answer))

    def __aiter__(self) -> AnswerBadInput:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerBadInput:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _serve(server: MCPServer) -> None:
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(
            AnswerBadInput(read_stream, write_stream),
            write_stream,
            lowlevel.create_initialization_options(),
        )


def serve_stdio(server: MCPServer) -> None:
    """Serve over stdin/stdout until the client closes the stream (blocking)."""
    anyio.run(_serve, server)
