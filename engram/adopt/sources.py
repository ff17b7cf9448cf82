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
    """A whole file as UTF-8 text (a BOM is dropped); raises InvalidInput naming the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}.", hint="Check the path and permissions.") from exc
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidInput(f"{path} is UTF-16 text.", hint="Save it as UTF-8 (e.g. `iconv -f UTF-16 -t UTF-8`) and retry.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded).",
            hint="Pass a JSON / JSON Lines file saved as UTF-8.",
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
