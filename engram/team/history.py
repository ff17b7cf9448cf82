"""An item's history: this machine's audit entries and the git history of its file.

The audit log (``.engram/audit.jsonl``) is machine-local: it shows what was done here,
with versions and fields. git's history is the team's: ``git log --follow`` over every
path the item has had (a title change moves the file) shows teammates' merged changes
too. Both are returned, oldest first; outside a git repository the git part is empty.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from engram.items.reading import get
from engram.items.state import VaultState
from engram.store.audit import AuditEntry

_SEP = "\x1f"


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    author: str
    at: str
    subject: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"sha": self.sha, "author": self.author, "at": self.at, "subject": self.subject, "path": self.path}


@dataclass(frozen=True, slots=True)
class History:
    id: str
    path: str | None
    audit: tuple[AuditEntry, ...]
    commits: tuple[Commit, ...]

    def to_json(self) -> dict[str, Any]:
        import json

        return {"id": self.id, "path": self.path, "audit": [json.loads(e.to_json()) for e in self.audit],
                "commits": [c.to_json() for c in self.commits]}


def history(state: VaultState, ref: str) -> History:
    """Audit entries and git commits of one item (see the module docstring). Raises NotFound."""
    item = get(state, ref)
    audit = tuple(state.audit.entries(item.id))
    paths = list(dict.fromkeys([p for p in (item.path, *(e.path for e in audit)) if p]))
    seen: dict[str, Commit] = {}
    for path in paths:
        for commit in _log(state, path):
            seen.setdefault(commit.sha, commit)
    commits = tuple(sorted(seen.values(), key=lambda c: (c.at, c.sha)))
    return History(item.id, item.path, audit, commits)


def _log(state: VaultState, rel: str) -> list[Commit]:
    fmt = _SEP.join(("%H", "%an", "%aI", "%s"))
    try:
        proc = subprocess.run(
            ["git", "log", "--follow", f"--format={fmt}", "--", rel],
            cwd=state.root, capture_output=True, text=True, check=False, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    out: list[Commit] = []
    for line in proc.stdout.splitlines():
        parts = line.split(_SEP)
        if len(parts) == 4:
            out.append(Commit(parts[0], parts[1], parts[2], parts[3], rel))
    return out
