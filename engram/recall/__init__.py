"""Recall: turning a query into ranked, explained, budgeted hits.

Owns the pipeline (:mod:`.search`), its settings and result values (:mod:`.results`),
lexical candidates and coverage (:mod:`.lexical`), spreading activation over synapses
(:mod:`.graph`), disclosure tiers and warnings (:mod:`.disclosure`), the usage
journal that records retrievals without rewriting Markdown (:mod:`.usage`), and the
optional semantic part of the score (:mod:`.semantic`, the one module that imports the
embedding model).

Reads only the derived index, never Markdown (the usage flush writes through
:mod:`engram.items`). Imports :mod:`engram.items`, :mod:`engram.index`,
:mod:`engram.store` and :mod:`engram.errors`; never git or an adapter.
"""
