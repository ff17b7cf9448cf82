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
