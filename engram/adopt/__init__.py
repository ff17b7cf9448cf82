"""Adopt: bringing knowledge in from other tools, and taking it out again.

Owns the importers — a folder of Markdown (Obsidian or plain, :mod:`.markdown`), a
basic-memory project (:mod:`.basic_memory`), the reference MCP memory server's
``memory.jsonl`` (:mod:`.memory_server`), a Co-Engram repository (:mod:`.co_engram`) and
JSON / JSON Lines records (:mod:`.records`) — each of which reads its source into a
:class:`~.batch.Batch` that :func:`.batch.run` writes; the choice of reader
(:mod:`.sources`); and the exports (:mod:`.export`: ``KNOWLEDGE.md`` and JSON Lines that
import back into an equal vault).

Importers only read their source. Every item they write goes through
:func:`engram.items.writing.create` and every edge through :mod:`engram.items.links`, so
validation, deduplication, the audit log and every screen on the write path apply.
Imports :mod:`engram.items`, :mod:`engram.index`, :mod:`engram.store` and
:mod:`engram.errors`; never recall, git or an adapter.
"""
