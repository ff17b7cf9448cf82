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
``domain`` narrows it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby

from engram.items.state import VaultState
from engram.store.model import Engram, Synapse, now
from engram.store.rules import Filters


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


def markdown(state: VaultState, *, domain: str | None = None) -> str:
    """The ``KNOWLEDGE.md`` document (see the module docstring)."""
    items = _items(state, domain)
    titles = {i.id: i.title for i in items}
    synapses = state.index.synapses()
    links: dict[str, list[str]] = {}
    for syn in synapses:
        for end, other, arrow in ((syn.source, syn.target, "→"), (syn.target, syn.source, "←")):
            if other in titles:
                links.setdefault(end, []).append(f"{arrow} {syn.kind} {titles[other]}")
    domains = sorted({i.domain for i in items})
    out = [
        f"# Knowledge: {state.root.name}",
        "",
        f"{len(items)} item(s) in {len(domains)} domain(s), exported by engram on {now()[:10]}"
        + (f" (domain {domain})" if domain else "")
        + ". Grouped by domain, most important first.",
        "",
    ]
    for name, group in groupby(items, key=lambda i: i.domain):
        out += [f"## {name or '(no domain)'}", ""]
        for item in group:
            out += _section(item, sorted(links.get(item.id, [])))
    return "\n".join(out).rstrip() + "\n"


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
