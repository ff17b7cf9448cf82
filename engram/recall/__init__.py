"""Recall: turning a query into ranked, explained, budgeted hits.

Owns the pipeline (:mod:`.search`), its settings and result values (:mod:`.results`),
lexical candidates and coverage (:mod:`.lexical`), spreading activation over synapses
(:mod:`.graph`), disclosure tiers and warnings (:mod:`.disclosure`), the usage
journal that records retrievals without rewriting Markdown (:mod:`.usage`), recall by
meaning — the sentence encoder (:mod:`.encoder`, the one module that imports ONNX
Runtime), the vectors of a vault's items (:mod:`.vectors`), the meaning stage of a query
(:mod:`.meaning`) and the background fill (:mod:`.filling`) — and the optional static
model's part of the score (:mod:`.semantic`, the one module that reads its weights).

Reads only the derived index, never Markdown (the usage flush writes through
:mod:`engram.items`). Imports :mod:`engram.items`, :mod:`engram.index`,
:mod:`engram.store` and :mod:`engram.errors`; never git or an adapter.
"""
