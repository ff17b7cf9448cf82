"""The web viewer: a person's window on the vault, on loopback.

An adapter like the CLI and the MCP server: it imports :class:`engram.vault.Vault`, the
error tree and value types, and shows and changes the vault only through ``Vault``'s
methods. Server-rendered pages (Starlette, Jinja2 with autoescaping, markdown-it-py with
raw HTML off), htmx for in-page filtering and Cytoscape.js for the graph, both vendored
under ``static/`` with their licences so nothing is fetched at run time.

Modules: :mod:`.app` (routes, error pages), :mod:`.context` (what every page shares),
:mod:`.pages` (reading), :mod:`.actions` (writing), :mod:`.params` (query parameters),
:mod:`.render` (templates), :mod:`.markup` (Markdown with Obsidian's syntax),
:mod:`.notes` (a note's links, embeds and properties resolved against the vault),
:mod:`.security` (Host/Origin, token, CSRF, headers), :mod:`.health` (doctor in the
background), :mod:`.server` (``engram viewer``).
"""

from engram.viewer.app import build_app
from engram.viewer.server import serve

__all__ = ["build_app", "serve"]
