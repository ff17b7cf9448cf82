"""Quality: measuring recall on a vault's own data.

- :mod:`~engram.quality.evaluation` — a golden set of the vault's own questions scored
  (recall@k, MRR, AP, nDCG@10, abstention) and gated against minimums and a baseline:
  ``engram eval``;
- :mod:`~engram.quality.timing` — search latency on the vault's own words:
  ``engram bench``.

Both run recall exactly as an agent's ``engram_search`` does — this vault and the org
vault when one is set up (:func:`engram.scopes.recall.search`), the vault's own recall
settings — with usage recording off, and write nothing.

It may import engram.errors, engram.store, engram.index, engram.items and engram.scopes
(it sits above scopes to search as an agent does); never the adapters.
"""
