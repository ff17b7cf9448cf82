"""Team: the vault as a git repository shared by many machines.

Owns laying out a vault (:mod:`.setup`), the repository and merge-driver registration
(:mod:`.gitstore`), ``engram sync`` (:mod:`.sync`) with its parts — what it commits
(:mod:`.staging`), its in-memory tree merge (:mod:`.treemerge`), the settling of merged
files (:mod:`.settle`), its intent journal and crash recovery (:mod:`.journal`), and
the remote's answers (:mod:`.remote`) — the hooks that settle and report after a plain
``git pull`` (:mod:`.hooks`), an item's timeline (:mod:`.history`), the committed
versions doctor measures a stale hash against (:mod:`.committed`), the merge records
(:mod:`.mergelog`) and the items a merge flagged (:mod:`.conflicts`).

The field-by-field merge itself is :mod:`mergedriver`, shared with the git driver.
Imports :mod:`engram.recall` (sync folds the usage journal first), :mod:`engram.items`,
:mod:`engram.index`, :mod:`engram.store` and :mod:`engram.errors`; never an adapter.
"""
