"""engram: team memory for AI agents and people, kept as plain Markdown in git.

The library is a pure core in layers — :mod:`engram.store` (values, files),
:mod:`engram.index` (the derived SQLite catalog), :mod:`engram.items` (reading and
changing items and synapses; :mod:`engram.trust` checks every write), :mod:`engram.recall`,
:mod:`engram.team` (git) — with the
CLI (``engram.cli``) and the MCP server (``engram.mcp``) as thin adapters on top; the core
never imports them. Start with :class:`engram.vault.Vault`, whose methods name the module
that implements each one::

    from engram import Vault
    vault = Vault.open("path/to/vault")
    result = vault.create("Use pg_repack, not VACUUM FULL", "…", domain=["ops", "postgres"])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engram.errors import (
    AlreadyExists,
    BinaryFile,
    Busy,
    Conflict,
    EngramError,
    FileTooLarge,
    Forbidden,
    FormatError,
    GitError,
    InstructionShaped,
    InvalidInput,
    ModelUnavailable,
    NotAdopted,
    NotEligible,
    NotFound,
    NotGeneral,
    SensitiveData,
    StorageError,
    UnknownKind,
    UnsafeFile,
    VaultNotFound,
    VersionConflict,
)

if TYPE_CHECKING:
    from engram.store.model import Engram, Evidence, Synapse
    from engram.vault import CreateResult, Vault

__all__ = [
    "AlreadyExists",
    "BinaryFile",
    "Busy",
    "Conflict",
    "CreateResult",
    "Engram",
    "EngramError",
    "Evidence",
    "FileTooLarge",
    "Forbidden",
    "FormatError",
    "GitError",
    "InstructionShaped",
    "InvalidInput",
    "ModelUnavailable",
    "NotAdopted",
    "NotEligible",
    "NotFound",
    "NotGeneral",
    "SensitiveData",
    "StorageError",
    "Synapse",
    "UnknownKind",
    "UnsafeFile",
    "Vault",
    "VaultNotFound",
    "VersionConflict",
]
__version__ = "0.1.0"
#: The name the project is published and installed under (``pip install engram-team-memory``);
#: the import package is ``engram`` and the console script ``engram``. (``engram-vault`` on
#: PyPI is an unrelated project.)
DISTRIBUTION = "engram-team-memory"

#: Public names loaded on first use (PEP 562), so ``import engram`` — which every
#: ``engram`` command and git hook pays — does not import every layer: ``engram --version``
#: needs none of them. The errors above are cheap and stay eager.
_LAZY = {
    "CreateResult": "engram.vault", "Vault": "engram.vault",
    "Engram": "engram.store.model", "Evidence": "engram.store.model", "Synapse": "engram.store.model",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engram' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once; later lookups skip this function
    return value
