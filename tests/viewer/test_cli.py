"""`engram viewer` as a person starts it: a real process, its printed address, its token."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from engram.vault import Vault
from tests.mcp_helpers import engram_command


def status(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return int(reply.status), reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_viewer_command_serves_the_vault_until_interrupted(vault: Vault, tmp_path: Path) -> None:
    vault.create("Seen through the command", "body", domain=["cli"])
    env = {**os.environ, "ENGRAM_VIEWER_TOKEN": "tok-123"}
    proc = subprocess.Popen(
        engram_command("--vault", str(vault.root), "viewer", "--port", "0"),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+/) \(token required", line)
        assert match, line
        url = match.group(1)
        assert "tok-123" not in line  # the token is never printed
        assert status(url)[0] == 401
        code, page = status(url + "items", {"Authorization": "Bearer tok-123"})
        assert code == 200 and "Seen through the command" in page
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stderr.close()
    assert proc.returncode in (0, 130, -signal.SIGINT)


def test_a_port_in_use_is_a_clear_error(vault: Vault) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            engram_command("--vault", str(vault.root), "viewer", "--port", str(port)),
            capture_output=True, text=True, timeout=60, check=False,
        )
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_empty_viewer_token_is_an_error_not_an_open_viewer(vault: Vault) -> None:
    for env_token, args in (("", ()), (None, ("--token", "")), (None, ("--token", "two words"))):
        env = {k: v for k, v in os.environ.items() if k != "ENGRAM_VIEWER_TOKEN"}
        if env_token is not None:
            env["ENGRAM_VIEWER_TOKEN"] = env_token
        proc = subprocess.run(
            engram_command("--vault", str(vault.root), "viewer", "--port", "0", *args),
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        assert proc.returncode == 2, proc.stderr
        expected = (
            "error: the bearer token must be printable ASCII" if args[-1:] == ("two words",)
            else "error: the bearer token is empty, which would serve the vault without authentication."
        )
        assert proc.stderr.startswith(expected), proc.stderr
        assert "ENGRAM_VIEWER_TOKEN" in proc.stderr or args[-1:] == ("two words",)  # the hint names its variable


def test_slow_or_silent_viewer_connections_are_closed(vault: Vault) -> None:
    """Without a request deadline each connection stays open for ever (the generous
    socket timeout would fail the test); no timing is asserted."""
    import socket

    env = {k: v for k, v in os.environ.items() if k != "ENGRAM_VIEWER_TOKEN"}
    proc = subprocess.Popen(
        engram_command("--vault", str(vault.root), "viewer", "--port", "0", "--request-timeout", "1"),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stderr is not None
    try:
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())
        assert match
        port = int(match.group(1))
        for sent in (
            b"",  # connects and says nothing
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # headers that never end
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
                conn.sendall(sent)
                assert conn.recv(100) == b"", sent  # closed by the server, nothing answered
        assert status(f"http://127.0.0.1:{port}/")[0] == 200  # a request in time is served
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
