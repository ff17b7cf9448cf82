"""Shared checks for the importer tests: a source tree's bytes, and Obsidian's link rules."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests.conftest import TESTS

DATA = TESTS / "data"
WIKILINK = re.compile(r"!?\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")


def checksums(folder: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file below ``folder`` (hidden ones included)."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def resolves(folder: Path, target: str) -> bool:
    """Whether ``[[target]]`` finds a file in ``folder`` as Obsidian resolves it: a
    vault-relative path (``.md`` optional), else a unique file name anywhere."""
    target = target.strip()
    for candidate in (target, f"{target}.md"):
        if (folder / candidate).is_file():
            return True
    name = Path(target).name
    matches = [p for p in folder.rglob("*") if p.is_file() and p.name in (name, f"{name}.md")]
    return len(matches) == 1


def links_in(folder: Path, rel: str) -> list[str]:
    return WIKILINK.findall((folder / rel).read_text(encoding="utf-8"))
