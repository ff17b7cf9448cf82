"""Taking knowledge out: ``KNOWLEDGE.md`` for people, JSON Lines for machines.

- :func:`markdown` renders one document, grouped by domain (then by importance and
  title): each item with its kind, provenance (who wrote it, when, where it came from),
  how often recall served it, its verification state and date, its summary and body, and
  its links by title. For reading, reviewing, or handing to a model as context.
- :func:`jsonl` writes one line per item: every frontmatter key, ``content``, ``path``
  and the item's outgoing ``synapses`` whole. It is the format of
  :mod:`engram.adopt.records`, so ``engram import`` reads it back into an equal vault:
  the same ids, paths, frontmatter, bodies and edges.

Both read the index and the files; neither writes to the vault. Items in every status
are exported (a round trip keeps archived and superseded knowledge too) unless a
``domain`` narrows it. ``withhold`` (every MCP session but a curator's) leaves a
quarantined item's text out of the document: its title, summary, body and links.

:func:`write_markdown` puts the document where an agent asks (the MCP tool): an
absolute ``.md`` path outside the vault (inside, the file would be read back as an
item), in an existing folder, and never over a file that is not an earlier export — a
person's file keeps every byte. The write is atomic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from engram.errors import InvalidInput
from engram.items.state import VaultState
from engram.store.fsio import atomic_write
from engram.store.model import Engram, Synapse, now
from engram.store.rules import Filters
from engram.trust.roles import WITHHELD_TITLE

_HEADER = "# Knowledge: "
_MARK = "exported by engram on "


def _items(state: VaultState, domain: str | None) -> list[Engram]:
    state.ensure_fresh()
    where, params = Filters.of(domain=domain, include_hidden=True).sql()
    return state.index.items(where, params, "ORDER BY domain, importance DESC, title, path")


def jsonl(state: VaultState, *, domain: str | None = None) -> Iterator[str]:
    """Lines (without newlines) of the JSON Lines export, one per item."""
    items = _items(state, domain)
    outgoing: dict[str, list[Synapse]] = {}
    for syn in state.index.synapses():
        outgoing.setdefault(syn.source, []).append(syn)
    for item in items:
        record = {**item.to_meta(), "content": item.content, "path": item.path}
        edges = outgoing.get(item.id, [])
        if edges:
            record["synapses"] = [syn.to_meta() for syn in edges]
        line = json.dumps(record, ensure_ascii=False, sort_keys=False)
        # Readers that split lines on Unicode breaks (str.splitlines) must still see one
        # record a line: escape the three JSON leaves raw.
        yield line.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


@dataclass(frozen=True, slots=True)
class Document:
    """The ``KNOWLEDGE.md`` text and how many items it holds."""

    text: str
    items: int


@dataclass(frozen=True, slots=True)
class Written:
    """An export on disk: where, how many items, how many bytes."""

    path: Path
    items: int
    size: int


def markdown(state: VaultState, *, domain: str | None = None, withhold: bool = False) -> str:
    """The ``KNOWLEDGE.md`` document (see the module docstring)."""
    return document(state, domain=domain, withhold=withhold).text


def write_markdown(state: VaultState, path: str, *, domain: str | None = None, withhold: bool = False) -> Written:
    """Write the document to ``path`` (see the module docstring for what is refused).
    Raises InvalidInput, changing nothing."""
    target = _target(state, path)
    made = document(state, domain=domain, withhold=withhold)
    data = made.text.encode("utf-8")
    atomic_write(target, data)
    return Written(target, made.items, len(data))


def _target(state: VaultState, raw: str) -> Path:
    given = Path(raw.strip()).expanduser() if isinstance(raw, str) and raw.strip() else None
    if given is None or not given.is_absolute():
        raise InvalidInput(f"{raw!r} is not an absolute path.", field="path",
                           hint="Pass an absolute path, e.g. /home/me/project/KNOWLEDGE.md (the server's working "
                                "directory is not yours).")
    if given.suffix.lower() != ".md":
        raise InvalidInput(f"{given} does not end in .md.", field="path", hint="Name the file KNOWLEDGE.md or *.md.")
    target = given.parent.resolve() / given.name
    vault = state.root.resolve()
    if target == vault or vault in target.parents:
        raise InvalidInput(f"{target} is inside the vault, where a Markdown file is read as an item.", field="path",
                           hint="Write the export outside the vault, e.g. into the project that uses it.")
    if not target.parent.is_dir():
        raise InvalidInput(f"the folder {target.parent} does not exist.", field="path",
                           hint="Pass a path in an existing folder.")
    if (target.exists() or target.is_symlink()) and (
        target.is_symlink() or not target.is_file() or not _is_export(target)
    ):
        raise InvalidInput(f"{target} exists and is not an engram export; it is left as it is.", field="path",
                           hint="Pass another path, or move that file away first.")
    return target


def _is_export(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            head = [handle.readline() for _ in range(3)]
    except OSError:
        return False
    return head[0].startswith(_HEADER) and head[2].find(_MARK) > 0


def document(state: VaultState, *, domain: str | None = None, withhold: bool = False) -> Document:
    """The ``KNOWLEDGE.md`` document with its item count (see the module docstring)."""
    items = _items(state, domain)
    hidden = {i.id for i in items if withhold and i.status == "quarantined"}
    titles = {i.id: WITHHELD_TITLE if i.id in hidden else i.title for i in items}
    synapses = state.index.synapses()
    links: dict[str, list[str]] = {}
    for syn in synapses:
        for end, other, arrow in ((syn.source, syn.target, "→"), (syn.target, syn.source, "←")):
            if other in titles:
                links.setdefault(end, []).append(f"{arrow} {syn.kind} {titles[other]}")
    domains = sorted({i.domain for i in items})
    out = [
        f"{_HEADER}{state.root.name}",
        "",
        f"{len(items)} item(s) in {len(domains)} domain(s), {_MARK}{now()[:10]}"
        + (f" (domain {domain})" if domain else "")
        + ". Grouped by domain, most important first.",
        "",
    ]
    for name, group in groupby(items, key=lambda i: i.domain):
        out += [f"## {name or '(no domain)'}", ""]
        for item in group:
            out += _withheld(item) if item.id in hidden else _section(item, sorted(links.get(item.id, [])))
    return Document("\n".join(out).rstrip() + "\n", len(items))


def _withheld(item: Engram) -> list[str]:
    return [f"### {WITHHELD_TITLE}", "", f"*{item.kind}* · status quarantined: held back for a curator's review. "
            f"`{item.id}` · `{item.path}`", ""]


def _section(item: Engram, links: list[str]) -> list[str]:
    facts = [f"*{item.kind}*", f"importance {item.importance:.2f}", f"confidence {item.confidence:.2f}"]
    if item.status != "active":
        facts.append(f"status {item.status}")
    facts.append(f"recalled {item.retrieval_count} time(s), {item.effective_retrievals} effective")
    verified = item.verification_status
    if item.last_verified_at:
        verified += f", last verified {item.last_verified_at[:10]}"
    facts.append(verified)
    lines = [f"### {item.title}", "", " · ".join(facts), ""]
    provenance = f"By {item.created_by or 'unknown'} on {item.created_at[:10]} ({item.source_type})"
    if item.updated_at and item.updated_at[:10] != item.created_at[:10]:
        provenance += f", updated {item.updated_at[:10]} by {item.updated_by or 'unknown'}"
    if item.source:
        provenance += f"; source: {_source_text(item.source)}"
    lines += [f"{provenance}. `{item.id}` · `{item.path}`", ""]
    if item.summary:
        lines += [f"> {item.summary}", ""]
    if item.content.strip():
        lines += [item.content.rstrip(), ""]
    if links:
        lines += ["Links: " + "; ".join(links), ""]
    return lines


def _source_text(source: object) -> str:
    if isinstance(source, dict):
        if {"importer", "from", "key"} <= source.keys():
            return f"{source['importer']} import of {source['from']} ({source['key']})"
        return ", ".join(f"{k} {v}" for k, v in source.items())
    return str(source)
