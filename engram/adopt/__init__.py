"""Adopt: notes and knowledge from other tools, in place or imported, and exports.

In place: ``engram adopt`` (:func:`.adopting.adopt`: write an id into notes that have
only a derived one, and nothing else) and the adoption summary ``doctor`` shows
(:func:`.adopting.summary`: how many notes carry an id, how many are indexed only, what
``adopt`` would change, which wikilinks do not resolve). Reading notes leniently lives in
:mod:`engram.store.notes`, in-place edits in :mod:`engram.store.surgical` and wikilink
resolution in :mod:`engram.index.wikilinks`, because the index and every writer need them.

Imports: a folder of Markdown (Obsidian or plain, :mod:`.markdown`), a basic-memory
project (:mod:`.basic_memory`), the reference MCP memory server's ``memory.jsonl``
(:mod:`.memory_server`), a Co-Engram repository (:mod:`.co_engram`) and JSON / JSON Lines
records (:mod:`.records`) — each reads its source into a :class:`~.batch.Batch` that
:func:`.batch.run` writes; the choice of reader is :mod:`.sources`. Exports
(:mod:`.export`): ``KNOWLEDGE.md`` and JSON Lines that import back into an equal vault.

Importers only read their source. Every item they write goes through
:func:`engram.items.writing.create` and every edge through :mod:`engram.items.links`, so
validation, deduplication, the audit log and every screen on the write path apply.
This layer may import errors, store, index, items, recall and lifecycle (the layers below
it), never team, doctor, vault or an adapter.
"""
