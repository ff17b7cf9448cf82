"""The inotify watcher names every changed path, in folders old and new, and says when
it cannot (then the caller walks). Linux only: CI and this project's machines are.

Also :func:`changed_since`, the one-shot process's ``find -cnewer`` scan.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.index.catalog import Index
from engram.index.settings import IndexSettings
from engram.index.watcher import Changes, InotifyWatcher, changed_since, start_watcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    (folder / "ops" / "db").mkdir(parents=True)
    (folder / "ops" / "db" / "old.md").write_text("old\n")
    return folder


@pytest.fixture
def watcher(root: Path) -> Iterator[InotifyWatcher]:
    w = start_watcher(root, {"node_modules"})
    assert isinstance(w, InotifyWatcher)
    yield w
    w.close()


def poll(w: InotifyWatcher) -> Changes:
    changes = w.poll()
    assert changes is not None, "the watcher gave up where it should not"
    return changes


def test_nothing_changed_reports_nothing(watcher: InotifyWatcher) -> None:
    changes = poll(watcher)
    assert changes.files == set() and changes.dirs == set()


def test_writes_renames_and_deletes_of_files_are_named(root: Path, watcher: InotifyWatcher) -> None:
    (root / "ops" / "db" / "old.md").write_text("edited\n")
    (root / "top.md").write_text("new\n")
    assert poll(watcher).files == {"ops/db/old.md", "top.md"}
    os.replace(root / "top.md", root / "ops" / "moved.md")
    assert poll(watcher).files == {"top.md", "ops/moved.md"}
    (root / "ops" / "moved.md").unlink()
    assert poll(watcher).files == {"ops/moved.md"}
    os.chmod(root / "ops" / "db" / "old.md", 0o600)  # attributes count: ctime moved
    assert poll(watcher).files == {"ops/db/old.md"}


def test_an_editor_save_names_the_note_not_only_its_temp_file(root: Path, watcher: InotifyWatcher) -> None:
    tmp = root / "ops" / ".old.md.swp"
    tmp.write_text("saved\n")
    os.replace(tmp, root / "ops" / "db" / "old.md.tmp")
    os.replace(root / "ops" / "db" / "old.md.tmp", root / "ops" / "db" / "old.md")
    files = poll(watcher).files
    assert "ops/db/old.md" in files and not any("/." in f or f.startswith(".") for f in files)


def test_folders_made_after_the_watch_began_are_watched_too(root: Path, watcher: InotifyWatcher) -> None:
    (root / "new" / "deeper" / "deepest").mkdir(parents=True)
    (root / "new" / "deeper" / "deepest" / "n.md").write_text("n\n")
    first = poll(watcher)
    assert "new" in first.dirs  # the caller re-lists it: files may predate their watch
    (root / "new" / "deeper" / "deepest" / "n.md").write_text("changed\n")
    assert "new/deeper/deepest/n.md" in poll(watcher).files


def test_a_folder_moved_in_is_watched_and_a_folder_moved_out_is_named(root: Path, watcher: InotifyWatcher, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "x.md").write_text("x\n")
    shutil.move(str(outside), str(root / "incoming"))
    assert "incoming" in poll(watcher).dirs
    (root / "incoming" / "sub" / "x.md").write_text("edited inside a moved-in folder\n")
    assert poll(watcher).files == {"incoming/sub/x.md"}
    (root / "ops").rename(tmp_path / "gone")
    assert "ops" in poll(watcher).dirs


def test_hidden_and_skipped_names_are_ignored(root: Path, watcher: InotifyWatcher) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "index").write_text("x")
    (root / ".hidden.md").write_text("x")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "pkg.md").write_text("x")
    (root / "ops" / ".engram-tmp").write_text("x")
    changes = poll(watcher)
    assert changes.files == set() and changes.dirs == set()


def test_a_deleted_folder_is_named_for_a_re_list(root: Path, watcher: InotifyWatcher) -> None:
    shutil.rmtree(root / "ops")
    changes = poll(watcher)
    assert "ops" in changes.dirs or "ops/db" in changes.dirs
    (root / "ops").mkdir()  # the name back, as a new folder: watched afresh
    (root / "ops" / "again.md").write_text("again\n")
    changes = poll(watcher)
    assert "ops" in changes.dirs or "ops/again.md" in changes.files
    (root / "ops" / "again.md").write_text("again and again\n")
    assert poll(watcher).files == {"ops/again.md"}


def test_when_the_vault_itself_moves_the_watcher_says_walk(root: Path, watcher: InotifyWatcher, tmp_path: Path) -> None:
    root.rename(tmp_path / "moved-vault")
    assert watcher.poll() is None
    assert watcher.resync() is False


def test_a_closed_watcher_says_walk(watcher: InotifyWatcher) -> None:
    watcher.close()
    assert watcher.poll() is None and watcher.resync() is False
    watcher.close()  # twice is fine


# ---------------------------------------------------------------------- through the index


def test_a_long_lived_index_sees_edits_inside_a_folder_moved_in_later(root: Path, tmp_path: Path) -> None:
    index = Index(root, tmp_path / "db.sqlite", IndexSettings())
    try:
        for _ in range(3):
            index.ensure_fresh()
        assert index.watching
        outside = tmp_path / "elsewhere"
        (outside / "a").mkdir(parents=True)
        (outside / "a" / "note.md").write_text("first text\n")
        shutil.move(str(outside), str(root / "moved"))
        index.ensure_fresh()
        assert [r["body"] for r in index.query("SELECT body FROM items WHERE path = 'moved/a/note.md'")] == ["first text\n"]
        (root / "moved" / "a" / "note.md").write_text("second text\n")
        index.ensure_fresh()
        assert [r["body"] for r in index.query("SELECT body FROM items WHERE path = 'moved/a/note.md'")] == ["second text\n"]
        shutil.rmtree(root / "moved")
        index.ensure_fresh()
        assert index.query("SELECT count(*) AS n FROM items WHERE path LIKE 'moved/%'")[0]["n"] == 0
    finally:
        index.close()


# ---------------------------------------------------------------------- changed_since


def test_changed_since_names_what_changed_after_the_mark_and_prunes_hidden_and_skipped(root: Path) -> None:
    old = root / "ops" / "db" / "old.md"
    time.sleep(0.02)
    mark = time.time_ns()
    time.sleep(0.02)
    (root / "fresh.md").write_text("x")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("x")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "n.md").write_text("x")
    changes = changed_since(root, mark, {"node_modules"})
    assert changes is not None
    assert changes.files == {"fresh.md"}
    assert "" in changes.dirs  # the root's entries changed: the caller re-lists it
    assert not any(d.startswith((".git", "node_modules")) for d in changes.dirs)
    assert "ops/db/old.md" not in changes.files
    os.utime(old, ns=(0, 0))  # an old mtime set by a copy tool: the ctime still moves
    assert "ops/db/old.md" in (changed_since(root, mark) or Changes()).files


def test_changed_since_a_missing_root_says_walk(tmp_path: Path) -> None:
    assert changed_since(tmp_path / "absent", 0) is None


def test_a_watched_note_that_becomes_a_folder_is_dropped_not_reported_broken(root: Path, tmp_path: Path) -> None:
    index = Index(root, tmp_path / "db.sqlite", IndexSettings())
    try:
        for _ in range(3):
            index.ensure_fresh()
        assert index.watching
        (root / "ops" / "db" / "old.md").unlink()
        (root / "ops" / "db" / "old.md").mkdir()
        (root / "ops" / "db" / "old.md" / "inner.md").write_text("inner\n")
        index.ensure_fresh()
        paths = [r["path"] for r in index.query("SELECT path FROM files ORDER BY path")]
        assert paths == ["ops/db/old.md/inner.md"]
        assert index.bad_files() == []
    finally:
        index.close()


def test_changed_since_enters_a_root_given_as_a_symlink(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(root, alias)
    mark = time.time_ns() - 10**9
    (root / "ops" / "db" / "old.md").write_text("edited\n")
    changes = changed_since(alias, mark)
    assert changes is not None and "ops/db/old.md" in changes.files
    index = Index(alias, tmp_path / "db.sqlite", IndexSettings())
    try:
        index.refresh()
        (root / "ops" / "db" / "old.md").write_text("edited again\n")
        index.refresh()  # the scan path (find), not the walk
        assert index.query("SELECT body FROM items WHERE path = 'ops/db/old.md'")[0]["body"] == "edited again\n"
    finally:
        index.close()
