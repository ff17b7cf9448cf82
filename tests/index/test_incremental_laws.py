"""The incremental index always equals an index built from nothing over the same files.

The freshness guarantee of :mod:`engram.index.catalog` — a read never misses a change
that completed before it began — is checked as one law over random edit sequences made
the way people and tools make them (writes in place, editor-style rename saves, deletes,
file and folder renames, folders moved in and out, broken files, symlinks, synapse
files, wikilinks between notes): after every step, three indexes must agree row for row
with a fresh rebuild —

- a long-lived index kept fresh by :meth:`Index.ensure_fresh` (the inotify watcher where
  the platform has one),
- a long-lived index in ``walk`` mode,
- a one-shot index opened anew for each read (its refresh re-checks only what ``find
  -cnewer`` reports since the last scan).

Rows compared: items (path, id, title, body, frontmatter, identity, findings), files
(path, kind, error), synapses, wikilinks and what they resolve to, the item tally, and
which paths the word and trigram indexes answer for a word (their external-content
triggers must keep them in step with the rows).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from engram.index.catalog import Index
from engram.index.settings import IndexSettings

FOLDERS = ["", "ops", "ops/db", "Notes", "private/me"]
NAMES = ["Alpha", "beta", "Gamma ray", "数据", "delta"]
WORDS = ["zeppelin", "harbour", "vacuum", "db_url_v2", "连接池", "otter"]


def note_bytes(kind: str, word: str, link: str, n: int) -> bytes:
    if kind == "engram":
        return (
            f"---\nid: 01JTEST{n:019d}\ntitle: Item {n} {word}\nkind: fact\ntags: [t{n % 3}]\n"
            f"createdAt: 2026-01-01T00:00:00.000Z\nupdatedAt: 2026-01-01T00:00:00.000Z\n---\n"
            f"Body about {word}. See [[{link}]].\n"
        ).encode()
    if kind == "person":
        return f"---\naliases: [{word}]\nstatus: \"[[Draft]]\"\n---\n# {word}\r\nlinks to [[{link}]]\r\n".encode()
    if kind == "plain":
        return f"Just text about {word} and [[{link}|an alias]].\n".encode()
    if kind == "broken":
        return f"---\nid: 01JBROKEN{n}\ntitle: [unclosed {word}\n---\nbody\n".encode()
    return f"---\n{{{{date}}}}: x\n---\n{word}\n".encode()  # a template, not YAML


def synapse_bytes(n: int, word: str) -> bytes:
    return (
        f"id: syn-{n:016x}\nfrom: 01JTEST{n:019d}\nto: 01JTEST{n + 1:019d}\nkind: extends\n"
        f"weight: 0.5\nevidence:\n  - description: {word}\n    addedBy: t\n"
        "createdBy: t\ncreatedAt: 2026-01-01T00:00:00.000Z\nupdatedAt: 2026-01-01T00:00:00.000Z\n"
    ).encode()


def snapshot_rows(index: Index) -> dict[str, Any]:
    q = index.query
    out: dict[str, Any] = {
        "items": [tuple(r) for r in q("SELECT path, id, title, body, meta, identity, findings, derived FROM items ORDER BY path")],
        "files": [tuple(r) for r in q("SELECT path, kind, error FROM files ORDER BY path")],
        "synapses": [tuple(r) for r in q("SELECT path, id, source, target, kind FROM synapses ORDER BY path")],
        "links": sorted(tuple(r) for r in q("SELECT src_path, src_id, text, status, target_path, target_id, choices FROM links")),
    }
    tally = q("SELECT n FROM tally WHERE key = 'items'")[0]["n"]
    assert tally == len(out["items"]), "the item tally drifted from the rows"
    for word in WORDS:
        for table in ("items_fts", "items_tri"):
            if table == "items_tri" and len(word) < 3:
                continue
            rows = q(
                f"SELECT path FROM items WHERE rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?) ORDER BY path",
                ['"' + word + '"'],
            )
            out[f"{table}:{word}"] = [r["path"] for r in rows]
    return out


class VaultEdits(RuleBasedStateMachine):
    """Random edits to a vault folder, and the indexes that must follow them."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0

    @initialize(base=st.just(None))
    def setup(self, base: None) -> None:
        import tempfile

        self.tmp = Path(tempfile.mkdtemp(prefix="engram-incr-"))
        self.root = self.tmp / "vault"
        self.root.mkdir()
        (self.root / ".engram").mkdir()
        self.dbs = self.tmp / "dbs"
        self.dbs.mkdir()
        self.live = Index(self.root, self.dbs / "live.sqlite", IndexSettings())
        self.walker = Index(self.root, self.dbs / "walk.sqlite", IndexSettings())
        for _ in range(2):  # the first read walks, the second starts the watcher
            self.live.ensure_fresh()
        self.walker.ensure_fresh("walk")
        self.oneshot_db = self.dbs / "oneshot.sqlite"
        Index(self.root, self.oneshot_db, IndexSettings()).refresh()

    def teardown(self) -> None:
        for index in (getattr(self, "live", None), getattr(self, "walker", None)):
            if index is not None:
                index.close()
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def files(self) -> list[Path]:
        return sorted(
            p for p in self.root.rglob("*")
            if (p.is_file() or p.is_symlink()) and ".engram" not in p.parts and p.suffix in (".md", ".yaml")
        )

    def make_dir(self, folder: Path) -> None:
        """``folder`` and its parents, removing a file that a rule put where one goes."""
        for parent in [*reversed(folder.relative_to(self.root).parents), folder.relative_to(self.root)]:
            at = self.root / parent
            if at.is_symlink() or at.is_file():
                at.unlink()
        folder.mkdir(parents=True, exist_ok=True)

    def folders(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_dir() and not p.is_symlink() and ".engram" not in p.parts)

    # ------------------------------------------------------------------ edits

    @rule(folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES), kind=st.sampled_from(["engram", "person", "plain", "broken", "template"]),
          word=st.sampled_from(WORDS), link=st.sampled_from(NAMES), editor=st.booleans())
    def write_note(self, folder: str, name: str, kind: str, word: str, link: str, editor: bool) -> None:
        self.counter += 1
        path = self.root / folder / f"{name}.md"
        self.make_dir(path.parent)
        if path.is_symlink():
            path.unlink()
        if path.is_dir():
            shutil.rmtree(path)
        data = note_bytes(kind, word, link, self.counter)
        if editor:  # write a hidden temp file and rename it over the note, as editors do
            tmp = path.with_name(f".{path.name}.swp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        else:
            with open(path, "wb") as fh:
                fh.write(data)

    @rule(word=st.sampled_from(WORDS), n=st.integers(0, 3))
    def write_synapse(self, word: str, n: int) -> None:
        path = self.root / "synapses" / "extends" / f"syn-{n:016x}.yaml"
        self.make_dir(path.parent)
        if path.is_dir():
            shutil.rmtree(path)
        path.write_bytes(synapse_bytes(n, word))

    @precondition(lambda self: bool(self.files()))
    @rule(pick=st.integers(0, 100))
    def delete_file(self, pick: int) -> None:
        files = self.files()
        files[pick % len(files)].unlink()

    @precondition(lambda self: bool(self.files()))
    @rule(pick=st.integers(0, 100), folder=st.sampled_from(FOLDERS), name=st.sampled_from([*NAMES, "renamed"]))
    def rename_file(self, pick: int, folder: str, name: str) -> None:
        files = self.files()
        source = files[pick % len(files)]
        target = self.root / folder / (f"{name}.md" if source.suffix == ".md" else source.name)
        if "synapses" in source.parts or target.is_dir() or source in target.parents:
            return
        self.make_dir(target.parent)
        os.replace(source, target)

    @precondition(lambda self: bool(self.files()))
    @rule(pick=st.integers(0, 100))
    def append_in_place(self, pick: int) -> None:
        files = [f for f in self.files() if not f.is_symlink()]
        if files:
            with open(files[pick % len(files)], "ab") as fh:
                fh.write(b"more otter text\n")

    @precondition(lambda self: len(self.folders()) > 0)
    @rule(pick=st.integers(0, 100), new=st.sampled_from(["moved", "Notes/inner", "ops2"]))
    def rename_folder(self, pick: int, new: str) -> None:
        folders = self.folders()
        source = folders[pick % len(folders)]
        target = self.root / new
        if target.exists() or target == source or source in target.parents:
            return
        self.make_dir(target.parent)
        source.rename(target)

    @precondition(lambda self: len(self.folders()) > 0)
    @rule(pick=st.integers(0, 100))
    def move_folder_out_and_back(self, pick: int) -> None:
        folders = self.folders()
        source = folders[pick % len(folders)]
        outside = self.tmp / "outside"
        shutil.move(str(source), str(outside))
        self.check()  # gone from every index while it is outside
        shutil.move(str(outside), str(source))

    @precondition(lambda self: len(self.folders()) > 0)
    @rule(pick=st.integers(0, 100))
    def delete_folder(self, pick: int) -> None:
        folders = self.folders()
        shutil.rmtree(folders[pick % len(folders)])

    @precondition(lambda self: bool(self.files()))
    @rule(pick=st.integers(0, 100))
    def note_becomes_a_folder(self, pick: int) -> None:
        files = self.files()
        path = files[pick % len(files)]
        path.unlink()
        path.mkdir()
        (path / "inner.md").write_bytes(note_bytes("plain", "otter", "Alpha", 0))

    @precondition(lambda self: len(self.folders()) > 0)
    @rule(pick=st.integers(0, 100))
    def folder_becomes_a_note(self, pick: int) -> None:
        folders = self.folders()
        path = folders[pick % len(folders)]
        shutil.rmtree(path)
        path.write_bytes(note_bytes("plain", "vacuum", "beta", 0))  # a file, named like the folder

    @rule(folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES))
    def plant_symlink(self, folder: str, name: str) -> None:
        path = self.root / folder / f"{name}.md"
        self.make_dir(path.parent)
        if path.is_symlink() or path.is_file():
            path.unlink()
        if not path.exists():
            os.symlink("/etc/hostname", path)

    # ------------------------------------------------------------------ the law

    def check(self) -> None:
        reference = Index(self.root, self.dbs / "reference.sqlite", IndexSettings())
        try:
            reference.rebuild()
            expected = snapshot_rows(reference)
        finally:
            reference.close()
        self.live.ensure_fresh()
        assert snapshot_rows(self.live) == expected, "the watched index missed a change"
        self.walker.ensure_fresh("walk")
        assert snapshot_rows(self.walker) == expected, "the walking index missed a change"
        oneshot = Index(self.root, self.oneshot_db, IndexSettings())
        try:
            oneshot.ensure_fresh()
            assert snapshot_rows(oneshot) == expected, "a new process's scan missed a change"
        finally:
            oneshot.close()

    @invariant()
    def indexes_agree_with_a_rebuild(self) -> None:
        if hasattr(self, "live"):
            self.check()


VaultEdits.TestCase.settings = settings(
    max_examples=10, stateful_step_count=10, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_the_incremental_index_equals_a_rebuild = VaultEdits.TestCase
