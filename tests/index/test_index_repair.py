"""A broken index is rebuilt by `engram reindex` alone; nothing else under .engram/ moves.

And no message anywhere tells a person to delete `.engram/`: it holds the trash (the
only copy of deleted items) and the audit log.
"""

from __future__ import annotations

import ast
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.conftest import ROOT
from tests.mcp_helpers import engram_command


def keepsakes(vault: Vault) -> dict[str, bytes]:
    """What .engram/ holds besides the index and the vector cache (derived, filled by
    searches): trash, audit log, usage journal."""
    state = vault.root / ".engram"
    return {
        p.relative_to(state).as_posix(): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and not p.name.startswith(("index.sqlite", "vectors.sqlite")) and not p.name.endswith(".lock")
    }


@pytest.fixture
def used(vault: Vault) -> Vault:
    vault.create("Kept item", "kept body about otters", domain=["a"])
    vault.create("Deleted item", "only copy in the trash", domain=["a"])
    vault.delete("Deleted item")
    vault.search("otters")  # journaled usage
    vault.close()
    return vault


def cli(vault: Vault, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        engram_command("--vault", str(vault.root), *args), capture_output=True, text=True, timeout=120, check=False
    )


def corrupt_pages(db: Path) -> None:
    """Keep SQLite's header and first page (so the file opens), scramble the rest."""
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for at in range(page, len(data), 7):
        data[at] = (data[at] * 31 + 7) % 256
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["garbage", "pages"])
def test_a_broken_index_is_moved_aside_and_rebuilt(used: Vault, damage: str) -> None:
    db = used.root / ".engram" / "index.sqlite"
    with sqlite3.connect(db) as conn:  # fold the WAL in, so the damage hits real pages
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = keepsakes(used)
    assert any(k.startswith("trash/") for k in before) and "audit.jsonl" in before and "usage.jsonl" in before
    if damage == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    else:
        corrupt_pages(db)
    for args in (["reindex"], ["list"], ["search", "otters"]):
        proc = cli(used, *args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert "a/kept-item.md" in cli(used, "list").stdout
    after = keepsakes(used)
    assert after.pop("usage.jsonl").startswith(before.pop("usage.jsonl"))  # the search appended
    assert after == before
    assert (used.root / ".engram" / "index.sqlite.broken").exists()


def test_reindex_rebuilds_in_place_so_other_processes_keep_their_index(used: Vault) -> None:
    other = Vault.open(used.root)
    try:
        assert [i.title for i in other.list()] == ["Kept item"]
        assert cli(used, "reindex").returncode == 0
        assert [i.title for i in other.list()] == ["Kept item"]  # same file, rebuilt
        assert not (used.root / ".engram" / "index.sqlite.broken").exists()
    finally:
        other.close()


#: ``git rm --cached`` untracks and keeps the files: the advice for a committed ``.engram/``.
_DESTRUCTIVE = re.compile(r"(?i)\b(delete|remove|rm\b(?! -r --cached)|erase|wipe)[^.\n]{0,40}\.engram\b(?!/trash)")


def _literals(path: Path) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_message_or_doc_suggests_deleting_the_state_folder() -> None:
    offenders = []
    for path in sorted((ROOT / "engram").rglob("*.py")):
        offenders += [f"{path.name}: {s[:80]!r}" for s in _literals(path) if _DESTRUCTIVE.search(s)]
    for path in [ROOT / "README.md", ROOT / "vault_template" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        offenders += [f"{path.name}: {m.group(0)!r}" for m in _DESTRUCTIVE.finditer(text)]
        offenders += [f"{path.name}: 'safe to delete'" for _ in re.finditer(r"\.engram/`[^\n]*safe to delete", text)]
    assert offenders == []
