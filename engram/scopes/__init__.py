"""Scopes: knowledge that climbs private → team → org, and capture from where work happens.

- :mod:`~engram.scopes.settings` — the ``scopes`` and ``capture`` sections of
  ``engram.yaml`` and the one editor that sets their keys without touching other bytes;
- :mod:`~engram.scopes.org` — the org vault: a second vault repository shared by many
  teams, cloned under ``.engram/scopes/org/`` and synced with :mod:`engram.team.sync`;
- :mod:`~engram.scopes.recall` — one search over this vault and the org vault, each hit
  saying its scope;
- :mod:`~engram.scopes.gate` — the generalization gate at the org boundary (pure);
- :mod:`~engram.scopes.promotion` — endorse, eligibility, promote, review, generalize;
- :mod:`~engram.scopes.distill` — passive capture from an agentsync board and a
  context-keeper decision log, with watermarks;
- :mod:`~engram.scopes.capture` — needs, and the observe → propose path;
- :mod:`~engram.scopes.status` — what is wired, what each missing piece costs, the fix.

It may import engram.errors, engram.store, engram.index, engram.items, engram.recall and
engram.team (it syncs the org repository through engram.team); never the adapters.
"""
