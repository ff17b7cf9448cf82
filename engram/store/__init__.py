"""The store: what an item and a synapse are, and how they live in files.

Owns the value types (:mod:`.model`), the typed file codec over
:mod:`mergedriver.codec` (:mod:`.format`), where a file goes (:mod:`.paths`), atomic
writes and the vault lock (:mod:`.fsio`), the rules a write must pass (:mod:`.rules`),
the committed settings (:mod:`.settings`), the audit log (:mod:`.audit`) and the pure
text measures of deduplication (:mod:`.dedup`).

The lowest layer of the core: it imports only :mod:`engram.errors`, the standard
library, PyYAML and :mod:`mergedriver`. It knows nothing of the index, recall or git.
"""
