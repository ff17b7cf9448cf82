"""engram's git merge driver: field-aware three-way merges of engram and synapse files.

Imports only the standard library and PyYAML so git can start it quickly, once per
conflicting file. ``mergedriver.codec`` is the canonical reader/writer of the on-disk
format, shared with the ``engram`` library.
"""
