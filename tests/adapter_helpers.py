"""Helpers for the adapter tests (CLI and MCP): a vault with one of everything, and a
snapshot of every file a command could touch.

:func:`seed` fills a vault through the library (fast) with what the adapters' commands
and tools read: items in two domains, a synapse, a skill, an archive proposal, a
trashed item and an item a merge flagged, so every read command has something to show
and every write command something to change.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from engram.store.format import render_engram
from engram.vault import Vault
from mergedriver.merge import merge_file
from mergedriver.records import append_records

#: Files under .engram/ that reads may write: the derived index, the vector cache (a
#: search embeds the few items still without vectors) and the retrieval journal
#: (searches journal what they returned; `engram flush` folds it in later).
DERIVED = (".engram/index.sqlite", ".engram/vectors.sqlite", ".engram/usage.jsonl")


@dataclass(frozen=True)
class Seeded:
    repack: str  # ops/postgres procedure, depends_on window
    window: str  # ops decision
    flaky: str  # three failures, an open archive proposal
    flagged: str  # a merge kept a conflict block in it
    skill: str
    trashed: str  # deleted: in .engram/trash/
    synapse: str  # repack --depends_on--> window
    proposal: str  # the archive proposal for flaky


def seed(vault: Vault) -> Seeded:
    repack = vault.create(
        "Use pg_repack instead of VACUUM FULL", "VACUUM FULL takes an exclusive lock on the table.",
        domain=["ops", "postgres"], kind="procedure", tags=["postgres"],
    ).item
    window = vault.create("Maintenance window is Sunday night", "Schedule table rewrites then.",
                          domain=["ops"], kind="decision").item
    syn = vault.link(repack.id, "depends_on", window.id, evidence="the rewrite needs the window")
    flaky = vault.create("Restart the worker by hand", "Restart it after each deploy.", domain=["ops"]).item
    for _ in range(3):
        vault.feedback(flaky.id, "failed")
    vault.maintain("light")
    (proposal,) = [p for p in vault.proposals(kind="archive")]
    skill = vault.create_skill("Rebuild a bloated table online", ["check free disk", "run pg_repack"])
    trashed = vault.create("A mistake", "oops", domain=["scratch"]).item
    vault.delete(trashed.id)
    flagged = vault.create("The answer", "41", domain=["facts"]).item
    merge_concurrent_edits(vault, flagged.id)
    vault.refresh()
    return Seeded(repack.id, window.id, flaky.id, flagged.id, skill.id, trashed.id, syn.id, proposal.id)


def merge_concurrent_edits(vault: Vault, item_id: str) -> None:
    """Merge two edits of the same line into the item, as git's driver would (flags it)."""
    item = vault.get(item_id)
    assert item.path is not None
    path = vault.abspath(item.path)
    edits = [
        render_engram(replace(item, content=text, updated_by=who, updated_at=at, version=item.version + 1))
        for text, who, at in (("42\n", "alice", "2026-06-22T09:00:00.000Z"), ("43\n", "bob", "2026-06-22T10:00:00.000Z"))
    ]
    merged = merge_file(path.read_bytes(), edits[0], edits[1], item.path)
    path.write_bytes(merged.data)
    append_records(vault.state.state_dir, [merged.record(item.path)], via="driver")


def tree(root: Path, *, allow: tuple[str, ...] = DERIVED) -> dict[str, bytes]:
    """Every file under ``root`` but git's internals and the ``allow`` prefixes: the
    vault, and also its local state (audit log, trash, journals, merge records)."""
    return {
        rel: p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not (rel := p.relative_to(root).as_posix()).startswith(".git/")
        and not rel.startswith(allow)
    }


AUDIT_LOG = ".engram/audit.jsonl"


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """The files that differ. A refusal changes nothing but records itself: audit-log
    lines that only append ``outcome: refused`` entries (issue 11: every refused write is
    audited, with the rule that fired) do not count as a change."""
    return sorted(
        k for k in before.keys() | after.keys()
        if before.get(k) != after.get(k) and not (k == AUDIT_LOG and _only_refusals(before.get(k), after.get(k)))
    )


def _only_refusals(old: bytes | None, new: bytes | None) -> bool:
    old = old or b""
    if new is None or not new.startswith(old):
        return False
    added = [json.loads(line) for line in new[len(old):].splitlines() if line.strip()]
    return bool(added) and all(entry.get("outcome") == "refused" and entry.get("rule") for entry in added)


def git_state(root: Path) -> tuple[str, str]:
    """HEAD and the porcelain status: what a write to git (a commit, a staged file) moves."""
    head = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=False).stdout
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                            check=True).stdout
    return head, status
