"""Team: the vault as a git repository shared by many machines.

Owns laying out a vault (:mod:`.setup`), the repository and merge-driver registration
(:mod:`.gitstore`), ``engram sync`` (:mod:`.sync`) and its in-memory tree merge
(:mod:`.treemerge`), the hooks that report after a plain ``git pull`` (:mod:`.hooks`),
the merge records (:mod:`.mergelog`) and the items a merge flagged (:mod:`.conflicts`).

The field-by-field merge itself is :mod:`mergedriver`, shared with the git driver.
Imports :mod:`engram.recall` (sync folds the usage journal first), :mod:`engram.items`,
:mod:`engram.index`, :mod:`engram.store` and :mod:`engram.errors`; never an adapter.
"""
