"""The driver shim's contract: ``python -m mergedriver %O %A %B %L %P`` as git runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mergedriver import codec
from mergedriver.__main__ import main
from tests.merge_helpers import engram

ALICE = {"updatedBy": "alice", "updatedAt": "2026-06-22T09:00:00.000Z", "version": 2}
BOB = {"updatedBy": "bob", "updatedAt": "2026-06-22T10:00:00.000Z", "version": 2}
REL = "engineering/python/item.md"


def sides(tmp: Path, base: bytes, ours: bytes, theirs: bytes) -> list[str]:
    paths = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        path = tmp / f".merge_file_{name}"
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def run_driver(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mergedriver", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    (tmp_path / ".engram").mkdir()
    return tmp_path


def test_a_clean_merge_writes_ours_in_place_exits_0_and_logs_a_record(worktree: Path) -> None:
    base = engram(retrievalCount=1)
    b, o, t = sides(worktree, base, engram(retrievalCount=2, **ALICE), engram(retrievalCount=4, **BOB))
    proc = run_driver([b, o, t, "7", REL], worktree)
    assert proc.returncode == 0, proc.stderr
    assert codec.parse_engram(Path(o).read_bytes())[0]["retrievalCount"] == 5
    records = [json.loads(line) for line in (worktree / ".engram" / "merges.jsonl").read_text().splitlines()]
    assert len(records) == 1
    assert records[0]["path"] == REL and records[0]["via"] == "driver" and records[0]["ok"]
    assert records[0]["strategies"]["retrievalCount"] == "add"


def test_a_kept_conflict_exits_0_with_a_notice_and_a_flag(worktree: Path) -> None:
    base = engram("the answer is 41\n")
    b, o, t = sides(worktree, base, engram("the answer is 42\n", **ALICE), engram("the answer is 43\n", **BOB))
    proc = run_driver([b, o, t, "7", REL], worktree)
    assert proc.returncode == 0
    assert "kept 1 conflict(s) for review" in proc.stderr
    meta, content, _ = codec.parse_engram(Path(o).read_bytes())
    assert "> the answer is 42" in content and "> the answer is 43" in content
    assert meta["mergeConflicts"]


def test_strict_mode_makes_a_kept_conflict_stop_git(worktree: Path) -> None:
    base = engram("the answer is 41\n")
    b, o, t = sides(worktree, base, engram("the answer is 42\n", **ALICE), engram("the answer is 43\n", **BOB))
    proc = subprocess.run(
        [sys.executable, "-m", "mergedriver", b, o, t, "7", REL], cwd=worktree, capture_output=True,
        text=True, check=False, env={**os.environ, "ENGRAM_MERGE_STRICT": "1"},
    )
    assert proc.returncode == 1
    assert "> the answer is 43" in codec.parse_engram(Path(o).read_bytes())[1]


def test_unparseable_input_falls_back_to_markers_and_exits_1(worktree: Path) -> None:
    base = engram("one\n")
    broken = base.replace(b"title: ", b"title: [unclosed ") + b"theirs line\n"
    b, o, t = sides(worktree, base, engram("one\nours line\n", **ALICE), broken)
    proc = run_driver([b, o, t, "9", REL], worktree)
    assert proc.returncode == 1
    out = Path(o).read_bytes()
    assert b"<" * 9 + b" ours" in out and b"ours line" in out and b"theirs line" in out
    assert "merged as text with conflict markers" in proc.stderr
    record = json.loads((worktree / ".engram" / "merges.jsonl").read_text())
    assert record["kind"] == "fallback" and not record["ok"]


def test_a_missing_side_leaves_ours_untouched_and_exits_1(worktree: Path) -> None:
    b, o, _ = sides(worktree, engram(), engram(**ALICE), engram(**BOB))
    before = Path(o).read_bytes()
    proc = run_driver([b, o, str(worktree / "nope"), "7", REL], worktree)
    assert proc.returncode == 1
    assert "cannot read theirs" in proc.stderr
    assert Path(o).read_bytes() == before


def test_binary_sides_keep_ours_and_exit_1(worktree: Path) -> None:
    b, o, t = sides(worktree, b"x\x00", b"ours\x00", b"theirs\x00")
    assert run_driver([b, o, t, "7", "notes/blob.md"], worktree).returncode == 1
    assert Path(o).read_bytes() == b"ours\x00"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ([], "expected 3 to 5 arguments, got 0"),
        (["a", "b"], "expected 3 to 5 arguments, got 2"),
        (["a", "b", "c", "seven"], "MARKER_SIZE must be a whole number, not 'seven'"),
        (["a", "b", "c", "0"], "MARKER_SIZE must be from 1 to 256, not 0"),
        (["a", "b", "c", "7", "p", "extra"], "expected 3 to 5 arguments, got 6"),
    ],
)
def test_wrong_arguments_print_usage_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], problem: str
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"engram merge driver: {problem}." in err
    assert "usage: python -m mergedriver BASE OURS THEIRS" in err
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_record_log_never_fails_the_merge(tmp_path: Path) -> None:
    (tmp_path / ".engram").write_text("a file where the folder should be")
    base = engram(retrievalCount=1)
    b, o, t = sides(tmp_path, base, engram(retrievalCount=2, **ALICE), engram(retrievalCount=1, tags=["x"], **BOB))
    proc = run_driver([b, o, t, "7", REL], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert codec.parse_engram(Path(o).read_bytes())[0]["retrievalCount"] == 2


def test_the_result_replaces_ours_atomically_leaving_no_temp_files(worktree: Path) -> None:
    b, o, t = sides(worktree, engram(), engram(tags=["a"], **ALICE), engram(tags=["b"], **BOB))
    assert main([b, o, t, "7", REL]) == 0
    leftovers = [p.name for p in worktree.iterdir() if p.name.endswith(".engram-tmp")]
    assert leftovers == []


def test_the_driver_imports_only_the_standard_library_and_pyyaml(worktree: Path) -> None:
    b, o, t = sides(worktree, engram("a\nb\n"), engram("a2\nb\n", **ALICE), engram("a\nb2\n", **BOB))
    probe = (
        "import sys, runpy\n"
        "startup = set(sys.modules)\n"
        f"sys.argv = ['mergedriver', {b!r}, {o!r}, {t!r}, '7', {REL!r}]\n"
        "try:\n"
        "    runpy.run_module('mergedriver', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sorted({m.split('.')[0] for m in set(sys.modules) - startup})))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=worktree, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    allowed = set(sys.stdlib_module_names) | {"yaml", "_yaml", "mergedriver", "__main__"}
    # PyYAML's C extension registers its Cython runtime modules.
    foreign = sorted(m for m in set(proc.stdout.split()) - allowed if "cython" not in m)
    assert foreign == []
    assert {"yaml", "difflib"} <= set(proc.stdout.split())  # the probe really ran a body merge
