"""Adopting an existing folder of notes (Obsidian, Dendron, plain Markdown) in place.

Owns ``engram adopt`` (:func:`engram.adopt.adopting.adopt`: write an id into notes that
have only a derived one, and nothing else) and the adoption summary ``doctor`` shows
(:func:`engram.adopt.adopting.summary`: how many notes carry an id, how many are
indexed only, what ``adopt`` would change, which wikilinks do not resolve). Reading
notes leniently lives in :mod:`engram.store.notes`, in-place edits in
:mod:`engram.store.surgical` and wikilink resolution in :mod:`engram.index.wikilinks`,
because the index and every writer need them. This layer may import errors, store,
index and items (the layers below it), never team, doctor, vault or an adapter.
"""
