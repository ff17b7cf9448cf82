"""Long steps say what they do, on a terminal only (issue 28).

`engram init` of a big folder indexes every note (about 10 s for 6k) and `engram doctor`
reads every note twice; on a terminal each step that runs over a second draws the bar
`engram import` draws, and a pipe, a log or a test's captured output gets nothing.
:func:`engram.cli.terminal.terminal_progress` decides; these tests give it real
pseudo-terminals, real pipes and real files, and run the real CLI on a pty
(``tests/terminal_helpers.py``), with the one-second threshold lowered where a small
vault's steps are too quick to reach it.
"""

from __future__ import annotations

import os
import pty
import subprocess
import time
from pathlib import Path

from engram.cli.terminal import LateBar, terminal_progress
from tests.terminal_helpers import cli_command, on_terminal


def folder_of_notes(root: Path, count: int = 40) -> Path:
    root.mkdir(parents=True)
    for n in range(count):
        (root / f"Note {n}.md").write_text(f"# Note {n}\nSee [[Note {(n + 1) % count}]].\n")
    return root


def test_init_draws_indexing_on_a_terminal_and_nothing_on_a_pipe(tmp_path: Path) -> None:
    piped_folder = folder_of_notes(tmp_path / "piped")
    piped = subprocess.run(cli_command("init", str(piped_folder)), capture_output=True, text=True, check=False)
    assert piped.returncode == 0, piped.stderr
    assert "indexed 40 note(s)" in piped.stdout
    assert "indexing" not in piped.stderr and "%" not in piped.stderr

    code, out, drawn = on_terminal(cli_command("init", str(folder_of_notes(tmp_path / "watched")), after=0.0))
    assert code == 0, out
    assert "indexed 40 note(s)" in out
    assert b"indexing notes" in drawn and b"100%" in drawn

    code, out, drawn = on_terminal(cli_command("init", str(folder_of_notes(tmp_path / "quick"))))
    assert code == 0 and "indexed 40 note(s)" in out
    assert drawn.strip() == b"", drawn  # 40 notes index in well under the second a bar waits for


def test_json_output_draws_nothing_even_on_a_terminal(tmp_path: Path) -> None:
    folder = folder_of_notes(tmp_path / "notes")
    code, out, drawn = on_terminal(cli_command("init", str(folder), "--json", after=0.0))
    assert code == 0 and '"items": 40' in out
    code, out, drawn = on_terminal(cli_command("--vault", str(folder), "doctor", "--json", after=0.0))
    assert code in (0, 1) and '"problems"' in out
    assert drawn.strip() == b"", drawn


def test_reindex_draws_indexing_on_a_terminal(tmp_path: Path) -> None:
    folder = folder_of_notes(tmp_path / "notes")
    assert subprocess.run(cli_command("init", str(folder)), capture_output=True, check=False).returncode == 0
    code, out, drawn = on_terminal(cli_command("--vault", str(folder), "reindex", after=0.0))
    assert code == 0 and "indexed" in out
    assert b"indexing notes" in drawn and b"100%" in drawn


def test_the_decision_follows_the_stream(tmp_path: Path) -> None:
    with (tmp_path / "log.txt").open("w") as log:
        assert terminal_progress(log) is None
    reader, writer = os.pipe()
    with os.fdopen(writer, "w") as pipe:
        assert terminal_progress(pipe) is None
    os.close(reader)
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        assert terminal_progress(terminal) is not None
    os.close(leader)


def read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            return out
        if not chunk:
            return out
        out += chunk


def test_a_bar_shows_only_once_its_step_has_run_long_enough(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w") as terminal, LateBar("checking items", 4, terminal, after=0.3) as shown:
            shown.update(1)
            terminal.flush()
            assert read_all(leader) == b""  # under the threshold: nothing drawn
            time.sleep(0.35)
            shown.update(1)
            terminal.flush()
            late = read_all(leader)
            assert b"checking items" in late and b"50%" in late  # counts what was done before it showed
            shown.update(2)
        assert b"100%" in read_all(leader)
    finally:
        os.close(leader)
