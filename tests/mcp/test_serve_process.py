"""`engram serve` as a real process: what it refuses before serving, and a stdio session
whose tool set comes from the vault's own setting and whose writes carry --actor.

A refusal at start is one ``error:`` line and exit 2 — a client that launched the
server shows the user its stderr — and leaves the vault as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from engram.vault import Vault
from tests.adapter_helpers import changed, tree
from tests.mcp_helpers import engram_command, error, ok


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("args", "env", "fragment"),
    [
        ([], {"ENGRAM_MCP_PROFILE": "huge"}, "error: unknown tool profile 'huge'. Use one of: minimal, standard, full."),
        (["--http", "--host", "0.0.0.0", "--port", "0"], {}, "error: "),
        (["--http", "--port", "0"], {"ENGRAM_MCP_TOKEN": ""}, "error: "),
    ],
    ids=["unknown-profile", "not-loopback", "empty-token"],
)
def test_serve_refuses_at_start_in_one_line(vault: Vault, args: list[str], env: dict[str, str], fragment: str) -> None:
    before = tree(vault.root)
    proc = subprocess.run(
        engram_command("--vault", str(vault.root), "serve", *args), env={**os.environ, **env},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(fragment), proc.stderr
    assert "Traceback" not in proc.stderr
    assert changed(before, tree(vault.root)) == []


@pytest.mark.anyio
async def test_the_vault_setting_chooses_the_tools_and_actor_after_serve_names_the_writer(vault: Vault) -> None:
    settings = vault.root / "engram.yaml"
    settings.write_text(settings.read_text(encoding="utf-8") + "\nmcp:\n  profile: minimal\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from engram.cli import main; main()", "serve", "--vault", str(vault.root), "--actor", "agent-9"],
        env=dict(os.environ),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "engram_create" in names and "engram_delete" not in names and "engram_reindex" not in names
        assert ok(await client.call_tool("status", {}))["profile"] == "minimal"
        made = ok(await client.call_tool("engram_create", {"title": "Written over stdio", "content": "x", "domain": "ops"}))
        assert "Unknown tool" in error(await client.call_tool("engram_delete", {"ref": made["id"]}))
        missing = error(await client.call_tool("engram_learn", {}))
        assert missing.startswith("invalid_input: engram_learn got arguments it cannot use: content is required.")
    item = vault.get(made["id"])
    assert item.created_by == "agent-9" and (vault.root / str(item.path)).is_file()


def test_a_reader_that_goes_away_ends_the_command_quietly(vault: Vault) -> None:
    """`engram list | head`: the reader is gone before the output; exit 141, no traceback."""
    vault.create("Listed item", "body", domain=["ops"])
    for argv in (["list"], ["export", "--format", "jsonl"]):
        proc = subprocess.Popen(engram_command("--vault", str(vault.root), *argv),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # long before the command writes: every write meets a closed pipe
        try:
            code = proc.wait(timeout=60)
            err = proc.stderr.read().decode()
        finally:
            proc.stderr.close()
        assert code == 141, (argv, code, err)
        assert "Traceback" not in err and "internal error" not in err and "Exception ignored" not in err
