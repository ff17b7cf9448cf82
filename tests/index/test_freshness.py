"""A search never sees a file that changed on disk but not in the index.

Each scenario runs twice: with a fresh process-like vault (first read walks) and with a
long-lived one whose reads are kept fresh by the watcher (several reads happened first).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engram.index.watcher import start_watcher
from engram.vault import Vault

WATCH = start_watcher(Path.cwd()) is not None  # inotify available here?


def hits(vault: Vault, query: str) -> list[str]:
    """The items the query's words find (what the index holds is the question here; an
    item found by its meaning alone is left out)."""
    return [h.title for h in vault.search(query, record=False, min_relevance=0.0).hits if h.via != "meaning"]


@pytest.fixture(params=["walk", "watch"])
def live(request: pytest.FixtureRequest, vault: Vault) -> Iterator[Vault]:
    vault.create("Release notes", "The old text mentions zeppelins.", domain=["docs"])
    if request.param == "watch":
        for _ in range(3):  # first read walks, second starts the watcher, third polls it
            vault.search("zeppelins", record=False)
        assert vault.state.index.watching == WATCH
    yield vault


@pytest.fixture
def watched(vault: Vault) -> Iterator[Vault]:
    """A long-lived vault whose reads are kept fresh by the watcher."""
    vault.create("Release notes", "The old text mentions zeppelins.", domain=["docs"])
    for _ in range(3):
        vault.search("zeppelins", record=False)
    assert vault.state.index.watching
    yield vault


def item_path(vault: Vault) -> Path:
    return vault.root / "docs" / "release-notes.md"


def replace_text(path: Path, writer: Callable[[Path, bytes], None]) -> None:
    data = path.read_bytes().replace(b"zeppelins", b"hovercraft")
    writer(path, data)


def plain_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:  # truncate and rewrite in place, same inode
        fh.write(data)


def rename_save(path: Path, data: bytes) -> None:
    tmp = path.with_name(".release-notes.md.swp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # how vim, VS Code and Obsidian save


@pytest.mark.parametrize("writer", [plain_write, rename_save], ids=["in-place", "rename"])
def test_an_edit_is_found_immediately(live: Vault, writer: Callable[[Path, bytes], None]) -> None:
    replace_text(item_path(live), writer)
    assert hits(live, "hovercraft") == ["Release notes"]
    assert hits(live, "zeppelins") == []


def test_two_edits_within_one_second_of_the_same_size(live: Vault) -> None:
    path = item_path(live)
    replace_text(path, plain_write)
    assert hits(live, "hovercraft") == ["Release notes"]
    data = path.read_bytes().replace(b"hovercraft", b"submarine_")  # same length
    plain_write(path, data)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    assert hits(live, "submarine_") == ["Release notes"]


def test_another_process_writes(live: Vault) -> None:
    path = item_path(live)
    code = (
        "import sys, pathlib; p = pathlib.Path(sys.argv[1]);"
        " p.write_bytes(p.read_bytes().replace(b'zeppelins', b'dirigibles'))"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    assert hits(live, "dirigibles") == ["Release notes"]
    assert hits(live, "zeppelins") == []


def test_another_vault_process_creates_and_deletes(live: Vault) -> None:
    code = (
        "import sys; from engram.vault import Vault; v = Vault.open(sys.argv[1]);"
        " v.create('Blimp hangar', 'Where the airships sleep.', domain=['new', 'deep']); v.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(live.root)], check=True)
    assert hits(live, "airships") == ["Blimp hangar"]  # in a folder that did not exist
    item_path(live).unlink()
    assert hits(live, "zeppelins") == []


def test_a_folder_moved_in_and_out(live: Vault) -> None:
    outside = live.root.parent / "elsewhere"
    (live.root / "docs").rename(outside)
    assert hits(live, "zeppelins") == []
    outside.rename(live.root / "docs")
    assert hits(live, "zeppelins") == ["Release notes"]


def test_git_checkout_of_another_commit(live: Vault) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=live.root, check=True, capture_output=True)

    git("add", "-A")
    git("commit", "-qm", "old")
    replace_text(item_path(live), plain_write)
    git("commit", "-qam", "new")
    assert hits(live, "hovercraft") == ["Release notes"]
    git("checkout", "-q", "HEAD~1")
    assert hits(live, "zeppelins") == ["Release notes"]
    assert hits(live, "hovercraft") == []
    git("checkout", "-q", "-")
    assert hits(live, "hovercraft") == ["Release notes"]


def test_walk_mode_from_settings_never_starts_a_watcher(vault: Vault) -> None:
    (vault.root / "engram.yaml").write_text("recall:\n  freshness: walk\n")
    v = Vault.open(vault.root)
    try:
        v.create("Release notes", "zeppelins", domain=["docs"])
        for _ in range(3):
            v.search("zeppelins", record=False)
        assert not v.state.index.watching
        replace_text(item_path(v), plain_write)
        assert hits(v, "hovercraft") == ["Release notes"]
    finally:
        v.close()


@pytest.mark.skipif(not WATCH, reason="inotify is not available here")
def test_a_poll_with_nothing_changed_reads_nothing(watched: Vault) -> None:
    watcher = watched.state.index._watcher
    assert watcher is not None
    changes = watcher.poll()
    assert changes is not None and not changes.files and not changes.dirs


@pytest.mark.skipif(not WATCH, reason="inotify is not available here")
def test_with_the_watcher_on_an_edit_is_applied_without_a_walk(
    watched: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_walk() -> None:
        raise AssertionError("a read walked the vault although the watcher was on")

    monkeypatch.setattr(watched.state.index, "refresh", no_walk)
    replace_text(item_path(watched), rename_save)
    assert hits(watched, "hovercraft") == ["Release notes"]
