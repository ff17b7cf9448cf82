"""From vault files to index rows: reading, parsing, and what the index stores per item.

Pure functions (no database): :func:`parse_file` reads one file and returns the row
values :mod:`engram.index.catalog` inserts (for a note, also its wikilinks, unresolved),
or why it could not. Every ``.md`` file is an item, read by
:func:`engram.store.notes.read_note_meta`. It reads only regular files, through no symlinked
folder, up to the codec's size limits (:func:`engram.store.fsio.read_regular`); anything
else is recorded with one of the :data:`BAD_KINDS` and reported by ``engram doctor``,
never read. Parsing goes through the one
canonical reader (:mod:`engram.store.format`); when a refresh has thousands of files to parse
(a cold index, a big ``git pull``), :func:`parse_batches` spreads them over worker
processes so the parsing — most of the cost — uses every core while the database work
stays in one writer, and the batches come back as plain tuples (:data:`Wire`).

An item's row is a function of its frontmatter mapping as :meth:`Engram.to_meta` gives
it and its content (:func:`meta_values`): a file read for the index takes it from the
mapping (:meth:`Engram.meta_of`) without building an item, a write from the item it
wrote; ``tests/index/test_rows_laws.py`` holds the two equal, and
``tests/index/test_cold_build_laws.py`` a cold build equal to one row by row.

:func:`identifiers` picks the body tokens the trigram index keeps (see
:mod:`engram.index.catalog`). A file is "racy" when it changed less than two seconds before it
was stamped; its stamp records ``ctime_ns = -1`` so the next refresh re-reads it, since a
second write within the file system's timestamp granularity could leave the stamp equal.
A racy stamp also keeps a :func:`digest` of the bytes parsed: a racy file whose bytes still
have it is re-stamped without being parsed again (a folder just copied or cloned has
thousands of racy notes, and parsing them twice doubled ``engram init``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.errors import BinaryFile, FileTooLarge, FormatError, StorageError, UnsafeFile
from engram.index import wikilinks
from engram.store.dedup import fingerprint
from engram.store.format import Written, parse_synapse
from engram.store.fsio import read_regular
from engram.store.model import Engram, Synapse, instant
from engram.store.notes import FILE, Note, NoteMeta, read_note_meta
from mergedriver import codec

RACY_NS = 2_000_000_000
#: ``files.kind`` of a file the index could not take: does not parse; not a regular file
#: inside the vault; above the size limit; binary.
BAD_KINDS = ("bad", "unsafe", "oversize", "binary")
_BAD_KIND_OF: dict[type[FormatError], str] = {
    UnsafeFile: "unsafe", FileTooLarge: "oversize", BinaryFile: "binary",
}
#: ``json.dumps(value, ensure_ascii=False)``, with the encoder built once: dumps builds
#: one per call when given an option, a third of the cost for a row's meta.
_json = json.JSONEncoder(ensure_ascii=False).encode
#: Folders a walk of the vault never enters (besides hidden ones).
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
#: Above this many files to (re)parse, refresh parses in worker processes.
PARALLEL_MIN = 4_000


@dataclass(frozen=True, slots=True)
class FileStamp:
    # ctime, not mtime: the kernel sets it on every write and no tool can set it back,
    # so a copy that preserves mtime (cp -p, rsync -t, tar x) still reads as changed.
    ctime_ns: int
    size: int
    ino: int
    #: :func:`digest` of the bytes parsed when the stamp is racy, else 0: a racy file whose
    #: bytes still have it is re-stamped, not parsed again (see the module docstring).
    digest: int = 0

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(*_stamp(st))


def digest(data: bytes) -> int:
    """A 64-bit digest of a file's bytes (BLAKE2b), as SQLite stores an INTEGER; kept for
    racily stamped files only (0 otherwise: it is never consulted for the others)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    """:class:`FileStamp`'s fields for ``st`` (racily clean: ``ctime_ns`` -1, re-read on
    the next refresh)."""
    ctime = st.st_ctime_ns
    return (-1 if time.time_ns() - ctime < RACY_NS else ctime, st.st_size, st.st_ino)


# Body tokens the trigram index keeps: identifiers with inner punctuation, digits or mixed
# case, and non-Latin runs (CJK has no spaces). A regex over the whole body (it tries
# every position) was 3-5 times slower than splitting on whitespace; and since a body's
# words are mostly the vault's common words, the tokens found to keep nothing are
# remembered (per process, bounded) and set aside by one C-level set difference, so only
# a body's unfamiliar tokens are looked at in Python. This runs for every item of a cold
# index.
_SPECIAL = re.compile(r"[\d_/:#@+]|[A-Za-z][-.][A-Za-z]|[a-z][A-Z]|[^\x00-\x7f]")
_TOKEN_EDGES = "\"'`()[]{}<>,;:!?*.-"  # noqa: S105 - punctuation, not a secret
_BARREN: set[str] = set()  # tokens that yield nothing to keep
_BARREN_MAX, _BARREN_LEN = 100_000, 32


def classify(relpath: str) -> str | None:
    """``item``, ``synapse`` or None for a vault-relative path (no I/O)."""
    parts = relpath.split("/")
    if any(p.startswith(".") for p in parts):
        return None
    top = parts[1] if parts[0] == "private" and len(parts) > 1 else parts[0]
    if top == "synapses":
        return "synapse" if relpath.endswith(".yaml") else None
    if relpath.endswith(".md"):
        return "item"
    return None


def vault_files(
    root: Path, top: str, wanted: Callable[[str], str | None]
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """The files under ``root`` (or its folder ``top``) that ``wanted`` names an item or
    a synapse, as (relpath, directory entry). Symlinked folders are not entered; a
    symlink, FIFO or device with an item or synapse name is yielded (never followed), so
    the refresh records it as unsafe."""
    start = root / top if top else root
    if top and os.path.islink(start):
        return
    stack = [(top + "/" if top else "", start)]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in SKIP_DIRS:
                continue
            rel = prefix + name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((rel + "/", Path(entry.path)))
                elif wanted(rel):
                    yield rel, entry
            except OSError:
                continue


def identifiers(text: str) -> str:
    """The body tokens the trigram index keeps (distinct, in order of appearance)."""
    words = text.split()
    unknown = set(words) - _BARREN
    if not unknown:
        return ""
    kept: list[str] = []
    for token in unknown:
        if _kept(token) is not None:
            kept.append(token)
        elif len(token) <= _BARREN_LEN and len(_BARREN) < _BARREN_MAX:
            _BARREN.add(token)
    if len(kept) > 16:  # order of first appearance
        keep = set(kept)
        kept = [token for token in dict.fromkeys(words) if token in keep]
    elif len(kept) > 1:
        kept.sort(key=words.index)  # a few short scans
    return " ".join(dict.fromkeys(token.strip(_TOKEN_EDGES) for token in kept))


def _kept(token: str) -> str | None:
    """What the trigram index keeps of one whitespace-separated token, or None."""
    if token.isalpha() and (token.islower() or token.istitle()):
        return None  # a plain word: the word index has it
    token = token.strip(_TOKEN_EDGES)
    return token if len(token) > 1 and _SPECIAL.search(token) else None


def item_values(
    rel: str, item: Engram, derived: str, identity: str = FILE, findings: str | None = None
) -> tuple[Any, ...]:
    """The ``items`` row for one item, in :data:`engram.index.schema.ITEM_COLUMNS` order."""
    return meta_values(rel, item.to_meta(), item.content, derived, identity, findings, item.by_person)


def meta_values(
    rel: str, meta: dict[str, Any], content: str, derived: str, identity: str = FILE, findings: str | None = None,
    by_person: bool = False,
) -> tuple[Any, ...]:
    """:func:`item_values` from the item's frontmatter mapping as :meth:`Engram.to_meta`
    gives it (a key per field with a value) and its content, so that a cold index, which
    reads every item, need not build one (:meth:`Engram.meta_of`)."""
    get: Callable[[str], Any] = meta.get
    title, summary, updated_at, retrieved_at = get("title"), get("summary"), get("updatedAt"), get("lastRetrievedAt")
    return (
        rel, get("id"), title, title.casefold(), summary,
        " ".join(get("tags") + get("domainTags")), content,
        identifiers(summary + "\n" + content),
        "/".join(get("domainTags")), get("kind"), get("status"), get("visibility"), get("importance"),
        get("confidence"), get("createdAt"), updated_at, get("activatedAt"),
        get("deactivatedAt"), get("supersededBy"), get("retrievalCount"),
        get("effectiveRetrievals"), get("failedUses"), get("reinforcementScore"),
        retrieved_at, get("lastEffectiveAt"), _epoch(updated_at),
        _epoch(retrieved_at), get("version"), get("contentHash"),
        fingerprint(title, content), derived,
        _json(meta),
        identity, int(by_person), wikilinks.name_key(rel.rsplit("/", 1)[-1]), wikilinks.path_key(rel),
        codec.content_hash(content), findings,
    )


def note_values(rel: str, note: Note | NoteMeta) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The ``items`` row and the ``links`` rows (unresolved) of one note."""
    findings: dict[str, Any] = {}
    if note.clashes:
        findings["clashes"] = list(note.clashes)
    if note.front_error:
        findings["frontmatter"] = note.front_error
    if isinstance(note, Note):
        meta, content = note.item.to_meta(), note.item.content
    else:
        try:
            meta, content = Engram.meta_of(note.meta, note.content), codec.canonical_content(note.content)
        except (TypeError, ValueError) as exc:  # as read_note would have refused it
            raise FormatError(rel, str(exc)) from exc
    row = meta_values(
        rel, meta, content, note.derived, note.identity,
        _json(findings) if findings else None, note.by_person,
    )
    links = [
        (rel, meta["id"], link.text, link.key, int(link.embed), int(link.in_property))
        for link in [*wikilinks.extract(content), *wikilinks.property_links(note.properties)]
    ]
    return row, links


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        if stamp.endswith("Z"):  # canonical instants: skip the general parser
            return datetime.fromisoformat(stamp[:-1] + "+00:00").timestamp()
        return instant(stamp).timestamp()
    except ValueError:
        return None


def synapse_values(rel: str, synapse: Synapse) -> tuple[Any, ...]:
    return (
        rel, synapse.id, synapse.source, synapse.target, synapse.kind, synapse.weight,
        _json(synapse.to_meta()),
    )


#: One parsed file as :func:`parse_batches` yields it: ``(rel, kind, (ctime_ns, size,
#: ino) or None, values, error, links)``, the fields of :class:`Parsed`. A plain tuple
#: because batches cross from the worker processes: pickling two dataclasses per file
#: cost ~15 µs of CPU, about half of it in the process writing the index.
Wire = tuple[
    str, str, tuple[int, int, int, int] | None, tuple[Any, ...] | None, str | None, tuple[tuple[Any, ...], ...]
]


@dataclass(frozen=True, slots=True)
class Parsed:
    """One file read and parsed (possibly in a worker process), ready to insert."""

    rel: str
    kind: str  # item | synapse | other | gone, or one of BAD_KINDS
    stamp: FileStamp | None
    values: tuple[Any, ...] | None = None
    error: str | None = None
    links: tuple[tuple[Any, ...], ...] = ()

    def wire(self) -> Wire:
        s = self.stamp
        stamp = None if s is None else (s.ctime_ns, s.size, s.ino, s.digest)
        return (self.rel, self.kind, stamp, self.values, self.error, self.links)

    @classmethod
    def from_wire(cls, wire: Wire) -> Parsed:
        rel, kind, stamp, values, error, links = wire
        return cls(rel, kind, None if stamp is None else FileStamp(*stamp), values, error, links)


def parse_file(root: Path | str, rel: str, folders: dict[str, str | None] | None = None) -> Parsed:
    """Read and parse one vault file; never raises for file content. ``folders`` caches
    which folders were checked to be real folders (no symlink) for the files of one batch."""
    return Parsed.from_wire(_parse(root, rel, {} if folders is None else folders))


def _parse(root: Path | str, rel: str, folders: dict[str, str | None]) -> Wire:
    path = os.path.join(root, rel)  # plain strings: Path objects cost more than parsing here
    kind = classify(rel)
    limit = codec.MAX_SYNAPSE_BYTES if kind == "synapse" else codec.MAX_ITEM_BYTES
    try:
        linked = _linked_folder(root, rel, folders)
        if linked is not None:
            raise UnsafeFile(rel, f"is inside {linked}, a symbolic link; engram does not follow it")
        st, data = read_regular(path, rel, limit)
    except (FileNotFoundError, StorageError):
        return (rel, "gone", None, None, None, ())
    except FormatError as exc:
        return _refused(path, rel, exc)
    ctime, size, ino = _stamp(st)
    # Only a racy stamp is ever checked against its digest (settle_racy): a build over
    # files older than two seconds hashes nothing.
    stamp = (ctime, size, ino, digest(data) if ctime < 0 else 0)
    try:
        if kind == "synapse":
            return (rel, "synapse", stamp, synapse_values(rel, parse_synapse(data, rel)), None, ())
        if b"\x00" in data:
            raise BinaryFile(rel, "binary data (NUL bytes), not a text file")
        row, links = note_values(rel, read_note_meta(data, rel))
        return (rel, "item", stamp, row, None, tuple(links))
    except FormatError as exc:
        return (rel, _BAD_KIND_OF.get(type(exc), "bad"), stamp, None, exc.problem, ())


def settle_racy(
    root: Path | str, changed: list[str], known: dict[str, tuple[int, int, int, int]]
) -> tuple[list[str], list[tuple[int, int, int, str]]]:
    """``changed`` split in two: the files to parse, and ``(ctime_ns, size, ino, rel)`` of
    the racily stamped ones (``known`` stamps) whose bytes still have the digest they
    were parsed with — re-stamped (racy again if they still are), not parsed. A racy
    stamp only says a second write could hide behind an equal stamp; the bytes say
    whether one did."""
    parse: list[str] = []
    still: list[tuple[int, int, int, str]] = []
    for rel in changed:
        stamp = known.get(rel)
        fresh = None if stamp is None or stamp[0] >= 0 else unchanged(root, rel, stamp)
        if fresh is None:
            parse.append(rel)
        else:
            still.append((*fresh, rel))
    return parse, still


def unchanged(root: Path | str, rel: str, stamp: tuple[int, int, int, int]) -> tuple[int, int, int] | None:
    """The file's new ``(ctime_ns, size, ino)`` when its bytes still have ``stamp``'s
    digest (and size and inode): what was parsed from it still holds. None when it must
    be parsed again (another digest, no digest known, gone, or now behind a symlink)."""
    if stamp[3] == 0 or _linked_folder(root, rel, {}) is not None:
        return None
    limit = codec.MAX_SYNAPSE_BYTES if classify(rel) == "synapse" else codec.MAX_ITEM_BYTES
    try:
        st, data = read_regular(os.path.join(root, rel), rel, limit)
    except (FileNotFoundError, StorageError, FormatError):
        return None
    fresh = _stamp(st)
    if (fresh[1], fresh[2]) != (stamp[1], stamp[2]) or digest(data) != stamp[3]:
        return None
    return fresh


def parse_written(root: Path, rel: str, written: Written) -> Parsed | None:
    """What :func:`parse_file` would make of the file a writer just wrote, from what it
    wrote (:func:`engram.store.format.write_note`: the note read from the bytes in
    memory) and the file's stamp; None (read the file) when the bytes did not read as an
    item or the file is no longer a regular file of that size."""
    if written.note is None:
        return None
    try:
        st = os.stat(os.path.join(root, rel), follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != written.size:
        return None
    row, links = note_values(rel, written.note)
    return Parsed(rel, "item", FileStamp.of(st), row, links=tuple(links))


def _refused(path: str, rel: str, exc: FormatError) -> Wire:
    """A file refused before reading, stamped by its own (link) status for later refreshes."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return (rel, "gone", None, None, None, ())
    return (rel, _BAD_KIND_OF.get(type(exc), "bad"), (*_stamp(st), 0), None, exc.problem, ())


def _linked_folder(root: Path | str, rel: str, folders: dict[str, str | None]) -> str | None:
    """The outermost folder on ``rel``'s path that is a symlink, or None (cached per folder)."""
    folder = rel.rpartition("/")[0]
    if not folder:
        return None
    if folder not in folders:
        outer = _linked_folder(root, folder, folders)
        folders[folder] = outer or (folder if os.path.islink(os.path.join(root, folder)) else None)
    return folders[folder]


def _parse_batch(root: str, rels: list[str]) -> list[Wire]:
    folders: dict[str, str | None] = {}
    return [_parse(root, rel, folders) for rel in rels]


def parse_batches(root: Path, rels: list[str]) -> Generator[list[Wire], None, None]:
    """Parse many files, yielding batches in order. With enough files, worker processes
    parse ahead while the caller writes the batches already parsed, so the parsing (most
    of the cost) and the index writes overlap."""
    workers = min(os.cpu_count() or 1, 8)
    if len(rels) < PARALLEL_MIN or workers < 2:
        yield _parse_batch(str(root), rels)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork is cheap and the child only parses files; elsewhere the default start
    # method re-imports engram in each worker, still worth it for a cold index.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    chunk = 500
    batches = [rels[i : i + chunk] for i in range(0, len(rels), chunk)]
    try:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method))
    except (OSError, RuntimeError, ValueError):  # no processes allowed here
        yield _parse_batch(str(root), rels)
        return
    try:
        yield from pool.map(_parse_batch, [str(root)] * len(batches), batches)
    finally:  # also when the caller stops early: do not parse what nobody will read
        pool.shutdown(wait=True, cancel_futures=True)


def parse_all(root: Path, rels: list[str]) -> list[Parsed]:
    """Every file parsed (see :func:`parse_batches`)."""
    return [Parsed.from_wire(w) for batch in parse_batches(root, rels) for w in batch]
