"""Which importer reads a source: named by ``--from``, or told by what the source holds.

=================  =======================================================================
``obsidian``       a folder of Markdown notes (:mod:`.markdown`); properties namespaced
                   ``obsidian.``
``markdown``       the same for a folder of plain Markdown; namespace ``markdown.``
``basic-memory``   a basic-memory project (:mod:`.basic_memory`)
``co-engram``      a Co-Engram repository or another engram vault (:mod:`.co_engram`)
``memory-server``  the MCP memory server's ``memory.jsonl`` (:mod:`.memory_server`)
``jsonl``          JSON Lines records; ``json``: a JSON list of records (:mod:`.records`)
=================  =======================================================================

``auto`` (the default) looks: a file whose objects are typed ``entity``/``relation`` is a
memory-server graph, any other file records; a folder with synapse files (``synapses/<kind>/syn-*.yaml``) or
mostly engram item files is a Co-Engram repository, one with ``.basic-memory/`` or notes with observations
and a ``permalink`` is basic-memory, one with ``.obsidian/`` is Obsidian, any other folder
plain Markdown.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from engram.adopt import basic_memory, co_engram, markdown, memory_server, records
from engram.adopt.batch import Batch
from engram.errors import InvalidInput
from engram.items.state import VaultState

FORMATS = ("auto", "obsidian", "markdown", "basic-memory", "co-engram", "memory-server", "jsonl", "json")
_OBSERVATION = re.compile(r"^\s*[-*]\s+\[[^\[\]()]+\]\s+\S", re.MULTILINE)


def read(
    source: Path,
    fmt: str = "auto",
    *,
    default_domain: tuple[str, ...] = (),
    rename: bool = False,
    vault_root: Path | None = None,
) -> Batch:
    """Read ``source`` with the importer ``fmt`` names (or the one it looks like).

    Raises InvalidInput for an unknown format, a missing source, a source that is the
    vault itself or holds it at its top, or a file that is not UTF-8 text.
    """
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown import format {fmt!r}.", hint=f"Use one of: {', '.join(FORMATS)}.")
    if not source.exists():
        raise InvalidInput(f"there is nothing at {source}.", hint="Check the path.")
    if vault_root is not None and source.resolve() == vault_root.resolve():
        raise InvalidInput(
            f"{source} is the vault itself.",
            hint="Its notes are already indexed: run `engram init` there instead of importing.",
        )
    if source.is_dir():
        chosen = detect_folder(source) if fmt == "auto" else fmt
        if chosen in ("jsonl", "json", "memory-server"):
            raise InvalidInput(f"{source} is a folder; --from {chosen} reads a file.", hint="Pass the file.")
        if chosen == "co-engram":
            return co_engram.read_repository(source, skip=vault_root)
        if chosen == "basic-memory":
            return basic_memory.read_project(source, default_domain=default_domain, rename=rename, skip=vault_root)
        return markdown.read_folder(
            source, importer=chosen, namespace=chosen, default_domain=default_domain, rename=rename,
            skip=vault_root,
        )
    return parse_text(read_text(source), source.name, fmt, default_domain=default_domain)


def parse_text(text: str, origin: str, fmt: str = "auto", *, default_domain: tuple[str, ...] = ()) -> Batch:
    """A batch from the text of a records or memory-server file (e.g. standard input)."""
    chosen = fmt
    if fmt == "auto":
        chosen = "memory-server" if memory_server.looks_like(text) else "jsonl"
    if chosen == "memory-server":
        return memory_server.parse(text, origin, default_domain=default_domain)
    if chosen in ("jsonl", "json"):
        return records.parse(text, origin, fmt="auto" if fmt == "auto" else chosen, default_domain=default_domain)
    raise InvalidInput(f"{origin} is a file; --from {chosen} reads a folder.", hint="Pass the folder.")


def read_for(
    state: VaultState, source: str | Path, fmt: str = "auto", *, default_domain: tuple[str, ...] = (),
    rename: bool = False,
) -> Batch:
    """:func:`read` for this vault (a source that is the vault, or holds it, is handled)."""
    return read(Path(source).expanduser(), fmt, default_domain=default_domain, rename=rename, vault_root=state.root)


def read_text(path: Path) -> str:
    """A whole file as text (see :func:`decode`); raises InvalidInput naming the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}.", hint="Check the path and permissions.") from exc
    return decode(data)


_ICONV = "iconv -f {enc} -t UTF-8 FILE > FILE.utf8"


def decode(data: bytes) -> str:
    """The text of an import file. JSON is UTF-8; a byte-order mark says which Unicode
    encoding a file is in, so UTF-8 and UTF-16 files that start with one are read
    (PowerShell's ``>`` writes UTF-16 with a mark); UTF-16 without a mark, other encodings
    and binary files are refused with an error that names the problem and the fix.
    Raises InvalidInput."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise InvalidInput(
                "the file starts with a UTF-16 byte-order mark but is not valid UTF-16.",
                hint="Re-save it as UTF-8.",
            ) from None
    head = data[:4096]
    if b"\x00" in head:
        # JSON text starts with ASCII; UTF-16 puts a NUL beside every ASCII character.
        odd, even = head[1::2], head[0::2]
        if head and (odd.count(0) > len(odd) // 2 or even.count(0) > len(even) // 2):
            enc = "UTF-16LE" if odd.count(0) > even.count(0) else "UTF-16BE"
            raise InvalidInput(
                f"the file looks like {enc} without a byte-order mark; engram imports UTF-8.",
                hint=f"Convert it: {_ICONV.format(enc=enc)}",
            )
        raise InvalidInput(
            "the file is binary (it has NUL bytes), not JSON text.",
            hint="Pass a JSON list or JSON Lines file in UTF-8.",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(
            f"the file is not UTF-8 (byte {exc.start:,}, on line {line}, is 0x{data[exc.start]:02x}).",
            hint="Re-save it as UTF-8 (for a Latin-1 file: " + _ICONV.format(enc="LATIN1") + ").",
        ) from None


def detect_folder(folder: Path) -> str:
    """The importer a folder looks like it wants (see the module docstring)."""
    if any((folder / "synapses").glob("*/syn-*.yaml")):
        return "co-engram"
    if (folder / ".basic-memory").exists():
        return "basic-memory"
    sample = [p for _, p in zip(range(200), markdown.notes(folder), strict=False)]
    engramish = bm = 0
    for _rel, path in sample:
        if path.suffix != ".md":
            continue
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:4000]
        except OSError:
            continue
        if head.startswith("---") and re.search(r"^domainTags:", head, re.M) and re.search(r"^id:", head, re.M):
            engramish += 1
        if re.search(r"^permalink:", head, re.M) and _OBSERVATION.search(head):
            bm += 1
    if engramish and engramish >= len(sample) // 2:
        return "co-engram"
    if bm:
        return "basic-memory"
    return "obsidian" if (folder / ".obsidian").is_dir() else "markdown"
