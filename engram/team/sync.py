"""``engram sync``: commit, fetch, merge in process, push, and retry when a peer was first.

One call brings a clone level with its upstream:

0. finish a sync that was killed, from its intent journal (:mod:`engram.team.journal`);
1. fold journaled usage and feedback into the items (:func:`engram.lifecycle.feedback.fold`);
2. commit the vault's local changes — only files that are whole (:mod:`.staging`): a
   file still being written, one that does not parse, an editor's temp file or a
   symbolic link is held back and named in the report, and the sync is *partial*;
3. fetch the upstream branch (a missing branch is fine: the first push creates it; an
   unreachable remote is reported, and the local commits stay for the next sync);
4. integrate: fast-forward when possible, otherwise merge *in this process* — the files
   both sides changed are merged by :mod:`engram.team.treemerge` with the same functions
   the git driver runs, the result is written as a tree and a merge commit in the object
   store, and only then is the work tree moved to it with git's own ``merge --ff-only``;
   ``.engram/`` files a peer's older engram committed are never merged or checked out
   (the fast-forward target gets a commit that takes them off, the merge leaves them
   out), so this machine's own state stays as it is and the push heals the branch;
   then the merged files are settled (:mod:`.settle`: hashes, link sections, edges to
   deleted items) and that is committed; and learn decisions the two sides made apart
   are finished (forked supersede chains converge on the newest lesson; contradictory
   new lessons are superseded or disputed, :func:`engram.lifecycle.reconcile.after_merge`)
   and committed;
5. push; when another writer was updating the branch at the same moment (a peer pushed
   first, or holds the remote ref's lock), go back to 3 after a jittered backoff, within
   ``sync.maxAttempts`` attempts and ``sync.maxSeconds`` seconds; when the remote's
   rules refuse the push (a protected branch), push for review instead — Gerrit's
   ``refs/for/<branch>``, else the clone's own ``review/<actor>/<branch>`` — and say
   so; with ``sync.onRefused: fail``, or when that is refused too, stop and quote the
   remote (:mod:`.remote`).

Invariants: the repository is never left mid-merge or mid-rebase — the merge commit is
built beside the work tree and the work tree only ever fast-forwards. Every step that
touches the repository is recorded first in the journal, so a sync killed at any
instant is finished by the next one, and a half-updated work tree is restored to the
recorded target — never committed as local edits. Merges that need a person (a text
conflict in a non-item file, an item that does not parse) stop the sync before anything
changes and name the files. Local work is never thrown away. One sync runs per clone
at a time (``.engram/sync.lock``).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from engram.errors import Busy, EngramError, GitError, InvalidInput
from engram.items.guard import GuardReport
from engram.items.repair import follow_moves
from engram.items.state import VaultState
from engram.lifecycle.feedback import fold
from engram.lifecycle.reconcile import after_merge
from engram.store.fsio import VaultLock
from engram.team import authorship, held, precommit, twins
from engram.team import remote as wire
from engram.team.committed import History
from engram.team.gitstore import EMPTY_TREE, GitRepo, RawChange, unrelated_branches
from engram.team.journal import Journal, recover
from engram.team.settle import Settled, between, keep_in_trash, settle
from engram.team.staging import Held, commit_local, committed_state, uncommitted
from engram.team.treemerge import TreeMerger, TreePlan
from mergedriver.records import append_records

#: Hooks see this and skip engram's own post-merge work (sync does it itself).
HOOK_ENV = {"ENGRAM_SYNC": "1"}
#: The exit status of ``engram sync`` when it held files back (see docs/cli.md).
PARTIAL_EXIT = 10


@dataclass(frozen=True, slots=True)
class SyncSettings:
    """``sync:`` in ``engram.yaml``."""

    settle_seconds: float = 1.0  # a file changed this recently is looked at twice
    max_attempts: int = 60  # fetch-merge-push rounds when other writers keep winning
    max_seconds: float = 180.0  # … and the time those rounds may take (the real bound)
    #: A push the remote's rules refuse (a protected branch): ``review`` pushes it for
    #: review instead (see engram.team.remote), ``fail`` stops with the remote's words.
    on_refused: str = "review"


@dataclass
class SyncReport:
    """What a sync did. ``offline`` holds the reason when the remote could not be reached;
    ``held`` the files left out of the commits (the sync was partial)."""

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
    restamped: int = 0
    trashed: list[str] = field(default_factory=list)
    suspect: list[str] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    #: Uncommitted edits the pull also changed, kept in their files across it; each is
    #: merged with the pulled version when it is committed (engram.team.held).
    carried: list[str] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)  # … and those merged now
    #: Items a plain git merge had left in two files (engram.team.twins), joined.
    twins: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)  # learn decisions finished after a merge
    #: Trust (engram.trust): items quarantined, redacted or made private before committing
    #: or after a merge, and secrets that arrived from the remote (to be rotated).
    quarantined: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    made_private: list[tuple[str, str]] = field(default_factory=list)
    arrived_secrets: list[str] = field(default_factory=list)
    #: Incoming commits that changed another author's item without a curator's role.
    unauthorized: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    retries: list[str] = field(default_factory=list)
    pushed: bool = False
    created_upstream: bool = False
    #: The ref the commits were pushed to for review when the branch refused them, and
    #: the remote's reason for refusing.
    review: str | None = None
    refused: str | None = None
    offline: str | None = None
    attempts: int = 0

    @property
    def partial(self) -> bool:
        return bool(self.held)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["partial"] = self.partial
        return data

    def absorb(self, settled: Settled | None) -> None:
        if settled is not None:
            self.regenerated += len(settled.regenerated)
            self.restamped += len(settled.restamped)
            self.trashed += settled.trashed
            self.suspect += [p for p in settled.suspect if p not in self.suspect]
            self.twins += [p for p in settled.twins if p not in self.twins]

    def note(self, guarded: GuardReport) -> bool:
        """Add what the trust rules did; True when they changed files."""
        self.quarantined += guarded.quarantined
        self.redacted += guarded.redacted
        self.made_private += guarded.made_private
        self.arrived_secrets += guarded.arrived
        return guarded.changed

    def lines(self) -> list[str]:
        """A short account for a person."""
        out: list[str] = list(self.recovered)
        if self.committed:
            out.append(f"committed {self.committed} local change(s)")
        for waiting in self.held:
            out.append(f"held back {waiting.path}: {waiting.reason}")
        for path in self.joined:
            out.append(f"merged your edit to {path} with the change pulled while it waited")
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
        for path in self.trashed:
            out.append(f"moved {path} to the trash: it linked to an item that was deleted")
        for path in self.twins:
            out.append(f"joined the two files a git merge had made of one item into {path} (the other is in the trash)")
        for path in self.suspect:
            out.append(f"{path} ends inside a line of its last version (a write cut short?); its hash was left stale — run `engram doctor` to review it")
        if self.regenerated or self.restamped:
            out.append(f"brought the links or hashes of {self.regenerated + self.restamped} item(s) up to date")
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
        if self.retries:
            out.append(f"retried {len(self.retries)} time(s): another writer was updating {self.branch} ({self.retries[-1]})")
        if self.offline:
            out.append(f"offline: {self.offline}; your commits are kept — run `engram sync` again later")
        elif self.pushed:
            out.append(f"pushed to {self.remote}/{self.branch}" + (" (new branch)" if self.created_upstream else ""))
        elif self.review:
            where = (f"sent them to Gerrit for review ({self.review})" if self.review.startswith("refs/for/")
                     else f"pushed them for review to {self.remote}/{self.review.removeprefix('refs/heads/')}")
            out.append(f"{self.remote} refused your commits on {self.branch} ({self.refused}); {where} — they "
                       f"reach {self.branch} when someone with the rights merges them; each sync updates the review")
        for path in self.carried:
            if path not in self.joined:
                out.append(f"kept your uncommitted edit to {path} over the pulled version; the sync that commits "
                           "it merges the two")
        if self.partial:
            out.append(f"partial: {len(self.held)} file(s) held back; the next sync takes them once they are whole")
        return out or ["already up to date"]


def sync(
    state: VaultState,
    *,
    remote: str | None = None,
    branch: str | None = None,
    push: bool = True,
    message: str | None = None,
    max_attempts: int | None = None,
) -> SyncReport:
    """Synchronise the vault's clone with its upstream (see the module docstring).

    Raises GitError (with what to do next) when the repository is mid-operation, on a
    detached HEAD, when a file needs a person to merge it, when the remote refuses the
    push, or when other writers keep winning the race past the attempts and time
    allowed; Busy when another sync of this clone runs for too long.
    """
    settings = state.settings.section("sync", SyncSettings)
    if settings.on_refused not in ("review", "fail"):
        raise InvalidInput(
            f"engram.yaml: sync.onRefused is {settings.on_refused!r}.",
            field="sync.onRefused", hint="Use review (push a refused branch for review) or fail.",
        )
    with GitRepo(state.root) as repo:
        if remote is not None:  # a refusal changes nothing: not even the sync lock is made
            _remote_for(repo, "", remote)
        with _one_sync_at_a_time(state, settings):
            journal = Journal(state)
            run = _Run(repo, state, journal, settings, max_attempts or settings.max_attempts)
            try:
                report = run.sync(remote, branch, push, message)
            except EngramError:
                if not run.keep_journal:
                    journal.clear()
                raise
            journal.clear()
            return report


@contextlib.contextmanager
def _one_sync_at_a_time(state: VaultState, settings: SyncSettings) -> Iterator[None]:
    lock = VaultLock(state.state_dir / "sync.lock", timeout=settings.max_seconds + 60.0)
    try:
        with lock.hold():
            yield
    except Busy as exc:
        raise Busy(
            "another `engram sync` of this clone has been running for over "
            f"{lock.timeout:.0f}s.", hint="Wait for it to finish, then run `engram sync` again."
        ) from exc


class _Run:
    """One sync: the steps of the module docstring, sharing the repository and journal."""

    def __init__(self, repo: GitRepo, state: VaultState, journal: Journal, settings: SyncSettings, attempts: int) -> None:
        self.repo = repo
        self.state = state
        self.journal = journal
        self.settings = settings
        self.max_attempts = max(1, attempts)
        self.keep_journal = False  # set when git may have stopped half-way
        prefix = state.root.relative_to(repo.top).as_posix()
        self.prefix = "" if prefix == "." else prefix
        self.env = _identity(repo, state)

    def sync(self, remote: str | None, branch: str | None, push: bool, message: str | None) -> SyncReport:
        repo = self.repo
        unfinished = self.journal.load()
        current = repo.current_branch()
        report = SyncReport(branch=branch or (current and _upstream_branch(repo, current)) or current or "")
        if unfinished is not None:
            self.keep_journal = True  # until recovery is through
            with self.state.lock.hold():
                recovery = recover(repo, self.state, unfinished, self.prefix)
            report.recovered = [f"finished an interrupted sync ({recovery.step}): {note}" for note in recovery.notes]
            if recovery.settle is not None:
                self._settle(*recovery.settle, report, "engram sync: settle after an interrupted sync")
            self.keep_journal = False
        with self.state.lock.hold():  # edits a killed sync had set aside go back in their files
            report.recovered += [f"put back your uncommitted edit to {rel} (set aside by an interrupted sync)"
                                 for rel in held.recover(self.state)]
        _check_ready(repo)
        if current is None:
            raise GitError("HEAD is detached; sync needs a branch.", hint="Check out one, e.g. `git switch main`.")
        first = _remote_for(repo, current, remote) if branch is None else None
        if first is not None and repo.rev(f"refs/remotes/{first}/{report.branch}") is None:
            _refuse_second_history(repo, first, report.branch)  # never fetched: a first sync
        fold(self.state)
        with self.state.lock.hold():
            # Links that name an item a person renamed or moved follow it (it keeps its path).
            follow_moves(self.state)
            report.absorb(self._record_committed_edits())
            report.twins += self._join_committed_twins(current, remote, report.branch)
        self._commit(report, message)
        report.remote = _remote_for(repo, current, remote)
        if report.remote is None:
            return report
        deadline = time.monotonic() + self.settings.max_seconds
        for attempt in range(1, self.max_attempts + 1):
            report.attempts = attempt
            self.journal.step("fetch")
            answer = wire.fetch(repo, report.remote, report.branch, HOOK_ENV)
            if answer.kind == "misconfigured":
                raise _misconfigured(answer)
            if answer.kind == "unreachable":
                report.offline = answer.detail
                return report
            if answer.kind == "ok":
                report.fetched = True
                self._commit(report, message)
                with self.state.lock.hold():
                    self._integrate(f"refs/remotes/{report.remote}/{report.branch}", report)
            if answer.kind != "race":
                if not push:
                    return report
                self.journal.step("push")
                answer = wire.push(repo, report.remote, report.branch)
                if answer.kind == "ok":
                    report.pushed = True
                    report.created_upstream = not report.fetched
                    _remember_upstream(repo, current, report.remote, report.branch)
                    return report
                if answer.kind == "misconfigured":
                    raise _misconfigured(answer)
                if answer.kind == "unreachable":
                    report.offline = answer.detail
                    return report
                if answer.kind == "refused":
                    if self.settings.on_refused == "review":
                        self._push_for_review(report, answer)
                        return report
                    raise _refused(report.remote, report.branch, answer)
            report.retries.append(answer.detail or "busy")
            if attempt < self.max_attempts and time.monotonic() < deadline:
                time.sleep(min(wire.backoff(attempt), max(0.0, deadline - time.monotonic())))
            else:
                break
        raise GitError(
            f"{report.remote} kept answering that another writer was updating {report.branch} "
            f"({report.retries[-1]}); gave up after {report.attempts} attempt(s)"
            + (f". The remote said: {' '.join(answer.said)}" if answer.said else "") + ".",
            hint="Your commits are kept; run `engram sync` again (or raise sync.maxAttempts / "
            "sync.maxSeconds in engram.yaml).",
        )

    # ------------------------------------------------------------------ steps

    def _commit(self, report: SyncReport, message: str | None, *, local: bool = True) -> None:
        def text(count: int) -> str:
            return message or f"engram sync: {count} change(s) by {self.state.actor} on {socket.gethostname()}"

        with self.state.lock.hold():
            # The trust rules see every change first (engram.team.precommit): a secret the
            # settings refuse stops the sync before anything is staged.
            staged = commit_local(
                self.repo, self.state, self.prefix, text, settle_seconds=self.settings.settle_seconds,
                env=self.env, before_commit=lambda: self.journal.step("commit"),
                screen=lambda changed: report.note(precommit.check_local_changes(self.state, changed)),
            )
        report.committed += staged.committed if local else 0
        report.held = list(staged.held)
        report.joined += staged.joined
        report.flagged += [path for path in staged.flagged if path not in report.flagged]
        report.absorb(staged.settled)

    def _record_committed_edits(self) -> Settled | None:
        """Items edited outside engram and committed with plain git on a clone without the
        hooks: no merge or staging ever looks at them again, so their hash stayed stale
        for good. They are settled here as a merge settles a pulled edit — the hash only
        (every clone that does it writes the same bytes), and content cut off inside a
        line against the last version whose hash vouched for it stays stale for doctor.
        Files with uncommitted changes are left to staging, which records them. Only
        engram's own items: a person's note is shared as it is, never restamped."""
        self.state.ensure_fresh()
        stale = [row["path"] for row in self.state.index.query(
            "SELECT path FROM items WHERE by_person = 0 AND content_hash != body_hash ORDER BY path")]
        if not stale:
            return None
        dirty = uncommitted(self.repo, self.prefix, self.repo.rev("HEAD"))
        stale = [rel for rel in stale if rel not in dirty]
        if not stale:
            return None
        with History(self.state.root) as history:
            return settle(self.state, stale, previous=history.reference_bytes)

    def _join_committed_twins(self, current: str, remote: str | None, branch: str) -> list[str]:
        """Items a plain ``git pull`` left in two files on a clone without the hooks
        (:mod:`engram.team.twins`): the commits this clone is about to push that git
        merged, never settled, are joined here before they can publish one id twice."""
        name = _remote_for(self.repo, current, remote)
        upstream = self.repo.rev(f"refs/remotes/{name}/{branch}") if name is not None else None
        head = self.repo.rev("HEAD")
        if upstream is None or head is None or upstream == head:
            return []
        if not self.repo.run("rev-list", "--merges", "-n", "1", f"{upstream}..{head}").out.strip():
            return []  # only merges git made can hold an item twice
        arrived = twins.arrived(self.repo, self.prefix, upstream, head)
        if arrived:
            self.state.ensure_indexed()
        return twins.join(self.state, self.repo, self.prefix, upstream, head, arrived)

    def _push_for_review(self, report: SyncReport, refused: wire.Answer) -> None:
        """The branch refused the push: push HEAD for review instead (engram.team.remote)."""
        assert report.remote is not None
        ref = wire.review_ref(refused, report.branch, self.state.actor)
        answer = wire.push_for_review(self.repo, report.remote, ref)
        if answer.kind == "ok":
            report.review, report.refused = ref, refused.detail
            return
        if answer.kind == "unreachable":
            report.offline = answer.detail
            return
        raise _refused(report.remote, report.branch, refused, review=(ref, answer))

    def _integrate(self, upstream: str, report: SyncReport) -> None:
        repo = self.repo
        theirs = repo.rev(upstream)
        head = repo.rev("HEAD")
        if theirs is None or theirs == head:
            return
        if head is not None and repo.is_ancestor(theirs, head):
            return
        report.unauthorized += [u.describe() for u in authorship.check_commits(
            repo, self.state, theirs if head is None else f"{head}..{theirs}")]
        if head is None or repo.is_ancestor(head, theirs):
            target = self._without_state(theirs)
            self._move_work_tree(head, target, report)
            report.fast_forward = True
            self._settle(head or EMPTY_TREE, target, report, "engram sync: settle after fast-forward")
            self._screen(head, target, report)
            return
        self.journal.step("merge")
        base = repo.merge_base(head, theirs) or EMPTY_TREE
        merger = TreeMerger(
            repo.read_blobs, lambda path: repo.has_path(head, path), self.prefix, incident=self._incident(head),
            history=lambda side: _added_or_deleted(repo, base, head if side == "o" else theirs, self.prefix),
            held=lambda ids: repo.files_of(head, ids, self.prefix + "/" if self.prefix else ""),
        )
        plan = merger.plan(repo.diff_tree(base, head), repo.diff_tree(base, theirs))
        if plan.failures:
            _refuse(plan, upstream)
        self.journal.step("objects")
        entries = [
            (path, data if isinstance(data, str) else repo.write_blob(data), mode)
            for path, (data, mode) in sorted(plan.writes.items())
        ] + [(path, None, "0") for path in sorted(plan.deletes)]
        tree = repo.write_tree(head, entries)
        label = upstream.removeprefix("refs/remotes/")
        commit = repo.commit_tree(
            tree, [head, theirs], f"engram sync: merge {label} ({plan.merged} merged, {len(plan.flagged)} flagged)",
            env=self.env,
        )
        self._keep_trash(plan)
        self._move_work_tree(head, commit, report)
        append_records(self.state.state_dir, plan.records, via="sync")
        report.merged += plan.merged
        report.taken += plan.taken
        report.flagged += plan.flagged
        report.kept_edits += plan.kept_edits
        report.moved += plan.moved
        report.trashed += [self._vault_rel(path) for path, _ in plan.trashed]
        self._settle(head, commit, report, "engram sync: settle after merge")
        self._screen(head, commit, report)
        decided = after_merge(self.state, self._added(base, head), self._added(base, theirs))
        report.settled += decided
        if decided:
            self._commit(report, "engram sync: settle learn decisions made on two machines", local=False)

    def _without_state(self, commit: str) -> str:
        """``commit``, or one on top of it that takes off the ``.engram/`` and ``private/``
        files a peer committed (an older engram, or a commit past the hook): checking them
        out would overwrite this machine's index, journal, trash and private items, or
        add the peer's private items to this machine's, and the push heals the branch
        (issue 28)."""
        lead = self.prefix + "/" if self.prefix else ""
        stale = committed_state(self.repo, lead, commit)
        if not stale:
            return commit
        tree = self.repo.write_tree(commit, [(path, None, "0") for path in stale])
        return self.repo.commit_tree(
            tree, [commit], "engram sync: take .engram/ and private/ (one machine's own files) off the branch",
            env=self.env,
        )

    def _screen(self, old: str | None, new: str, report: SyncReport) -> None:
        """What the pull brought in passes the trust screen (engram.team.precommit):
        instruction-shaped items are quarantined here and that is committed."""
        with self.state.lock.hold():
            screened = report.note(precommit.screen_incoming(self.repo, self.state, old, new))
        if screened:
            self._commit(report, "engram sync: quarantine instruction-shaped items from upstream", local=False)

    def _added(self, base: str, side: str) -> set[str]:
        """Ids of the items whose files ``side`` added since ``base``."""
        lead = self.prefix + "/" if self.prefix else ""
        added = [
            path[len(lead):] for path, change in self.repo.diff_tree(base, side).items()
            if change.old_sha is None and path.startswith(lead) and path.endswith(".md")
        ]
        return {row.id for rel in added for row in self.state.index.item_rows("path = ?", (rel,))}

    def _incident(self, head: str) -> Any:
        lead = self.prefix + "/" if self.prefix else ""

        def incident(ids: set[str]) -> list[tuple[str, str]]:
            self.state.refresh()  # the index names ours' edges; HEAD is what was just committed
            marks = ",".join("?" * len(ids))
            rows = self.state.index.query(
                f"SELECT path FROM synapses WHERE source IN ({marks}) OR target IN ({marks})", [*ids, *ids]
            )
            found = []
            for row in rows:
                sha = self.repo.rev_blob(head, lead + row["path"])
                if sha is not None:
                    found.append((lead + row["path"], sha))
            return found

        return incident

    def _vault_rel(self, path: str) -> str:
        return path[len(self.prefix) + 1 :] if self.prefix else path

    def _keep_trash(self, plan: TreePlan) -> None:
        """Copies of edges the merge removes (ours', or an edited one that would be lost)
        go to the trash bin of the item they followed (:func:`engram.team.settle.keep_in_trash`)."""
        for path, data in plan.trashed:
            keep_in_trash(self.state, self._vault_rel(path), data, plan.gone)

    def _move_work_tree(self, old: str | None, new: str, report: SyncReport) -> None:
        """Fast-forward HEAD, index and files to ``new`` with git's own machinery. Local
        edits the update would touch (files held back, or saved during the merge) are
        carried across it (:mod:`engram.team.held`) instead of making git refuse."""
        aside = held.set_aside(self.repo, self.state, self.prefix, old, new, uncommitted(self.repo, self.prefix, old))
        self.journal.step("checkout", old=old or EMPTY_TREE, new=new)
        out = self.repo.run("merge", "--ff-only", "--quiet", "--no-stat", new, check=False, env=HOOK_ENV)
        if out.status == 0 or self.repo.rev("HEAD") == old:  # moved, or refused before touching anything
            carried = held.put_back(self.state, aside)
            if out.status == 0:
                report.carried += [rel for rel in carried if rel not in report.carried]
                return
        if "overwritten" not in out.text and self.repo.rev("HEAD") != old:
            self.keep_journal = True  # git may have stopped half-way: the next sync finishes it
        waiting = [h.path for h in report.held if h.path in out.text]
        raise GitError(
            f"a file changed while sync was merging ({out.text.splitlines()[0] if out.text else 'git refused'})"
            + (f"; held back here and changed on the remote too: {', '.join(waiting)}" if waiting else "") + ".",
            hint="Nothing was changed and your edits are kept; finish or fix that file, then run `engram sync` again.",
        )

    def _settle(self, old: str, new: str, report: SyncReport, message: str) -> None:
        self.journal.step("settle", old=old, new=new)
        with self.state.lock.hold():
            settled = between(self.state, self.repo, self.prefix, old, new)
            report.absorb(settled)
            if settled.changed:
                staged = commit_local(
                    self.repo, self.state, self.prefix, lambda _: message, settle_seconds=self.settings.settle_seconds,
                    env=self.env, before_commit=lambda: self.journal.step("commit"),
                    written=set(settled.restamped) | set(settled.regenerated) | set(settled.relinked) | set(settled.twins),
                )
                report.held = list(staged.held)


# --------------------------------------------------------------------------- helpers


def _added_or_deleted(repo: GitRepo, base: str, tip: str, prefix: str) -> list[list[RawChange]]:
    """The vault files each commit from ``base`` to ``tip`` added or deleted: one list per
    commit, and per parent of a merge (where a merge let a delete win, the edges it
    removed show against the side that had them). The tree merge reads it only when it
    undoes a delete or keeps an item the base lacks, to bring the item's edges back as
    they were last changed."""
    lead = prefix + "/" if prefix else ""
    since = [tip] if base == EMPTY_TREE else [tip, "--not", base]
    # No pathspec: git would simplify the history by it, and a merge that let a delete
    # win would hide the side that had the item.
    commits = repo.log_changes("-m", "--diff-filter=AD", *since)
    return [kept for _, changes in commits if (kept := [c for c in changes if c.path.startswith(lead)])]


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


def _refuse_second_history(repo: GitRepo, remote: str, branch: str) -> None:
    """Before a clone's first sync: when ``remote`` has no ``branch`` but holds history on
    other branches that this clone does not share, pushing would start a second,
    unrelated vault beside the team's. Refuse, and say how to join it instead."""
    if wire.fetch(repo, remote, branch, HOOK_ENV).kind != "missing":
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


def _remember_upstream(repo: GitRepo, branch: str, remote: str, upstream: str) -> None:
    if repo.config(f"branch.{branch}.remote") is None:
        repo.run("config", f"branch.{branch}.remote", remote)
        repo.run("config", f"branch.{branch}.merge", f"refs/heads/{upstream}")


def _misconfigured(answer: wire.Answer) -> GitError:
    return GitError(
        f"{answer.detail}.",
        hint="Your commits are kept in this clone; `engram sync` again once the remote is fixed.",
    )


def _refused(
    remote: str, branch: str, answer: wire.Answer, review: tuple[str, wire.Answer] | None = None
) -> GitError:
    said = f" The remote said: {' / '.join(answer.said)}." if answer.said else ""
    if review is not None:
        ref, second = review
        said += f" The push for review to {ref} failed too: {second.detail}."
    return GitError(
        f"{remote} refused the push to {branch}: {answer.detail}.{said}",
        hint="That is a rule on the remote (a protected branch, a server hook), not a race, so sync did not "
        "retry. Your commits are kept; ask whoever runs the remote, or push elsewhere with "
        "`engram sync --branch NAME`.",
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

