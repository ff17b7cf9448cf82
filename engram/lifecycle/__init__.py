"""Learning and lifecycle: knowledge that strengthens, fades, is superseded and re-verified.

Owns feedback (reinforce / fail, with a Hebbian share along strong edges, journaled and
folded in batches), ``learn`` (offline classification of a lesson against what the vault
holds, then reinforce, extend, supersede, link or insert), supersede chains and lineage,
freshness and verification, contradiction resolution, maintenance stages and the
proposals they write, forgetting (to a restorable state; purge only on request), and
skills. It may import the layers below it — ``errors``, ``store``, ``index``, ``items``
and ``recall`` — and nothing above: ``team`` imports it (sync folds feedback and
settles supersede chains after a merge), never the other way round.
"""
