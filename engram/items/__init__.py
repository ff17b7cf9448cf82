"""Items: reading and changing the vault's items and synapses.

Owns the state every operation shares (:mod:`.state`: root, settings, index, audit log,
lock, actor, and the helpers that resolve, place and write), the item operations
(:mod:`.reading`, :mod:`.writing`), synapses (:mod:`.links`), the derived wikilink
section (:mod:`.derived`), repairs (:mod:`.repair`), the trash (:mod:`.trash`), the
graph around an item (:mod:`.neighbourhood`), a note's frontmatter by owner
(:mod:`.properties`) and the images notes embed (:mod:`.attachments`).

Every function takes a :class:`~.state.VaultState` as its first argument;
:class:`engram.vault.Vault` exposes them as its methods. Imports :mod:`engram.index`,
:mod:`engram.store` and :mod:`engram.errors`; never recall, git or an adapter.
"""
