"""The files ``engram init`` lays into a new vault: the ``vault_template`` package's.

Apart from :mod:`engram.team.setup` so that what sync reads of them
(:mod:`engram.team.staging`: a file that is the template's byte for byte was laid whole)
does not import the setup, which imports sync.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.abc import Traversable

_SKIP = frozenset({"__init__.py", "__pycache__"})


@cache
def template_files() -> dict[str, bytes]:
    """Vault-relative path → bytes for every file in ``vault_template`` (read once; do
    not change the mapping)."""
    out: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            if child.name in _SKIP or child.name.endswith(".pyc"):
                continue
            rel = prefix + child.name
            if child.is_dir():
                walk(child, rel + "/")
            else:
                out[rel] = child.read_bytes()

    walk(resources.files("vault_template"), "")
    return out
