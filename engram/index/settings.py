"""The ``index`` section of ``engram.yaml``: which Markdown files are items.

Kept apart from :mod:`engram.index.catalog` so the settings read without opening a
database; a change of the ignore list rebuilds the index (the catalog compares the list
it was built with on open).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """The ``index`` section of ``engram.yaml``: ``ignore`` lists vault-relative paths or
    globs (``Templates/``, ``*.excalidraw.md``) of Markdown files that are not items; a
    trailing ``/`` names a folder and everything under it."""

    ignore: tuple[str, ...] = ()

    def ignores(self, rel: str) -> bool:
        for pattern in self.ignore:
            if pattern.endswith("/"):
                if rel.startswith(pattern) or fnmatch.fnmatchcase(rel, pattern + "*"):
                    return True
            elif fnmatch.fnmatchcase(rel, pattern):
                return True
        return False
