"""The file-system primitives keep their promises: whole files, no churn, one writer.

Each test exercises an invariant of :mod:`engram.store.fsio`'s docstring on real files
and, where the promise is about other processes, with real processes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import Busy, StorageError, UnsafeFile
from engram.store.fsio import (
    TEMP_SUFFIX,
    VaultLock,
    append_line,
    atomic_write,
    ensure_ignored,
    prune_empty_dirs,
    read_regular,
    remove,
)
from tests.git_helpers import git


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(f"*{TEMP_SUFFIX}"))


# ---------------------------------------------------------------------- atomic_write


@settings(max_examples=60)
@given(first=st.binary(max_size=3000), second=st.binary(max_size=3000))
def test_any_bytes_round_trip_and_a_repeat_write_is_a_no_op(tmp_path_factory: pytest.TempPathFactory, first: bytes, second: bytes) -> None:
    folder = tmp_path_factory.mktemp("aw")
    path = folder / "sub" / "f.md"
    assert atomic_write(path, first) is True  # the folder is made on the way
    assert read_regular(path, "f.md", len(first))[1] == first
    assert atomic_write(path, first) is False
    assert atomic_write(path, second) is (second != first)
    assert path.read_bytes() == second
    assert leftovers(folder) == []


def test_writing_the_same_bytes_keeps_the_inode_and_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    atomic_write(path, b"same\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()
    assert atomic_write(path, b"same\n") is False
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (before.st_ino, before.st_mtime_ns, before.st_ctime_ns)


def test_a_change_replaces_the_file_rather_than_writing_into_it(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    atomic_write(path, b"old\n")
    hard = tmp_path / "hardlink.md"
    os.link(path, hard)  # a second name for the old inode sees only the old bytes
    assert atomic_write(path, b"new\n") is True
    assert path.read_bytes() == b"new\n"
    assert hard.read_bytes() == b"old\n"
    assert path.stat().st_ino != hard.stat().st_ino


def test_a_shorter_or_longer_version_is_never_confused_with_the_old_one(tmp_path: Path) -> None:
    # The no-op check reads at most len(new) bytes: a prefix of the old file is not "the same".
    path = tmp_path / "f"
    atomic_write(path, b"abcdef")
    assert atomic_write(path, b"abc") is True and path.read_bytes() == b"abc"
    assert atomic_write(path, b"abcdef") is True and path.read_bytes() == b"abcdef"
    assert atomic_write(path, b"") is True and path.read_bytes() == b""
    assert atomic_write(path, b"") is False


def test_a_failed_write_is_a_storage_error_and_leaves_the_old_state(tmp_path: Path) -> None:
    folder = tmp_path / "item.md"
    folder.mkdir()  # a folder where the file should go: rename onto it fails
    (folder / "keep").write_bytes(b"x")
    with pytest.raises(StorageError) as err:
        atomic_write(folder, b"new")
    assert "old file is unchanged" in (err.value.hint or "")
    assert folder.is_dir() and (folder / "keep").read_bytes() == b"x"
    assert leftovers(tmp_path) == []

    blocker = tmp_path / "plain-file"
    blocker.write_bytes(b"not a folder")
    with pytest.raises(StorageError, match="cannot write"):
        atomic_write(blocker / "child.md", b"data")
    assert blocker.read_bytes() == b"not a folder"


def test_a_fifo_at_the_target_is_replaced_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "item.md"
    os.mkfifo(path)
    assert atomic_write(path, b"text\n") is True  # would hang if it opened the FIFO
    assert path.is_file() and path.read_bytes() == b"text\n"


TORN_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engram.store.fsio import atomic_write
    path, rounds = Path(sys.argv[1]), int(sys.argv[2])
    for n in range(rounds):
        atomic_write(path, (b"a" if n % 2 else b"b") * (200_000 + n))
    """
)


def test_a_reader_never_sees_a_torn_file_while_another_process_rewrites_it(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    atomic_write(path, b"a" * 200_000)
    writer = subprocess.Popen([sys.executable, "-c", TORN_WRITER, str(path), "100"], env=dict(os.environ))
    try:
        while writer.poll() is None:
            data = path.read_bytes()
            assert len(set(data)) == 1 and len(data) >= 200_000, "a torn or empty file was read"
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert path.read_bytes() == b"a" * (200_000 + 99)
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------------- read_regular


def test_a_named_pipe_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFile, match="named pipe") as err:
        read_regular(fifo, "pipe.md", 1000)
    assert err.value.path == "pipe.md" and err.value.exit_code == 5


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.md"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(UnsafeFile, match="a socket"):
            read_regular(path, "s.md", 1000)
    finally:
        server.close()


def test_a_dangling_symlink_is_unsafe_not_missing(tmp_path: Path) -> None:
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.md")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        read_regular(tmp_path / "dangling.md", "dangling.md", 10)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "absent.md", "absent.md", 10)


def test_the_limit_is_inclusive_and_empty_files_read(tmp_path: Path) -> None:
    (tmp_path / "e").write_bytes(b"")
    assert read_regular(tmp_path / "e", "e", 0)[1] == b""
    (tmp_path / "f").write_bytes(b"x" * 3)
    st, data = read_regular(tmp_path / "f", "f", 3)
    assert data == b"xxx" and st.st_size == 3


# ---------------------------------------------------------------------- append_line


APPENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engram.store.fsio import append_line
    path, worker, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    pad = "é" * 3000  # long lines: a torn write would show
    for n in range(count):
        append_line(path, f"{worker}:{n}:{pad}")
    """
)


def test_lines_appended_by_many_processes_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "log.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(path), f"w{w}", "60"], env=dict(os.environ))
        for w in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    assert len(lines) == 240
    per_worker: dict[str, list[int]] = {}
    for line in lines:
        worker, n, pad = line.split(":")
        assert pad == "é" * 3000
        per_worker.setdefault(worker, []).append(int(n))
    assert {w: sorted(ns) for w, ns in per_worker.items()} == {f"w{w}": list(range(60)) for w in range(4)}
    assert all(ns == sorted(ns) for ns in per_worker.values())  # each process's order kept


def test_append_line_adds_exactly_one_newline(tmp_path: Path) -> None:
    path = tmp_path / "log"
    append_line(path, "one")
    append_line(path, "two\n")
    append_line(path, "three\n\n")
    assert path.read_bytes() == b"one\ntwo\nthree\n"


def test_append_into_a_file_that_is_a_folder_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "log").mkdir()
    with pytest.raises(StorageError, match="cannot append") as err:
        append_line(tmp_path / "log", "x")
    assert err.value.exit_code == 7 and err.value.hint


# ---------------------------------------------------------------------- remove, prune


def test_remove_says_whether_there_was_a_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    assert remove(path) is True and not path.exists()
    assert remove(path) is False
    (tmp_path / "d").mkdir()
    with pytest.raises(StorageError, match="cannot delete"):
        remove(tmp_path / "d")
    assert (tmp_path / "d").is_dir()


def test_prune_removes_empty_parents_up_to_the_stop_only(tmp_path: Path) -> None:
    stop = tmp_path / "vault"
    deep = stop / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (stop / "a" / "keep.md").write_bytes(b"k")
    prune_empty_dirs(deep, stop)
    assert not (stop / "a" / "b").exists()
    assert (stop / "a" / "keep.md").exists()  # a non-empty folder ends the climb
    empty = stop / "x" / "y"
    empty.mkdir(parents=True)
    prune_empty_dirs(empty, stop)
    assert not (stop / "x").exists() and stop.is_dir()  # the stop itself is never removed
    prune_empty_dirs(stop, stop)
    assert stop.is_dir()
    outside = tmp_path / "elsewhere" / "empty"
    outside.mkdir(parents=True)
    prune_empty_dirs(outside, stop)  # not under the stop: left alone
    assert outside.is_dir()


# ---------------------------------------------------------------------- the vault lock


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from engram.store.fsio import VaultLock
    lock = VaultLock(Path(sys.argv[1]))
    with lock.hold():
        print("held", flush=True)
        sys.stdin.readline()  # hold until told to let go
    """
)


def test_another_process_holding_the_lock_makes_a_writer_busy_then_free(tmp_path: Path) -> None:
    lock_path = tmp_path / ".engram" / "write.lock"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path)],
        env=dict(os.environ), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        try:
            assert holder.stdout.readline().strip() == "held"
            mine = VaultLock(lock_path, timeout=0.2)
            with pytest.raises(Busy) as err, mine.hold():
                pytest.fail("the lock was taken while another process held it")
            assert err.value.exit_code == 6
            assert "waited 0s for the vault lock" in err.value.message
            assert "do not delete the file" in (err.value.hint or "")
            assert _queued(lock_path) == []  # a writer that gave up left the queue
            assert str(lock_path) in (err.value.hint or "")
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.wait(timeout=30) == 0
        finally:
            if holder.poll() is None:
                holder.kill()
    with VaultLock(lock_path, timeout=10).hold():
        assert lock_path.exists()


WAITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engram.store.fsio import VaultLock
    with VaultLock(Path(sys.argv[1]), timeout=120).hold():
        with open(sys.argv[2], "a") as log:
            log.write(sys.argv[3] + "\\n")
    """
)


def _queued(lock_path: Path) -> list[str]:
    folder = lock_path.with_name(lock_path.name + ".queue")
    return sorted(n for n in os.listdir(folder) if not n.startswith(".")) if folder.is_dir() else []


def _until(check: Callable[[], bool], proc: subprocess.Popen[str] | None = None) -> None:
    """Wait for ``check`` (a readiness, not a number of seconds); fail if ``proc`` exits first."""
    deadline = time.monotonic() + 120
    while not check():
        assert time.monotonic() < deadline, "never became ready"
        assert proc is None or proc.poll() is None, "the process exited early"
        time.sleep(0.01)


def test_writers_get_the_lock_in_the_order_they_asked_for_it(tmp_path: Path) -> None:
    """flock wakes every waiter and the one that just let go usually wins again; the
    queue (engram.store.lockqueue) serves writers first come, first served — the holder
    that asks again goes behind those already waiting."""
    lock_path = tmp_path / ".engram" / "write.lock"
    log = tmp_path / "order.txt"
    lock = VaultLock(lock_path)
    waiters = []
    with lock.hold():
        for n, name in enumerate(("first", "second")):
            waiters.append(subprocess.Popen([sys.executable, "-c", WAITER, str(lock_path), str(log), name],
                                            env=dict(os.environ), text=True))
            _until(lambda n=n: len(_queued(lock_path)) == n + 1, waiters[-1])
    with lock.hold(), log.open("a") as out:  # let go, and at once ask again
        out.write("again\n")
    for proc in waiters:
        assert proc.wait(timeout=120) == 0
    assert log.read_text().split() == ["first", "second", "again"]
    assert _queued(lock_path) == []


def test_a_waiter_that_died_in_the_queue_is_not_waited_for(tmp_path: Path) -> None:
    lock_path = tmp_path / ".engram" / "write.lock"
    log = tmp_path / "order.txt"
    lock = VaultLock(lock_path)
    with lock.hold():
        doomed = subprocess.Popen([sys.executable, "-c", WAITER, str(lock_path), str(log), "doomed"],
                                  env=dict(os.environ), text=True)
        _until(lambda: len(_queued(lock_path)) == 1, doomed)
        dead_entry = _queued(lock_path)[0]
        doomed.kill()
        doomed.wait(timeout=60)
        later = subprocess.Popen([sys.executable, "-c", WAITER, str(lock_path), str(log), "later"],
                                 env=dict(os.environ), text=True)
        _until(lambda: any(n != dead_entry for n in _queued(lock_path)), later)
    assert later.wait(timeout=120) == 0  # not Busy: the dead entry was not waited for
    assert log.read_text().split() == ["later"]
    assert dead_entry not in _queued(lock_path)


def test_the_lock_is_reentrant_and_released_by_the_outermost_hold(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    lock = VaultLock(path)
    other = VaultLock(path, timeout=0.05)  # a second descriptor: as another process would be
    with lock.hold():
        with lock.hold(), pytest.raises(Busy), other.hold():
            pass
        with pytest.raises(Busy), other.hold():  # the inner release did not let go
            pass
    with other.hold():  # the outer one did
        pass


def test_a_failure_inside_the_hold_still_releases(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    lock = VaultLock(path)
    with pytest.raises(RuntimeError), lock.hold():
        raise RuntimeError("boom")
    with VaultLock(path, timeout=0.05).hold():
        pass


def test_threads_of_one_process_are_serialised_by_one_lock(tmp_path: Path) -> None:
    lock = VaultLock(tmp_path / "write.lock")
    inside = 0
    most = 0
    counter = [0]

    def work() -> None:
        nonlocal inside, most
        for _ in range(40):
            with lock.hold():
                inside += 1
                most = max(most, inside)
                value = counter[0]
                time.sleep(0)  # invite a switch in the middle of the read-modify-write
                counter[0] = value + 1
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter[0] == 160 and most == 1


def test_a_lock_file_that_cannot_be_made_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / ".engram"
    blocker.write_bytes(b"a file, not a folder")
    with pytest.raises(StorageError) as err, VaultLock(blocker / "write.lock").hold():
        pass
    assert "lock file" in err.value.message and "writable" in (err.value.hint or "")
    assert blocker.read_bytes() == b"a file, not a folder"


# ---------------------------------------------------------------------- ensure_ignored


def test_local_state_is_ignored_by_git_whatever_the_vault_gitignore_says(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet")
    (root / ".gitignore").write_bytes(b"!*\n!.engram/\n")  # a person's file that un-ignores everything
    state = root / ".engram"
    ensure_ignored(state)
    (state / "index.sqlite").write_bytes(b"x")
    assert git(root, "check-ignore", "-q", ".engram/index.sqlite", check=False).returncode == 0
    assert (root / ".gitignore").read_bytes() == b"!*\n!.engram/\n"
    assert git(root, "status", "--porcelain", "--untracked-files=all").stdout.strip() == "?? .gitignore"


def test_ensure_ignored_keeps_an_existing_marker_byte_for_byte(tmp_path: Path) -> None:
    folder = tmp_path / "private"
    folder.mkdir()
    (folder / ".gitignore").write_bytes(b"# mine\r\n*\r\n")
    ensure_ignored(folder)
    assert (folder / ".gitignore").read_bytes() == b"# mine\r\n*\r\n"
    fresh = tmp_path / "new" / "state"
    ensure_ignored(fresh)
    assert (fresh / ".gitignore").read_bytes().endswith(b"\n*\n")
