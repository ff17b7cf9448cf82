"""What a vault's Obsidian settings tell engram: where the person keeps templates.

Obsidian's core Templates plugin names its folder in ``.obsidian/templates.json``
(``{"folder": "Templates"}``), the Templater plugin in
``.obsidian/plugins/templater-obsidian/data.json`` (``"templates_folder"``). A note in
either folder is a template: every note made from it copies its frontmatter, so an
``id`` written into a template would be shared by all of them (duplicate ids, and
search would collapse them into one hit). engram never writes an id into one.

Settings that are missing, unreadable or not JSON name no folder: reading them never
fails a command.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from engram.errors import EngramError
from engram.store.fsio import read_regular

#: (settings file, key) pairs that name a templates folder.
TEMPLATE_SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)
_LIMIT = 1 << 20


def template_folders(root: Path) -> tuple[str, ...]:
    """The vault-relative folders the vault's Obsidian settings keep templates in."""
    found: list[str] = []
    for rel, key in TEMPLATE_SETTINGS:
        try:
            data = read_regular(root / rel, rel, _LIMIT)[1]
            value = json.loads(data.decode("utf-8")).get(key)
        except (OSError, EngramError, ValueError, AttributeError):
            continue
        if not isinstance(value, str):
            continue
        parts = [p for p in PurePosixPath(value.replace("\\", "/")).parts if p not in ("/", ".")]
        if parts and ".." not in parts:
            folder = "/".join(parts)
            if folder not in found:
                found.append(folder)
    return tuple(found)


def in_folders(rel: str, folders: tuple[str, ...]) -> str | None:
    """The folder of ``folders`` that holds ``rel`` (compared case-insensitively, as
    Obsidian on macOS and Windows does), or None."""
    key = rel.casefold()
    for folder in folders:
        if key.startswith(folder.casefold() + "/"):
            return folder
    return None
