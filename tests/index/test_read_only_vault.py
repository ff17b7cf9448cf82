"""A vault on a read-only file system (or owned by someone else) still answers reads.

The index then lives in a per-user cache folder, or in memory when even that cannot be
written; nothing is written into the vault. Real permissions, real processes: the vault
is made read-only with chmod, and when the tests run as root (for whom chmod alone
changes nothing) the commands run without root's capabilities (``setpriv``, util-linux).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.mcp_helpers import engram_command


def _chmod_tree(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        mode = mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        path.chmod(mode)


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to test a read-only vault")
    return [setpriv, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]


@pytest.fixture
def frozen(vault: Vault, tmp_path: Path) -> Iterator[Path]:
    vault.create("Read only note", "frozen text about glaciers", domain=["ops"])
    vault.close()
    shutil.rmtree(vault.root / ".engram")  # no index yet: one would have to be created
    _chmod_tree(vault.root, writable=False)
    try:
        yield vault.root
    finally:
        _chmod_tree(vault.root, writable=True)


def engram(root: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run(
        [*_unprivileged(), *engram_command("--vault", str(root), *args)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("cache_writable", [True, False])
def test_reads_work_and_nothing_is_written(frozen: Path, tmp_path: Path, cache_writable: bool) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    if not cache_writable:
        _chmod_tree(cache, writable=False)
    before = files_of(frozen)
    try:
        listed = engram(frozen, cache, "list")
        assert listed.returncode == 0, listed.stderr
        assert "ops/read-only-note.md" in listed.stdout
        found = engram(frozen, cache, "search", "glaciers")
        assert found.returncode == 0 and "Read only note" in found.stdout, found.stderr
        got = engram(frozen, cache, "get", "Read only note")
        assert got.returncode == 0 and "frozen text about glaciers" in got.stdout
        doctor = engram(frozen, cache, "doctor")
        assert doctor.returncode == 0 and "1 items, 0 synapses, 0 problem(s)" in doctor.stdout, doctor.stdout
        added = engram(frozen, cache, "add", "A new note", "--body", "x")
        assert added.returncode == 7
        assert "Writes need a writable vault folder (reads work without one)." in added.stderr
    finally:
        _chmod_tree(cache, writable=True)
    assert files_of(frozen) == before and not (frozen / ".engram").exists()
    indexes = list(cache.glob("engram/indexes/*/index.sqlite"))
    assert len(indexes) == (1 if cache_writable else 0)  # else the index lived in memory
