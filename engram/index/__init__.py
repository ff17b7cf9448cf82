"""The index: a derived, disposable SQLite catalog of the vault's files.

Owns the database (:mod:`.catalog`), turning files into rows (:mod:`.rows`), the search
primitives recall composes (:mod:`.search`), turning typed text into safe FTS5 queries
(:mod:`.query`, here because every ``MATCH`` the index runs goes through it), knowing
which files changed (:mod:`.watcher`), the domain tree with counts (:mod:`.overview`)
and the item vectors semantic recall stores (:mod:`.vectors`, opaque bytes here).

Imports :mod:`engram.store` and :mod:`engram.errors` only; nothing here reads a setting
of recall or writes a vault file. ``sqlite3`` is imported and its errors translated in
:mod:`.catalog` alone.
"""
