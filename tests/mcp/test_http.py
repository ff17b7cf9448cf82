"""`engram serve --http`: loopback only, DNS-rebinding protection, the optional bearer token."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.errors import InvalidInput
from engram.mcp.http import check_loopback
from engram.vault import Vault
from tests.mcp_helpers import engram_command, http_server, ok

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def post(url: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_only_loopback_hosts_are_accepted() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        check_loopback(host)
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        with pytest.raises(InvalidInput, match="loopback only"):
            check_loopback(host)
    proc = subprocess.run(
        engram_command("serve", "--http", "--host", "0.0.0.0"), capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2 and "refusing to listen on '0.0.0.0'" in proc.stderr


def test_dns_rebinding_is_refused(vault: Vault) -> None:
    with http_server(vault.root, dict(os.environ)) as url:
        assert post(url) == 200
        assert post(url, {"Host": "evil.example.com"}) == 421
        assert post(url, {"Origin": "http://evil.example.com"}) == 403


@pytest.mark.anyio
async def test_bearer_token(vault: Vault, anyio_backend: str) -> None:
    env = {**os.environ, "ENGRAM_MCP_TOKEN": "s3cret-token"}
    with http_server(vault.root, env) as url:
        assert post(url) == 401
        assert post(url, {"Authorization": "Bearer wrong"}) == 401
        assert post(url, {"Authorization": "Bearer s3cret-token"}) == 200
        headers = {"Authorization": "Bearer s3cret-token"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            made = ok(await client.call_tool("engram_create", {"title": "Over HTTP", "domain": "x"}))
    assert vault.get(made["id"]).title == "Over HTTP"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_an_empty_token_is_an_error_not_an_open_door(vault: Vault) -> None:
    for env_token, args in (("", ()), (None, ("--token", "")), (None, ("--token", "two words"))):
        env = {k: v for k, v in os.environ.items() if k != "ENGRAM_MCP_TOKEN"}
        if env_token is not None:
            env["ENGRAM_MCP_TOKEN"] = env_token
        proc = subprocess.run(
            engram_command("--vault", str(vault.root), "serve", "--http", "--port", "0", *args),
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(
            "error: the bearer token must be printable ASCII" if args[-1:] == ("two words",)
            else "error: the bearer token is empty, which would serve the vault without authentication."
        ), proc.stderr


def test_bad_json_over_http_gets_a_parse_error(vault: Vault) -> None:
    with http_server(vault.root, dict(os.environ)) as url:
        for body in ('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"\\ud800"}}', "[" * 20_000 + "]" * 20_000):
            request = urllib.request.Request(
                url, data=body.encode(), method="POST",
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(request, timeout=30)
            assert err.value.code == 400
            assert json.loads(err.value.read())["error"]["code"] == -32700


def test_slow_or_silent_connections_are_closed(vault: Vault) -> None:
    """Without a request deadline each of these connections stays open for ever (the
    generous socket timeout would fail the test); no timing is asserted."""
    import socket

    with http_server(vault.root, dict(os.environ), "--request-timeout", "1") as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        for sent in (
            b"",  # connects and says nothing
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # headers that never end
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{",  # a body that never ends
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
                conn.sendall(sent)
                assert conn.recv(100) == b"", sent  # closed by the server, nothing answered
        assert post(url) == 200  # a request that arrives in time is served as ever
