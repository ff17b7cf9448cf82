"""The vault as it was at an instant: what time travel (``as_of``) searches.

"What did we believe at T?" needs each item's status and text as of T, not today's with
today's dates filtered. So the vault at T is rebuilt from the versions git holds and
searched by the same recall pipeline as the vault itself.

**Versions.** Every version of every item and synapse file that git holds — each commit
reachable from ``HEAD``, both sides of every merge and the merge's own result — plus
the files in the work tree now and the copies in this clone's trash. Each version is
dated by its own ``updatedAt``, not by the commit that carried it: engram commits at
``engram sync``, so a commit's time is when a version was shared, ``updatedAt`` when it
was written, on whichever machine. A merged version carries the later side's
``updatedAt`` (the merge driver's rule), so it stands for T only once both of its sides
had been written by T.

**The version at T.** An item's latest version dated at or before T (the higher
``version`` on a tie). An item created by T whose every known version is dated later —
its earlier versions were overwritten between two syncs, before git saw them — is shown
by its oldest version, with any retirement dated after T (``deactivatedAt``) not yet in
force: status active, no successor. An item created after T is absent, and so is one
deleted by T: the commit that removed its last file, or this clone's trash, says when.
Synapses are chosen the same way (a link made after T does not exist at T).

**The snapshot.** The versions at T are written as files into
``.engram/asof/<key>/`` with today's ``engram.yaml`` — derived, machine-local, named by
which versions they hold, so another query at an instant that picks the same versions
reuses it, index and all — and that folder is searched as a vault. The two snapshots
used last are kept. Facts read from git blobs (id, dates, version) are cached per blob
in ``.engram/asof/blobs.json``: blobs never change.

Cost: the first query at a new instant walks the history (one ``git log``, one
``git cat-file --batch`` for blobs not seen before) and builds an index of the
snapshot (a cold build of the vault's size); later queries that pick the same versions
cost a search. Outside a git repository only the work tree and the trash are known.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import EngramError, StorageError
from engram.index.rows import classify
from engram.items.state import VaultState
from engram.items.trash import entries as trash_entries
from engram.recall import vectors
from engram.store.fsio import atomic_write
from engram.store.notes import read_note
from engram.store.settings import SETTINGS_FILE
from mergedriver import codec

FOLDER = "asof"
KEEP = 2
_COMPANION = "team.past"
_EMPTY_BLOB = "0" * 40
_NEVER = "~"  # sorts after every canonical instant: an undated version is never "by T"


@dataclass(frozen=True, slots=True)
class Version:
    """One version of an item or synapse file, and where its bytes are."""

    kind: str  # item | synapse
    id: str
    path: str  # vault-relative, where this version lived
    updated_at: str
    created_at: str
    version: int
    deactivated_at: str | None
    blob: str | None = None  # a git blob, or…
    file: str | None = None  # …a file on disk (the work tree, the trash)

    @property
    def where(self) -> str:
        return self.blob or f"file:{self.file}"


@dataclass(frozen=True, slots=True)
class Chosen:
    version: Version
    revived: bool  # a retirement dated after T is undone in the snapshot's copy


def snapshot(state: VaultState, at: str) -> VaultState:
    """``state``'s vault as it was at ``at`` (a canonical instant), opened as a vault
    whose files are the versions at T (see the module docstring). Raises StorageError
    when the snapshot cannot be written."""
    state.ensure_fresh()
    versions, deleted = _versions(state)
    chosen = choose(versions, deleted, at)
    key = hashlib.sha256(
        "\n".join(sorted(f"{c.version.kind}|{c.version.id}|{c.version.path}|{c.version.where}|{c.revived}"
                         for c in chosen)).encode("utf-8")
    ).hexdigest()[:20]
    base = state.state_dir / FOLDER
    folder = base / key
    if not (folder / ".engram-asof").exists():
        _materialize(state, chosen, folder)
    os.utime(folder)  # used last: kept by the pruning below
    _prune(base, keep={folder.name})
    return state.companion(_COMPANION, _Held).open(key, lambda: _opened(state, folder))


class _Held:
    """The snapshot a vault state searched last, closed with it (one at a time)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.state: VaultState | None = None

    def open(self, key: str, make: Callable[[], VaultState]) -> VaultState:
        if self.key != key or self.state is None:
            self.close()
            self.key, self.state = key, make()
        return self.state

    def close(self) -> None:
        if self.state is not None:
            self.state.close()
        self.key, self.state = None, None


class _Snapshot(VaultState):
    """A snapshot's files never change once written: its index is brought up to date
    once, and no watcher is started on it."""

    def ensure_fresh(self) -> None:
        if not self._settled:
            self.index.ensure_fresh("walk")
            self._settled = True

    _settled = False


def _opened(state: VaultState, folder: Path) -> VaultState:
    past = _Snapshot(folder, actor=state.actor)
    past.agent_session = state.agent_session
    vectors.share_cache(past.index, state.index)  # today's texts are not embedded again
    return past


def choose(versions: Iterable[Version], deleted: dict[str, str], at: str) -> list[Chosen]:
    """The version of each item and synapse at ``at`` (see the module docstring);
    ``deleted`` maps ids that are gone to when they went."""
    when = _when(at)
    by_id: dict[tuple[str, str], list[Version]] = {}
    for v in versions:
        by_id.setdefault((v.kind, v.id), []).append(v)
    out: list[Chosen] = []
    for (_kind, ident), known in by_id.items():
        gone = deleted.get(ident)
        if gone is not None and _at_or_before(gone, when):
            continue
        dated = [v for v in known if _at_or_before(v.updated_at, when)]
        if dated:
            out.append(Chosen(max(dated, key=lambda v: (_when(v.updated_at), v.version)), False))
            continue
        oldest = min(known, key=lambda v: (_when(v.updated_at), v.version))
        if _at_or_before(oldest.created_at, when):
            out.append(Chosen(oldest, bool(oldest.deactivated_at) and not _at_or_before(oldest.deactivated_at, when)))
    return out


def _at_or_before(stamp: str | None, when: str) -> bool:
    """Whether ``stamp`` is at or before ``when`` (an undated version never is)."""
    return _when(stamp) <= when


def _when(stamp: str | None) -> str:
    """``stamp`` in canonical form (UTC, milliseconds, ``Z``: such strings sort as
    instants do), or one after every instant when it is missing or unreadable."""
    try:
        return codec.format_time(stamp) if stamp else _NEVER
    except codec.CodecError:
        return _NEVER


# ---------------------------------------------------------------------- versions


def _versions(state: VaultState) -> tuple[list[Version], dict[str, str]]:
    """Every version known (git history, the work tree, the trash) and the ids that are
    gone with when they went."""
    current: list[Version] = []
    for row in state.index.query(
        "SELECT id, path, updated_at, created_at, version, deactivated_at FROM items"
    ):
        current.append(Version("item", row["id"], row["path"], row["updated_at"] or row["created_at"], row["created_at"],
                               int(row["version"]), row["deactivated_at"], file=str(state.root / row["path"])))
    for row in state.index.query("SELECT id, path, data FROM synapses"):
        data = json.loads(row["data"])
        created = str(data.get("createdAt") or data.get("created_at") or "")
        current.append(Version("synapse", row["id"], row["path"],
                               str(data.get("updatedAt") or data.get("updated_at") or created), created, 0, None,
                               file=str(state.root / row["path"])))
    present = {v.id for v in current}
    history, removals = _history(state)
    trashed = list(_trash(state))
    deleted: dict[str, str] = {}
    for v, gone in trashed:  # this clone's own deletion: when it happened
        if v.id not in present:
            deleted[v.id] = min(deleted.get(v.id, gone), gone)
    shared: dict[str, str] = {}  # a teammate's: when the commit that removed its last file was made
    for v in history:
        if v.id not in present and v.id not in deleted and v.path in removals:
            shared[v.id] = max(shared.get(v.id, removals[v.path]), removals[v.path])
    deleted.update(shared)
    return [*current, *history, *(v for v, _ in trashed)], deleted


def _history(state: VaultState) -> tuple[list[Version], dict[str, str]]:
    """Versions git holds, and when each path was last removed (commit time)."""
    try:
        proc = subprocess.run(
            ["git", "log", "HEAD", "--relative", "--format=%x01%H %cI", "-z", "--raw", "--no-abbrev",
             "--no-renames", "--diff-merges=first-parent", "--", "."],
            cwd=state.root, capture_output=True, text=True, check=False, encoding="utf-8", errors="replace",
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return [], {}
    if proc.returncode != 0:
        return [], {}  # not a repository, or no commit yet
    blobs: dict[str, str] = {}  # blob -> the path it was first seen at (newest first)
    removals: dict[str, str] = {}
    for blob, path, status, when in _changes(proc.stdout):
        kind = classify(path)
        if kind is None:
            continue
        if status == "D":
            removals.setdefault(path, when)  # newest first: the last removal
        elif blob != _EMPTY_BLOB:
            blobs.setdefault(blob, path)
    facts = _blob_facts(state, blobs)
    out = []
    for blob, path in blobs.items():
        fact = facts.get(blob)
        if fact:
            out.append(Version(fact["kind"], fact["id"], path, fact["updated"], fact["created"], fact["version"],
                               fact.get("deactivated"), blob=blob))
    return out, removals


def _changes(log: str) -> Iterator[tuple[str, str, str, str]]:
    """(new blob, path, status letter, commit time) of each change in ``git log --raw -z``."""
    for chunk in log.split("\x01")[1:]:
        head, _, rest = chunk.partition("\0")
        parts = head.split()
        if len(parts) != 2:
            continue
        when = parts[1]
        fields = rest.split("\0")
        i = 0
        while i + 1 < len(fields):
            meta = fields[i].strip()
            if not meta.startswith(":"):
                i += 1
                continue
            bits = meta[1:].split()
            if len(bits) >= 5:
                yield bits[3], fields[i + 1], bits[4][:1], codec.format_time(when)
            i += 2


def _blob_facts(state: VaultState, blobs: dict[str, str]) -> dict[str, dict[str, Any]]:
    """id, kind and dates of each blob: from the cache, else read once with cat-file."""
    cache_file = state.state_dir / FOLDER / "blobs.json"
    try:
        cache: dict[str, Any] = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    missing = [b for b in blobs if b not in cache]
    for blob, data in _cat(state.root, missing):
        cache[blob] = _facts(data, blobs[blob])
    if missing:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache_file, json.dumps(cache, separators=(",", ":")).encode("utf-8"))
    return {b: cache[b] for b in blobs if cache.get(b)}


def _cat(root: Path, blobs: list[str]) -> Iterator[tuple[str, bytes]]:
    """The bytes of each blob, streamed (a writer thread feeds git while this reads)."""
    if not blobs:
        return
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def feed() -> None:
        assert proc.stdin is not None
        try:
            for blob in blobs:
                proc.stdin.write(blob.encode("ascii") + b"\n")
            proc.stdin.close()
        except OSError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for blob in blobs:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                continue  # "<sha> missing": a shallow clone
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            yield blob, data
    finally:
        writer.join()
        proc.stdout.close()
        proc.wait()


def _facts(data: bytes, path: str) -> dict[str, Any] | None:
    kind = classify(path)
    try:
        if kind == "synapse":
            syn = codec.parse_synapse(data)
            return {"kind": "synapse", "id": path.rsplit("/", 1)[-1].removesuffix(".yaml"),
                    "updated": codec.format_time(syn.get("updatedAt") or syn["createdAt"]),
                    "created": codec.format_time(syn["createdAt"]), "version": 0}
        item = read_note(data, path).item
    except (EngramError, codec.CodecError, KeyError, ValueError, TypeError):
        return None  # a version that did not parse: never shown
    return {"kind": "item", "id": item.id, "updated": item.updated_at or item.created_at,
            "created": item.created_at, "version": item.version, "deactivated": item.deactivated_at}


def _trash(state: VaultState) -> Iterator[tuple[Version, str]]:
    """Copies of deleted items and their synapses in this clone's trash, with when they went."""
    for entry in trash_entries(state):
        try:
            gone = codec.format_time(entry.deleted_at)
        except codec.CodecError:
            continue
        for file in entry.folder.rglob("*"):
            rel = file.relative_to(entry.folder).as_posix()
            if not file.is_file() or classify(rel) is None:
                continue
            try:
                fact = _facts(file.read_bytes(), rel)
            except OSError:
                continue
            if fact:
                yield Version(fact["kind"], fact["id"], rel, fact["updated"], fact["created"], fact["version"],
                              fact.get("deactivated"), file=str(file)), gone


# ---------------------------------------------------------------------- the snapshot


def _materialize(state: VaultState, chosen: list[Chosen], folder: Path) -> None:
    """Write the chosen versions into a new folder, then move it into place."""
    staging = folder.with_name(folder.name + f".{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        settings = state.root / SETTINGS_FILE
        if settings.is_file():
            shutil.copyfile(settings, staging / SETTINGS_FILE)
        taken: set[str] = set()
        blobs = dict(_cat(state.root, sorted({c.version.blob for c in chosen if c.version.blob})))
        for c in chosen:
            v = c.version
            data = blobs.get(v.blob) if v.blob else _read(v.file)
            if data is None:
                continue
            if c.revived:
                data = _revived(data)
            rel = v.path
            if rel in taken:  # two items at one path at T (a rename and a new item): keep both
                rel = rel.removesuffix(".md") + f"-{v.id[-8:]}.md"
            taken.add(rel)
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (staging / ".engram-asof").write_text("complete\n", encoding="utf-8")
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / ".engram-asof").exists():  # not a concurrent twin: a real failure
                raise
    except OSError as exc:
        raise StorageError(f"cannot write the vault as of then into {folder}: {exc}.",
                           hint="Check the disk and the permissions of the vault's .engram folder.") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _read(file: str | None) -> bytes | None:
    try:
        return Path(file).read_bytes() if file else None
    except OSError:
        return None


def _revived(data: bytes) -> bytes:
    """An item's bytes with a retirement that came after T undone."""
    try:
        meta, content, derived = codec.parse_engram(data)
    except codec.CodecError:
        return data
    meta["status"] = "active"
    for key in ("deactivatedAt", "supersededBy"):
        meta.pop(key, None)
    return codec.render_engram(meta, content, derived.splitlines() if derived else ())


def _prune(base: Path, keep: set[str]) -> None:
    """Keep the snapshots used last (and ``keep``); remove the rest."""
    found = sorted((p for p in base.iterdir() if p.is_dir() and not p.name.endswith(".tmp")),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    for old in found[KEEP:]:
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
