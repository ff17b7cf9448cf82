"""``engram sync``: commit, fetch, merge in process, push, and retry when a peer was first.

One call brings a clone level with its upstream:

1. fold journaled usage and feedback into the items (:func:`engram.lifecycle.feedback.fold`);
2. commit the vault's local changes;
3. fetch the upstream branch (a missing branch is fine: the first push creates it; an
   unreachable remote is reported, and the local commits stay for the next sync);
4. integrate: fast-forward when possible, otherwise merge *in this process* — the files
   both sides changed are merged by :mod:`engram.team.treemerge` with the same functions the
   git driver runs, the result is written as a tree and a merge commit, and the work tree
   is moved to it with ``git merge --ff-only``; then the derived link sections of the
   items the merge touched are regenerated from the merged synapses and committed; and
   learn decisions the two sides made apart are finished (forked supersede chains
   converge on the newest lesson; contradictory new lessons are superseded or disputed,
   :func:`engram.lifecycle.reconcile.after_merge`) and committed;
5. push; when the push is rejected because a peer pushed first, go back to 3 (at most
   ``max_attempts`` times).

Invariants: the repository is never left mid-merge or mid-rebase — the merge commit is
built beside the work tree and the work tree only ever fast-forwards, so a failure at
any step leaves the last commit checked out and nothing half-applied. Merges that need a
person (a text conflict in a non-item file, an item that does not parse) stop the sync
before anything changes and name the files. Local work is never thrown away.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from engram.errors import FormatError, GitError
from engram.items import derived, repair
from engram.items.guard import GuardReport
from engram.items.state import VaultState
from engram.lifecycle.feedback import fold
from engram.lifecycle.reconcile import after_merge
from engram.store.format import is_canonical, parse_engram, write_engram
from engram.store.fsio import atomic_write
from engram.team import authorship, precommit
from engram.team.gitstore import EMPTY_TREE, GitRepo, unrelated_branches
from engram.team.treemerge import TreeMerger, TreePlan
from mergedriver import codec
from mergedriver.records import append_records

#: Hooks see this and skip engram's own post-merge work (sync does it itself).
HOOK_ENV = {"ENGRAM_SYNC": "1"}


@dataclass
class SyncReport:
    """What a sync did. ``offline`` holds the reason when the remote could not be reached."""

    branch: str
    remote: str | None = None
    committed: int = 0
    fetched: bool = False
    fast_forward: bool = False
    merged: int = 0
    taken: int = 0
    flagged: list[str] = field(default_factory=list)
    kept_edits: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    regenerated: int = 0
    #: Trust (engram.trust): items quarantined, redacted or made private before committing
    #: or after a merge, and secrets that arrived from the remote (to be rotated).
    quarantined: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    made_private: list[tuple[str, str]] = field(default_factory=list)
    arrived_secrets: list[str] = field(default_factory=list)
    #: Incoming commits that changed another author's item without a curator's role.
    unauthorized: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    pushed: bool = False
    created_upstream: bool = False
    offline: str | None = None
    attempts: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """A short account for a person."""
        out: list[str] = []
        if self.committed:
            out.append(f"committed {self.committed} local change(s)")
        if self.remote is None:
            out.append("no remote configured: committed locally only (add one with `engram remote add URL`)")
        if self.fast_forward:
            out.append(f"fast-forwarded to {self.remote}/{self.branch}")
        if self.merged or self.taken:
            out.append(f"merged {self.remote}/{self.branch}: {self.merged} file(s) merged, {self.taken} taken as they were")
        for old, new in self.moved:
            out.append(f"two items claimed {old}; one now lives at {new}")
        for path in self.flagged:
            out.append(f"flagged for review: {path} (see `engram conflicts`)")
        for path in self.kept_edits:
            out.append(f"kept an edit to {path} that the other side deleted")
        if self.regenerated:
            out.append(f"regenerated the links of {self.regenerated} item(s)")
        out += [f"quarantined {path}: it reads like instructions to an AI reader (`engram quarantine list`)"
                for path in self.quarantined]
        out += [f"redacted secrets or personal data in {path} before committing it" for path in self.redacted]
        out += [f"moved {old} to {new}: it holds data kept off shared files" for old, new in self.made_private]
        out += [f"a peer committed a secret or personal data — rotate or remove it: {line}"
                for line in self.arrived_secrets]
        out += [f"without a curator's role: {line} (roles do not bind the remote; see docs/trust.md)"
                for line in self.unauthorized]
        for line in self.settled:
            out.append(f"settled: {line}")
        if self.offline:
            out.append(f"offline: {self.offline}; your commits are kept — run `engram sync` again later")
        elif self.pushed:
            out.append(f"pushed to {self.remote}/{self.branch}" + (" (new branch)" if self.created_upstream else ""))
        return out or ["already up to date"]


def sync(
    state: VaultState,
    *,
    remote: str | None = None,
    branch: str | None = None,
    push: bool = True,
    message: str | None = None,
    max_attempts: int = 3,
) -> SyncReport:
    """Synchronise the vault's clone with its upstream (see the module docstring).

    Raises GitError (with what to do next) when the repository is mid-operation, on a
    detached HEAD, when a file needs a person to merge it, or when pushes keep losing.
    """
    with GitRepo(state.root) as repo:
        _check_ready(repo)
        current = repo.current_branch()
        if current is None:
            raise GitError("HEAD is detached; sync needs a branch.", hint="Check out one, e.g. `git switch main`.")
        prefix = state.root.relative_to(repo.top).as_posix()
        prefix = "" if prefix == "." else prefix
        upstream = _upstream_branch(repo, current)
        report = SyncReport(branch=branch or upstream or current)
        first = _remote_for(repo, current, remote) if branch is None else None
        if first is not None and repo.rev(f"refs/remotes/{first}/{report.branch}") is None:
            _refuse_second_history(repo, first, report.branch)  # never fetched: a first sync
        fold(state)
        with state.lock.hold():
            # Edits and renames a person made outside engram, recorded before committing.
            repair.settle_edits(state)
            repair.follow_moves(state)
            report.committed += _commit_local(repo, state, prefix, message, report)
        report.remote = _remote_for(repo, current, remote)
        if report.remote is None:
            return report
        for attempt in range(1, max_attempts + 1):
            report.attempts = attempt
            answer = _fetch(repo, report.remote, report.branch)
            if answer not in ("ok", "missing"):
                report.offline = answer
                return report
            if answer == "ok":
                report.fetched = True
                with state.lock.hold():
                    report.committed += _commit_local(repo, state, prefix, message, report)
                    _integrate(repo, state, prefix, f"refs/remotes/{report.remote}/{report.branch}", report)
            if not push:
                return report
            outcome = _push(repo, report.remote, report.branch)
            if outcome == "ok":
                report.pushed = True
                report.created_upstream = answer == "missing"
                _remember_upstream(repo, current, report.remote, report.branch)
                return report
            if outcome != "rejected":
                report.offline = outcome
                return report
        raise GitError(
            f"{report.remote} rejected the push {max_attempts} times: peers keep pushing first.",
            hint="Your commits are kept; run `engram sync` again.",
        )


# --------------------------------------------------------------------------- steps


def _check_ready(repo: GitRepo) -> None:
    doing = repo.unfinished_operation()
    if doing is not None:
        raise GitError(
            f"the repository is in the middle of {doing}.",
            hint="Finish or abort it (`git merge --abort`, `git rebase --abort`), then run `engram sync`.",
        )
    if repo.run("ls-files", "--unmerged").out.strip():
        raise GitError(
            "the repository has unresolved conflicts.",
            hint="Resolve them and commit (or `git merge --abort`), then run `engram sync`.",
        )


def _identity(repo: GitRepo, state: VaultState) -> dict[str, str]:
    """The vault's actor as committer when git has no identity configured."""
    env = dict(HOOK_ENV)
    if repo.run("var", "GIT_COMMITTER_IDENT", check=False).status != 0:
        email = f"{state.actor.replace(' ', '.')}@{socket.gethostname() or 'engram'}"
        for role in ("AUTHOR", "COMMITTER"):
            env[f"GIT_{role}_NAME"] = state.actor
            env[f"GIT_{role}_EMAIL"] = email
    return env


def _commit_local(
    repo: GitRepo, state: VaultState, prefix: str, message: str | None, report: SyncReport | None = None
) -> int:
    """Commit every change under the vault folder; return how many files it covered.

    The trust rules see every change first (:func:`engram.team.precommit.check_local_changes`):
    a secret the settings refuse stops the sync before anything is staged."""
    _note(report, precommit.check_local_changes(state))
    spec = prefix or "."
    repo.run("add", "--all", "--", spec)
    staged = [p for p in repo.run("diff", "--cached", "--name-only", "-z", "--", spec).out.split("\0") if p]
    if not staged:
        return 0
    text = message or f"engram sync: {len(staged)} change(s) by {state.actor} on {socket.gethostname()}"
    repo.run("commit", "--quiet", "-m", text, "--", spec, env=_identity(repo, state))
    return len(staged)


def _refuse_second_history(repo: GitRepo, remote: str, branch: str) -> None:
    """Before a clone's first sync: when ``remote`` has no ``branch`` but holds history on
    other branches that this clone does not share, pushing would start a second,
    unrelated vault beside the team's. Refuse, and say how to join it instead."""
    if _fetch(repo, remote, branch) != "missing":
        return  # the branch is there (merged as usual) or the remote cannot be reached
    others = unrelated_branches(repo, remote)
    if others:
        theirs = others[0]
        raise GitError(
            f"{remote} has no branch {branch!r} but already holds a history on {theirs!r} that "
            "this clone does not share; pushing would start a second, unrelated vault.",
            hint=f"To join it: `git switch {theirs}` (move aside files git says it would overwrite), "
            f"or `engram sync --branch {theirs}` to merge this vault into it; to publish a separate "
            f"vault on purpose: `engram sync --branch {branch}`.",
        )


def _upstream_branch(repo: GitRepo, branch: str) -> str | None:
    merge = repo.config(f"branch.{branch}.merge")
    return merge.removeprefix("refs/heads/") if merge else None


def _remote_for(repo: GitRepo, branch: str, remote: str | None) -> str | None:
    remotes = [r for r in repo.run("remote").out.split() if r]
    if remote is not None:
        if remote not in remotes:
            raise GitError(f"there is no remote named {remote!r}.", hint="`git remote -v` lists the remotes.")
        return remote
    configured = repo.config(f"branch.{branch}.remote")
    if configured in remotes:
        return configured
    if "origin" in remotes:
        return "origin"
    return remotes[0] if len(remotes) == 1 else None


def _fetch(repo: GitRepo, remote: str, branch: str) -> str:
    """``ok``, ``missing`` (no such branch there yet), or why the remote is unreachable."""
    out = repo.run(
        "fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}",
        check=False, env=HOOK_ENV,
    )
    if out.status == 0:
        return "ok"
    if "couldn't find remote ref" in out.text.lower():
        return "missing"
    return f"cannot fetch from {remote}: {out.text.splitlines()[-1] if out.text else 'no answer'}"


def _push(repo: GitRepo, remote: str, branch: str) -> str:
    """``ok``, ``rejected`` (a peer pushed first), or why the remote is unreachable."""
    out = repo.run("push", "--porcelain", remote, f"HEAD:refs/heads/{branch}", check=False)
    if out.status == 0:
        return "ok"
    text = f"{out.out}\n{out.err}"
    if "[remote rejected]" in text:
        reason = next((line for line in text.splitlines() if "[remote rejected]" in line), text)
        raise GitError(f"{remote} refused the push: {reason.strip()}.", hint="Check the remote's rules (protected branch? hooks?).")
    if "[rejected]" in text or "fetch first" in text or "non-fast-forward" in text:
        return "rejected"
    return f"cannot push to {remote}: {out.text.splitlines()[-1] if out.text else 'no answer'}"


def _remember_upstream(repo: GitRepo, branch: str, remote: str, upstream: str) -> None:
    if repo.config(f"branch.{branch}.remote") is None:
        repo.run("config", f"branch.{branch}.remote", remote)
        repo.run("config", f"branch.{branch}.merge", f"refs/heads/{upstream}")


# --------------------------------------------------------------------------- merging


def _integrate(repo: GitRepo, state: VaultState, prefix: str, upstream: str, report: SyncReport) -> None:
    theirs = repo.rev(upstream)
    head = repo.rev("HEAD")
    if theirs is None or theirs == head:
        return
    if head is not None and repo.is_ancestor(theirs, head):
        return
    report.unauthorized += [u.describe() for u in authorship.check_commits(
        repo, state, theirs if head is None else f"{head}..{theirs}")]
    if head is None or repo.is_ancestor(head, theirs):
        _move_work_tree(repo, theirs)
        report.fast_forward = True
        _refresh_changed(repo, state, prefix, head, theirs)
        if _note(report, precommit.screen_incoming(repo, state, head, theirs)):
            _commit_local(repo, state, prefix, "engram sync: quarantine instruction-shaped items from upstream", report)
        return
    base = repo.merge_base(head, theirs) or EMPTY_TREE
    merger = TreeMerger(repo.read_blobs, lambda path: repo.has_path(head, path), prefix)
    plan = merger.plan(repo.diff_tree(base, head), repo.diff_tree(base, theirs))
    if plan.failures:
        _refuse(plan, upstream)
    report.merged += plan.merged
    report.taken += plan.taken
    report.flagged += plan.flagged
    report.kept_edits += plan.kept_edits
    report.moved += plan.moved
    entries = [
        (path, data if isinstance(data, str) else repo.write_blob(data), mode)
        for path, (data, mode) in sorted(plan.writes.items())
    ] + [(path, None, "0") for path in sorted(plan.deletes)]
    tree = repo.write_tree(head, entries)
    label = upstream.removeprefix("refs/remotes/")
    commit = repo.commit_tree(
        tree, [head, theirs], f"engram sync: merge {label} ({plan.merged} merged, {len(plan.flagged)} flagged)",
        env=_identity(repo, state),
    )
    _move_work_tree(repo, commit)
    append_records(state.state_dir, plan.records, via="sync")
    _refresh_changed(repo, state, prefix, head, commit)
    regenerated = _regenerate(state, plan.touched | merger.endpoints())
    report.regenerated += regenerated
    screened = _note(report, precommit.screen_incoming(repo, state, head, commit))
    if regenerated or screened:
        _commit_local(repo, state, prefix, "engram sync: regenerate derived links after merge", report)
    settled = after_merge(state, _added_items(repo, state, prefix, base, head), _added_items(repo, state, prefix, base, theirs))
    report.settled += settled
    if settled:
        _commit_local(repo, state, prefix, "engram sync: settle learn decisions made on two machines", report)


def _note(report: SyncReport | None, guarded: GuardReport) -> bool:
    """Add what the trust rules did to ``report``; True when files changed."""
    if report is not None:
        report.quarantined += guarded.quarantined
        report.redacted += guarded.redacted
        report.made_private += guarded.made_private
        report.arrived_secrets += guarded.arrived
    return guarded.changed


def _added_items(repo: GitRepo, state: VaultState, prefix: str, base: str, side: str) -> set[str]:
    """Ids of the items whose files ``side`` added since ``base``."""
    lead = prefix + "/" if prefix else ""
    added = [
        path[len(lead):] for path, change in repo.diff_tree(base, side).items()
        if change.old_sha is None and path.startswith(lead) and path.endswith(".md")
    ]
    ids: set[str] = set()
    for rel in added:
        ids.update(row.id for row in state.index.item_rows("path = ?", (rel,)))
    return ids


def _refresh_changed(repo: GitRepo, state: VaultState, prefix: str, old: str | None, new: str) -> None:
    """Re-index only the files git changed between ``old`` and ``new``: after a pull
    into a 100k-item vault that is a hundred stats instead of a full walk."""
    if old is None:
        state.refresh()
        return
    lead = prefix + "/" if prefix else ""
    changed = [
        path[len(lead):] for path in repo.diff_tree(old, new) if path.startswith(lead)
    ]
    state.index.refresh_paths(changed)


def _move_work_tree(repo: GitRepo, commit: str) -> None:
    """Fast-forward HEAD, index and files to ``commit``; git refuses rather than clobber."""
    out = repo.run("merge", "--ff-only", "--quiet", "--no-stat", commit, check=False, env=HOOK_ENV)
    if out.status != 0:
        raise GitError(
            f"a file changed while sync was merging ({out.text.splitlines()[0] if out.text else 'git refused'}).",
            hint="Nothing was changed and your edits are kept; run `engram sync` again.",
        )


def _refuse(plan: TreePlan, upstream: str) -> None:
    label = upstream.removeprefix("refs/remotes/")
    listing = "; ".join(f"{path}: {why}" for path, why in plan.failures[:10])
    more = f" (and {len(plan.failures) - 10} more)" if len(plan.failures) > 10 else ""
    raise GitError(
        f"cannot merge {label} automatically — {listing}{more}.",
        hint=f"Nothing was changed and your commits are kept. Run `git merge {label}`, fix those "
        "files, commit, then run `engram sync` again.",
    )


def _regenerate(state: VaultState, item_ids: Iterable[str]) -> int:
    """Rewrite the derived link section of these items; return how many files changed.

    Only the section changes: engram's own files are rewritten canonically with the
    frontmatter exactly as the merge left it, and a person's note is edited in place
    (:func:`engram.store.format.write_engram`), so no other byte moves.
    """
    changed = 0
    for item_id in sorted(set(item_ids)):
        for row in state.index.item_rows("id = ?", (item_id,)):
            # The index knows each item and its current section: parse only what changes.
            indexed = state.index.items("path = ?", (row.path,))
            if indexed and "\n".join(derived.lines_for(state.index, indexed[0])) == row.derived:
                continue
            path = state.abspath(row.path)
            try:
                data = path.read_bytes()
                item, old = parse_engram(data, row.path)
            except (OSError, FormatError):
                continue
            lines = derived.lines_for(state.index, item)
            if "\n".join(lines) == old:
                continue
            if is_canonical(data):  # the merge's frontmatter, not a model round trip's
                meta, content, _ = codec.parse_engram(data)
                atomic_write(path, codec.render_engram(meta, content, lines))
            else:
                write_engram(path, item, lines)
            state.index.put_item(row.path, item, "\n".join(lines))
            changed += 1
    return changed
