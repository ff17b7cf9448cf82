"""engram: team memory for AI agents and people, kept as plain Markdown in git.

The library is the pure core (model and format, vault and paths, index, recall, git
store, audit …); the CLI (``engram.cli``), the MCP server and the viewer are thin
adapters on top and the core never imports them. Start with :class:`engram.vault.Vault`::

    from engram import Vault
    vault = Vault.open("path/to/vault")
    result = vault.create("Use pg_repack, not VACUUM FULL", "…", domain=["ops", "postgres"])
"""

from engram.errors import EngramError
from engram.store.model import Engram, Evidence, Synapse
from engram.vault import CreateResult, Vault

__all__ = ["CreateResult", "Engram", "EngramError", "Evidence", "Synapse", "Vault"]
__version__ = "0.1.0"
