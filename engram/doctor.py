"""``engram doctor``: find what is wrong in a vault and, where it is safe, fix it.

Checks (each problem has a stable ``code``):

- ``unparseable`` — an item or synapse file that does not parse (broken YAML, YAML
  aliases, not UTF-8). Never fixed automatically: a person must look; listings skip it.
- ``unsafe-file`` — a symlink, FIFO, device or socket with an item or synapse name, or
  a symlinked folder: engram reads only regular files inside the vault, so it is never
  followed or opened. Not fixed automatically: replace the link with the file, or remove it.
- ``oversize-file`` — an item or synapse file above the read limits (4 MiB per item file,
  256 KiB of frontmatter, 1 MiB per synapse): refused before it is read.
- ``binary-file`` — a ``.md`` or synapse file with NUL bytes: not text, not read.
- ``bad-settings`` — ``engram.yaml`` could not be taken (not a regular file, too large,
  not UTF-8, not valid YAML): commands that need a setting refuse until it is fixed.
- ``duplicate-id`` — two files claim one id (a copied file). Fix: the copies get new
  ids; the original — the file whose id entered git's history first (an uncommitted copy
  never has) — keeps the id and its edges. When nothing is committed, the file engram
  last wrote under the id (the audit log) is the original; failing both, the path that
  sorts first.
- ``dangling-synapse`` — an edge to an item that does not exist. Fix: moved to trash.
- ``misnamed-synapse`` — a synapse file whose name or folder does not match its
  endpoints and kind. Fix: rewritten at the right path.
- ``lost-content`` — an item edited outside engram whose content is git's last committed
  version that vouched for itself (its ``contentHash`` matched) cut off inside a line:
  what a write cut short — a crashed editor, a half-written file a peer pushed — leaves,
  and what no deletion of whole lines does. Ordinary outside edits, deleted lines
  included, are recorded by ``engram sync`` (once the file is vetted as whole) or the
  next ``update``, and are no problem; this one is never
  recorded silently: the diff is shown and the fix (record the text as a new version)
  waits for a person (``--accept PATH``, or yes at the prompt).
- ``old-residue`` — a person's note holding what an engram before issue 28 wrote into
  it: usage and reinforcement counters, a ``## Synapses (derived)`` section. engram keeps
  those beside the note now (:mod:`engram.items.sidecar`); the fix takes them out, the
  counters moving to ``.engram/notes.json``, and waits for the person's yes like
  ``lost-content``: the note is theirs. A counter is a property with a counter's name
  and a value of the shape engram writes there, 0 included; a person's own value under
  such a name (``retrievalCount: manual``) is not one (:func:`engram.items.repair.residue_of`).
  ``engram adopt`` names such notes too, and takes the residue out when asked
  (``--clean-residue``).
- ``stale-derived`` — a ``## Synapses (derived)`` section that does not match the
  synapse files. Fix: regenerated.
- ``path-drift`` — a private item outside ``private/`` (it would be committed) or a
  shared one inside it (it never would be). Fix: moved (the id stays; derived links
  elsewhere follow). A note a person renamed or moved is *not* drift: engram follows
  the person's path and moves a file only when it changes the title, domain or
  visibility itself.
- ``leftover-temp`` — a temp file from an interrupted write, older than an hour.
  Fix: deleted.
- ``merge-conflict`` — an item a merge flagged (``mergeConflicts``): both versions of
  some lines are kept in a ``> [!conflict]`` callout, or a value both sides changed was
  decided for one. Never fixed automatically: review it, then ``engram conflicts
  --resolve ID``.
- ``superseded-active`` — an item something supersedes that is still ``active``. Not
  fixed automatically (which one is current is a judgement): set its status.
- ``unauthorized-change`` — one of the last 200 commits changed an item another author
  created in a way the committer's role does not allow (``roles`` in ``engram.yaml``;
  see :mod:`engram.team.authorship`). Roles do not bind the git remote, so this is how
  such a change gets seen. Never fixed automatically: a curator reviews the commit.
- ``committed-state`` — git tracks files under ``.engram/`` (this machine's index,
  journals, audit log and trash: an older engram committed them in a clone whose own
  ``.gitignore`` did not name the folder) or ``private/``. Not fixed here: ``engram
  sync`` takes them off the branch, or ``git rm -r --cached FOLDER`` and commit.
- ``state-in-history`` — no longer tracked, but in git's history (the remote and every
  clone still carry it). Not fixed automatically: purging rewrites history
  (``git filter-repo --invert-paths --path FOLDER/``, a force-push, fresh clones).
- ``secret-in-shared-file`` — an item bound for a shared file holds a credential (written
  by hand, or before the check existed). Not fixed automatically: remove it and rotate
  it (it may be in git's history), or make the item private. Personal data a note
  already holds is not a problem here: writes and commits apply the ``trust`` settings
  to what they add.

Not problems, and so listed in the adoption summary instead (:mod:`engram.adopt`): notes
indexed with a derived id, wikilinks that point at no note yet or at two, properties
engram reads as the person's own, frontmatter that is not YAML, and content edited
outside engram since its last write — ``contentHash`` is brought up to date by the next
write that touches the file (``update``, a usage flush, ``sync``), never by hand.

Fixes run one at a time through the vault's own writers (under the lock, atomic), so a
fix never tears a file and an interrupted ``--fix`` can simply be run again.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from engram.adopt.adopting import Adoption
from engram.adopt.adopting import summary as adoption_summary
from engram.errors import EngramError, GitError
from engram.index.rows import SKIP_DIRS
from engram.items import derived, links, repair, sidecar
from engram.items.state import VaultState
from engram.recall import semantic
from engram.recall.models import AUTO, here, named
from engram.recall.settings import recall_settings
from engram.store.format import read_bytes, read_synapse
from engram.store.fsio import TEMP_SUFFIX, remove
from engram.store.model import Engram, synapse_id
from engram.store.notes import Note, body_offset, persons_note, read_note
from engram.store.obsidian import in_folders, template_folders
from engram.store.paths import MACHINE_LOCAL
from engram.store.progress import Progress, bar
from engram.store.settings import SETTINGS_FILE
from engram.team import authorship, conflicts
from engram.team.committed import History
from engram.team.gitstore import GitRepo
from mergedriver import codec

if TYPE_CHECKING:
    from engram.trust.secrets import Detection


@dataclass(slots=True)
class Problem:
    code: str
    path: str
    message: str
    fixable: bool
    fixed: bool = False
    fix_error: str | None = None
    #: A fix exists but needs a person's yes (``--accept PATH``, or a prompt): it would
    #: keep text that lost lines against git's last committed version.
    consent: bool = False
    diff: str | None = None
    _fix: Callable[[], object] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "path": self.path,
            "message": self.message,
            "fixable": self.fixable,
            "fixed": self.fixed,
            "fixError": self.fix_error,
            "needsConsent": self.consent,
            "diff": self.diff,
        }


@dataclass(frozen=True, slots=True)
class Report:
    problems: tuple[Problem, ...]
    items: int
    synapses: int
    adoption: Adoption = field(default_factory=Adoption)

    @property
    def ok(self) -> bool:
        return all(p.fixed for p in self.problems)


def diagnose(
    state: VaultState,
    *,
    fix: bool = False,
    accept: Iterable[str] = (),
    confirm: Callable[[Problem], bool] | None = None,
    progress: Progress | None = None,
) -> Report:
    """Run every check; with ``fix``, apply the safe fixes in a sensible order.

    A fix that needs consent (a hash over content that lost lines against git's last
    committed version) runs only for the paths in ``accept``, or when ``fix`` is set and
    ``confirm(problem)`` — shown the problem and its diff — says yes. ``progress`` draws
    the steps that grow with the vault (bringing the index up to date, the checks that
    read every item, telling originals from copies); the rest take a moment.
    """
    state.refresh(progress=progress)
    problems: list[Problem] = []
    problems += _bad_settings(state)
    problems += _semantic_missing(state)
    problems += _model_missing(state)
    problems += _unparseable(state)
    problems += _linked_folders(state)
    problems += _duplicate_ids(state, progress)
    problems += _synapse_problems(state)
    problems += _item_problems(state, progress)
    problems += _leftover_temps(state)
    problems += _review_needed(state)
    problems += _trust_problems(state, progress)
    problems += _committed_state(state)
    accepted = {path.strip().removeprefix("./") for path in accept}
    if fix or accepted:
        for problem in problems:
            if problem._fix is None:
                continue
            if problem.consent:
                wanted = problem.path in accepted or (fix and confirm is not None and confirm(problem))
            else:
                wanted = fix and problem.fixable
            if not wanted:
                continue
            try:
                problem._fix()
                problem.fixed = True
            except (EngramError, OSError) as exc:
                problem.fix_error = str(exc)
        state.refresh()
    counts = state.index.counts()
    return Report(tuple(problems), counts.get("item", 0), counts.get("synapse", 0), adoption_summary(state))


_BAD_CODES = {"bad": "unparseable", "unsafe": "unsafe-file", "oversize": "oversize-file", "binary": "binary-file"}


def _bad_settings(state: VaultState) -> list[Problem]:
    settings = state.settings
    if settings.problem is None:
        return []
    return [Problem("bad-settings", SETTINGS_FILE, f"{SETTINGS_FILE} {settings.problem}", fixable=False)]


def _semantic_missing(state: VaultState) -> list[Problem]:
    """``recall.semantic`` asks for a model this machine lacks: every search would refuse."""
    if state.settings.problem is not None:
        return []
    try:
        weight = recall_settings(state).semantic
    except EngramError:
        return []  # a wrong value: search names it (bad-settings covers the file itself)
    if weight <= 0 or semantic.installed():
        return []
    return [Problem(
        "semantic-missing", SETTINGS_FILE,
        f"recall.semantic is {weight:g}, but semantic recall is not installed here, so search"
        f" refuses: install it with `{semantic.EXTRA}`, or set recall.semantic: 0",
        fixable=False,
    )]


def _model_missing(state: VaultState) -> list[Problem]:
    """``recall.model`` names an encoder this machine has not pulled: search answers by words."""
    if state.settings.problem is not None:
        return []
    try:
        s = recall_settings(state)
    except EngramError:
        return []  # a wrong value: search names it
    if s.meaning <= 0 or s.model == AUTO or here(named(s.model)):
        return []
    return [Problem(
        "model-missing", SETTINGS_FILE,
        f"recall.model is {s.model}, which has not been pulled to this machine, so search answers by words"
        f" alone here: fetch it with `engram models pull --model {s.model}`, or set recall.model: auto",
        fixable=False,
    )]


def _unparseable(state: VaultState) -> list[Problem]:
    return [
        Problem(_BAD_CODES.get(bad.kind, "unparseable"), bad.path, f"cannot be read: {bad.error}", fixable=False)
        for bad in state.index.bad_files()
    ]


def _linked_folders(state: VaultState) -> list[Problem]:
    """Symlinked folders in the visible tree: never entered, so nothing under them is indexed."""
    problems = []
    stack = [state.root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_symlink() and entry.is_dir():
                    rel = Path(entry.path).relative_to(state.root).as_posix()
                    problems.append(
                        Problem(
                            "unsafe-file",
                            rel,
                            "is a symbolic link to a folder; engram does not follow it, so "
                            "nothing under it is indexed (move the folder into the vault instead)",
                            fixable=False,
                        )
                    )
            except OSError:
                continue
    return sorted(problems, key=lambda p: p.path)


def _duplicate_ids(state: VaultState, progress: Progress | None = None) -> list[Problem]:
    rows = state.index.query(
        "SELECT id, path FROM items WHERE id IN"
        " (SELECT id FROM items GROUP BY id HAVING count(*) > 1) ORDER BY id, path"
    )
    by_id: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_id[row["id"]].append(row["path"])
    if not by_id:
        return []
    problems = []
    templates = template_folders(state.root)
    # Each shared id asks git's history when the paths got it: a vault of notes made
    # from a template with an id line can have thousands (54 s for 1,000 ids six notes
    # share each, in 6k notes).
    with History(state.root) as history, bar(progress, "telling originals from copies", len(by_id)) as shown:
        for item_id, paths in by_id.items():
            shown.update(1)
            original, why = _original(state, history, item_id, paths)
            if in_folders(original, templates) is not None:
                why += (" — it is an Obsidian template: take its id line out, or every note made from it will "
                        "share the id again")
            for copy in paths:
                if copy == original:
                    continue
                problems.append(
                    Problem(
                        "duplicate-id",
                        copy,
                        f"shares id {item_id} with {original}, {why}: this file is the copy and gets a new id",
                        fixable=True,
                        _fix=partial(repair.reassign_id, state, copy),
                    )
                )
    return problems


def _original(state: VaultState, history: History, item_id: str, paths: list[str]) -> tuple[str, str]:
    """Which of ``paths`` (sharing ``item_id``) is the original, and why: the one whose id
    git has held longest; when git cannot tell (nothing committed), the one this
    machine's audit log last wrote under the id; else the first path in sort order."""
    seen = {path: history.first_seen(path, item_id) for path in paths}
    dated = sorted((since, path) for path, since in seen.items() if since is not None)
    if dated and (len(dated) == 1 or dated[0][0][0] < dated[1][0][0]):
        (_, commit), path = dated[0]
        return path, f"which has carried it since commit {commit[:12]} (git's history)"
    if not dated:
        written = [e.path for e in state.audit.entries(item_id) if e.path in paths]
        if written:
            return str(written[-1]), "which engram wrote under that id (this machine's audit log)"
    return paths[0], "and neither git's history nor the audit log tells which came first, so the path that sorts first keeps it"


def _synapse_problems(state: VaultState) -> list[Problem]:
    known = {row["id"] for row in state.index.query("SELECT id FROM items")}
    problems = []
    for row in state.index.query("SELECT path FROM synapses ORDER BY path"):
        rel = row["path"]
        try:
            syn = read_synapse(state.abspath(rel), rel)
        except (FileNotFoundError, EngramError):
            continue
        missing = [end for end in (syn.source, syn.target) if end not in known]
        if missing:
            problems.append(
                Problem(
                    "dangling-synapse",
                    rel,
                    f"{syn.kind} edge points at missing item(s) {', '.join(missing)}",
                    fixable=True,
                    _fix=partial(repair.discard_file, state, rel, "dangling"),
                )
            )
            continue
        expected_id = synapse_id(syn.source, syn.target, syn.kind)
        expected_tail = f"synapses/{syn.kind}/{expected_id}.yaml"
        if syn.id != expected_id or not rel.endswith(expected_tail):
            problems.append(
                Problem(
                    "misnamed-synapse",
                    rel,
                    f"should be {expected_tail} (id {expected_id})",
                    fixable=True,
                    _fix=partial(_rename_synapse, state, rel, syn.source, syn.kind, syn.target),
                )
            )
    return problems


def _rename_synapse(state: VaultState, rel: str, source: str, kind: str, target: str) -> None:
    syn = read_synapse(state.abspath(rel), rel)
    repair.discard_file(state, rel, "misnamed")
    for entry in syn.evidence or (None,):
        links.link(
            state,
            source,
            kind,
            target,
            weight=syn.weight,
            evidence=entry.description if entry else None,
            confidence=entry.confidence if entry else None,
        )


#: What a person's note must hold, as bytes, to hold what an older engram wrote into it:
#: a counter's name (engram wrote them as plain keys) or the derived section's heading.
_RESIDUE_MARKS = (*(key.encode() for key in sidecar.COUNTERS), codec.DERIVED_HEADING.encode())


def _item_problems(state: VaultState, progress: Progress | None = None) -> list[Problem]:
    problems: list[Problem] = []
    rows = state.index.query("SELECT path, by_person, visibility FROM items ORDER BY path")
    with History(state.root) as history, bar(progress, "checking items", len(rows)) as shown:
        for row in rows:
            shown.update(1)
            rel = row["path"]
            try:
                data = read_bytes(state.abspath(rel), rel)
                if row["by_person"] and not any(mark in data for mark in _RESIDUE_MARKS):
                    # Most of an adopted vault: nothing of engram's in it, so only its
                    # place is checked, from the fresh index (parsing every note's
                    # frontmatter again was a third of doctor's time on 6,571 notes).
                    problems += _misplaced_private(rel, row["visibility"])
                    continue
                note = read_note(data, rel)
            except (FileNotFoundError, EngramError):
                continue
            problems += _check_item(state, rel, note, history)
    return problems


def _check_item(state: VaultState, rel: str, note: Note, history: History) -> list[Problem]:
    problems: list[Problem] = []
    item, old_derived = note.item, note.derived
    if persons_note(item):
        return _persons_note(state, rel, note)
    lost = None
    if item.content_hash != codec.content_hash(item.content):
        lost = _lost_content(state, rel, item, history)
        if lost is not None:
            problems.append(lost)
    lines = "\n".join(derived.lines_for(state.index, item))
    if lines != old_derived:
        problems.append(
            Problem(
                "stale-derived",
                rel,
                "the '## Synapses (derived)' section does not match the synapse files",
                fixable=True,
                # An outside edit is recorded with the links unless git says it lost content.
                _fix=lambda: repair.rewrite_item(state, rel, record=lost is None),
            )
        )
    private = item.visibility == "private"
    if private != rel.startswith("private/"):
        where = "outside private/ (it would be committed)" if private else "inside private/ (it is never shared)"
        problems.append(
            Problem(
                "path-drift",
                rel,
                f"visibility is {item.visibility} but the file is {where}",
                fixable=True,
                _fix=lambda: repair.relocate(state, rel),
            )
        )
    return problems


def _persons_note(state: VaultState, rel: str, note: Note) -> list[Problem]:
    """A person's note (:func:`engram.store.notes.persons_note`) is never rewritten or
    moved by a safe fix: a private one outside ``private/`` is theirs to move, and what
    an older engram wrote into it (counters, a derived section) goes only on their yes."""
    item = note.item
    # Residue is told by the note's properties (a counter of 0 included; see
    # repair.residue_of); the file is read again only for a note that holds some.
    keys, section = repair.residue_of(note)
    problems = _residue(state, rel) if keys or section else []
    return problems + _misplaced_private(rel, item.visibility)


def _misplaced_private(rel: str, visibility: str) -> list[Problem]:
    """A person's private note outside ``private/``: theirs to move."""
    if visibility != "private" or rel.startswith("private/"):
        return []
    return [Problem(
        "path-drift", rel,
        "its visibility property is private but the file is outside private/ (it would be committed); "
        "it is a note a person wrote, which engram never moves, so move it into private/ yourself"
        " (or change the property)",
        fixable=False,
    )]


def _residue(state: VaultState, rel: str) -> list[Problem]:
    try:
        data = read_bytes(state.abspath(rel), rel)
    except (OSError, EngramError):
        return []
    cleaned = repair.without_residue(data, rel)
    if cleaned is None:
        return []
    keys, section = repair.residue(data, rel)
    diff = difflib.unified_diff(
        data.decode("utf-8", "replace").splitlines(), cleaned.decode("utf-8", "replace").splitlines(),
        "now", "after", lineterm="", n=1,
    )
    return [Problem(
        "old-residue", rel,
        f"holds {repair.describe_residue(keys, section)}, which an older engram wrote into this note of yours; engram keeps them "
        f"beside the note now. Take them out (the counters move to .engram/notes.json, every other byte stays) "
        f"with `engram doctor --accept {rel}`, or leave the note as it is",
        fixable=False, consent=True, diff="\n".join(diff), _fix=partial(repair.clear_residue, state, rel),
    )]


def _lost_content(state: VaultState, rel: str, item: Engram, history: History) -> Problem | None:
    """An outside edit is no problem (engram records it on its next write), unless the
    content lost lines against git's last committed version: recording it then would
    bless what may be a torn write, so a person sees the diff and decides."""
    loss = history.loss(rel, item.content)
    if loss is None:
        return None
    return Problem(
        "lost-content", rel,
        f"edited outside engram, and the content lost {loss.lost_lines} line(s) against the last committed "
        f"version ({loss.commit[:12]}), and it ends inside a line — a write cut short. Keep it with "
        f"`engram doctor --accept {rel}`, or restore it with `git checkout {loss.commit[:12]} -- {loss.repo_path}`",
        fixable=False, consent=True, diff=loss.diff, _fix=partial(repair.rewrite_item, state, rel),
    )


def _review_needed(state: VaultState) -> list[Problem]:
    """Merge flags and superseded-but-active items: a person decides."""
    problems = [
        Problem(
            "merge-conflict",
            item.path,
            f"flagged by a merge ({len(item.notes)} note(s), {item.callouts} conflict block(s));"
            f" review it, then run `engram conflicts --resolve {item.id}`",
            fixable=False,
        )
        for item in conflicts.flagged(state)
    ]
    problems += [
        Problem("superseded-active", f.path, f.message, fixable=False)
        for f in conflicts.superseded_active(state)
    ]
    return problems


def _leftover_temps(state: VaultState) -> list[Problem]:
    problems = []
    cutoff = time.time() - 3600
    for rel, path, st in _temp_files(state.root):
        if st.st_mtime > cutoff:
            continue
        problems.append(
            Problem(
                "leftover-temp",
                rel,
                "temp file left by an interrupted write",
                fixable=True,
                _fix=partial(remove, path),
            )
        )
    return sorted(problems, key=lambda p: p.path)


def _temp_files(root: Path) -> Iterator[tuple[str, Path, os.stat_result]]:
    """(relpath, path, lstat) of each temp file under ``root``, hidden folders included
    (``.engram/`` is written atomically too), never entering a ``.git`` folder or a
    symlinked one. Things come and go while this walks — git's temp and lock folders
    during a sync, an editor's swap files — so a folder or file gone (or replaced)
    between its listing and its reading is simply not there."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue  # vanished, now a file, or unreadable: nothing of ours to find
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        stack.append(Path(entry.path))
                elif entry.name.endswith(TEMP_SUFFIX):
                    path = Path(entry.path)
                    yield path.relative_to(root).as_posix(), path, entry.stat(follow_symlinks=False)
            except OSError:
                continue


def _trust_problems(state: VaultState, progress: Progress | None = None) -> list[Problem]:
    """Secrets in shared items, and commits that broke the role rules (both need the
    settings: with a broken engram.yaml, ``bad-settings`` is the finding)."""
    from engram.trust import policy
    from engram.trust.scanned import CleanScans
    from engram.trust.secrets import scan_fields

    if state.settings.problem is not None:
        return []
    problems = []
    # Credentials only: personal data a note already holds is the person's business
    # (writes and commits apply the trust settings to what is new). So only the secret
    # detectors run: the phone and email matchers were two fifths of doctor's time on a
    # 1,000-note vault, for findings it then threw away.
    secrets_only = dataclasses.replace(state.trust.options(), kinds=frozenset({"secret"}))
    shared = state.index.items("visibility != 'private'", (), "ORDER BY path")
    seen = CleanScans(state.state_dir, secrets_only)  # a text found clean last run is clean now
    with bar(progress, "looking for secrets", len(shared)) as shown:
        for item in shared:
            shown.update(1)
            fields = policy.text_fields(item)
            key = seen.key(fields)
            if seen.clean(key):
                continue
            found = scan_fields(fields, secrets_only)
            if not found:
                seen.found_clean(key)
                continue
            problems.append(Problem(
                "secret-in-shared-file", item.path or "",
                "holds " + "; ".join(_where(state, item.path or "", d) for d in found[:5])
                + " — remove it (rotate a credential: it is in git's history) or make the item private",
                fixable=False,
            ))
    seen.save()
    try:
        with GitRepo(state.root) as repo:
            if repo.rev("HEAD") is not None:
                for u in authorship.check_commits(repo, state, "HEAD", limit=authorship.DOCTOR_COMMITS):
                    problems.append(Problem("unauthorized-change", u.path, u.describe(), fixable=False))
    except GitError:
        pass
    return problems


def _where(state: VaultState, rel: str, found: Detection) -> str:
    """What was found and where, by the line of the *file* a person opens: the scanner
    counts lines of the content, which starts below the frontmatter."""
    if found.field != "content":
        return found.describe()
    try:
        offset = body_offset(read_bytes(state.abspath(rel), rel))
    except (OSError, EngramError):
        return found.describe()
    return found.describe(offset)


_STATE_TRACKED = {
    ".engram/": "this machine's index, journals, audit log and trash, which an older engram committed in a clone "
    "whose .gitignore did not name the folder: every push publishes them and every pull can overwrite them. "
    "`engram sync` takes them off the branch (the files stay), or run `git rm -r --cached {path}` and commit",
    "private/": "private items, which are never to be shared: `engram sync` takes them off the branch (the files "
    "stay), or run `git rm -r --cached {path}` and commit (an item meant for the team belongs outside private/)",
}


def _committed_state(state: VaultState) -> list[Problem]:
    """``.engram/`` or ``private/`` tracked by git, or found in the history: one machine's
    files published (see :data:`engram.store.paths.MACHINE_LOCAL`)."""
    problems = []
    try:
        with GitRepo(state.root) as repo:
            prefix = state.root.relative_to(repo.top).as_posix()
            lead = "" if prefix == "." else prefix + "/"
            for folder in MACHINE_LOCAL:
                path = lead + folder.rstrip("/")
                tracked = [p for p in repo.run("--literal-pathspecs", "ls-files", "-z", "--", path).out.split("\0") if p]
                if tracked:
                    problems.append(Problem(
                        "committed-state", path,
                        f"{len(tracked)} file(s) tracked by git hold " + _STATE_TRACKED[folder].format(path=path),
                        fixable=False,
                    ))
                    continue
                found = repo.run("--literal-pathspecs", "rev-list", "--all", "-1", "--", path, check=False).out.strip()
                if found:
                    problems.append(Problem(
                        "state-in-history", path,
                        f"is no longer tracked, but commit {found[:12]} (and maybe others) put it into git's history, "
                        "so the remote and every clone still carry it. To purge it, rewrite the history with "
                        f"`git filter-repo --invert-paths --path {path}/`, force-push every branch, and have every "
                        "teammate clone afresh",
                        fixable=False,
                    ))
    except (GitError, ValueError):
        return []  # not in a repository (or the vault is outside its work tree): nothing committed
    return problems
