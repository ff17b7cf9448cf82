"""Commits that changed another author's item without a curator's role.

Roles are enforced by engram on the machine that writes (:mod:`engram.trust.roles`);
someone with write access to the git remote can still push any change. This module makes
such changes visible: for each commit it compares every changed item with its parent's
version and asks the role rules whether the commit's actor could have made that change.
The actor is the new version's ``updatedBy`` (engram records it on every write), or the
commit's author name for a deletion. Roles are read from the vault's current
``engram.yaml``; without a ``roles`` section nothing is reported (every actor is a
curator then).

``engram sync`` checks the commits it brings in; ``engram doctor`` checks the most
recent commits of the current branch (:data:`DOCTOR_COMMITS`). Merge commits are
skipped: their changes are the commits they merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.errors import Forbidden
from engram.items.guard import item_of
from engram.items.state import VaultState
from engram.store.model import Engram
from engram.store.paths import STATE_PREFIX
from engram.team.gitstore import GitRepo
from engram.trust import roles

#: How many recent commits doctor looks at.
DOCTOR_COMMITS = 200
#: Keys a write changes as bookkeeping (not a change of what the item says).
_BOOKKEEPING = frozenset(
    {"version", "updatedAt", "updatedBy", "contentHash", "contentSize", "retrievalCount", "effectiveRetrievals",
     "failedUses", "reinforcementScore", "lastRetrievedAt", "lastEffectiveAt", "mergeConflicts", "slug"}
)


@dataclass(frozen=True, slots=True)
class Unauthorized:
    commit: str
    actor: str
    path: str
    message: str

    def describe(self) -> str:
        return f"commit {self.commit[:10]}: {self.message}"


def _changed(old: Engram, new: Engram) -> tuple[str, ...]:
    a, b = old.to_meta(), new.to_meta()
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in _BOOKKEEPING and a.get(k) != b.get(k)]
    if old.content != new.content:
        keys.append("content")
    return tuple(keys)


def check_commits(repo: GitRepo, state: VaultState, revisions: str, *, limit: int | None = None) -> list[Unauthorized]:
    """Unauthorized changes in the non-merge commits ``git rev-list revisions`` names."""
    if not state.roles.configured:
        return []
    args = ["rev-list", "--no-merges", "--parents", "--format=%an"]
    if limit is not None:
        args.append(f"--max-count={limit}")
    out = repo.run(*args, revisions, "--", check=False)
    if out.status != 0:
        return []
    lines = out.out.splitlines()
    commits: list[tuple[str, str | None, str]] = []
    for i in range(0, len(lines) - 1, 2):
        shas = lines[i].removeprefix("commit ").split()
        commits.append((shas[0], shas[1] if len(shas) > 1 else None, lines[i + 1]))
    prefix = state.root.relative_to(repo.top).as_posix()
    lead = "" if prefix == "." else prefix + "/"
    found: list[Unauthorized] = []
    for sha, parent, author in commits:
        if parent is None:
            continue
        diff = {p: c for p, c in repo.diff_tree(parent, sha).items()
                if p.startswith(lead) and p.endswith(".md") and not p[len(lead):].startswith(STATE_PREFIX)}
        blobs = repo.read_blobs([s for c in diff.values() for s in (c.old_sha, c.new_sha) if s])
        for path, change in sorted(diff.items()):
            old = item_of(blobs.get(change.old_sha or ""), path[len(lead):])
            if old is None:
                continue  # a new item: anyone but a reader may create one
            new = item_of(blobs.get(change.new_sha or ""), path[len(lead):]) if change.new_sha else None
            actor = (new.updated_by if new is not None else "") or author
            role = state.roles.of(actor)
            try:
                if new is None:
                    roles.check_delete(actor, role, old, retire=state.roles.retire)
                else:
                    fields = _changed(old, new)
                    if new.status == "quarantined":  # the screen's doing, not the writer's
                        fields = tuple(f for f in fields if f != "status")
                    if fields:  # a landed review promotion's settle is anyone's to make
                        roles.check_update(actor, role, old, fields, new.status, settles_to=new.visibility,
                                           retire=state.roles.retire)
            except Forbidden as exc:
                found.append(Unauthorized(sha, actor, path[len(lead):], exc.message.rstrip(".")))
    return found
