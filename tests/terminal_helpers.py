"""Run the real CLI with its standard error on a pseudo-terminal, as a person's shell has it.

Progress bars are drawn only on a terminal (:func:`engram.cli.terminal.terminal_progress`),
so a test that pipes standard error sees none; these helpers give the process a real
``pty`` and read back what it drew. ``after`` lowers the one-second threshold a bar waits
for (:data:`engram.cli.terminal.BAR_AFTER`) in that process only, so a small vault's
quick steps draw too; everything else is the CLI as shipped.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path


def cli_command(*args: str, after: float | None = None) -> list[str]:
    setup = "" if after is None else f"import engram.cli.terminal as t; t.BAR_AFTER = {after!r}; "
    return [sys.executable, "-c", setup + "from engram.cli import main; main()", *args]


def on_terminal(command: list[str], cwd: Path | None = None) -> tuple[int, str, bytes]:
    """Run ``command`` with standard error on a pseudo-terminal: (exit code, standard
    output, everything drawn on the terminal)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=follower, text=True)
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            drawn += chunk
        out, _ = proc.communicate(timeout=120)
    finally:
        os.close(leader)
    return proc.returncode, out, drawn
