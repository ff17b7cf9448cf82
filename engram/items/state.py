"""The state every vault operation shares, and the helpers that resolve, place and write.

A :class:`VaultState` is one opened vault: its root, the committed settings, the derived
index, the audit log, the write lock and the actor. The operations of
:mod:`engram.items`, :mod:`engram.recall` and :mod:`engram.team` are functions that take
it as their first argument; :class:`engram.vault.Vault` exposes them as methods.

Invariants every writer relies on:

- Every read-modify-write runs under :attr:`VaultState.lock` and re-reads the file from
  disk inside it, so concurrent writers (other processes, other agents) never lose an
  update; the loser of a race on ``update`` gets :class:`~engram.errors.VersionConflict`.
- Files are replaced atomically (:mod:`engram.store.fsio`); a crash leaves the old bytes.
- An item's path follows its domain, title and visibility; its id never changes. Every
  synapse write regenerates the derived wikilink section of both endpoints that are
  engram's own items (a person's note gets none: :func:`engram.store.notes.persons_note`);
  synapses that touch a private item live under ``private/`` and never appear in a shared
  file.
- Deleting moves files into ``.engram/trash/`` rather than destroying them.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from engram.errors import (
    EngramError,
    Forbidden,
    FormatError,
    InvalidInput,
    NotAdopted,
    NotFound,
    SensitiveData,
    StorageError,
    VaultNotFound,
    VersionConflict,
)
from engram.index.catalog import FreshnessSettings, Index, RefreshStats
from engram.index.settings import IndexSettings
from engram.items import derived, sidecar
from engram.store.audit import AuditLog
from engram.store.dedup import DedupSettings
from engram.store.format import read_bytes, read_engram, read_synapse, write_note, write_synapse
from engram.store.fsio import VaultLock, atomic_write, ensure_ignored, prune_empty_dirs, remove
from engram.store.model import (
    SYMMETRIC_KINDS,
    SYNAPSE_KINDS,
    Engram,
    Synapse,
    new_id,
    now,
    synapse_id,
)
from engram.store.notes import DERIVED_PREFIX, derived_id, persons_note, read_note
from engram.store.obsidian import in_folders, template_folders
from engram.store.paths import id_suffix, item_relpath, resolve_inside
from engram.store.progress import Progress
from engram.store.settings import SETTINGS_FILE, Settings
from engram.store.surgical import edit_frontmatter
from engram.trust.roles import Role, Roles
from mergedriver import codec
from mergedriver.codec import CodecError

if TYPE_CHECKING:  # the screen and the detectors load with the first write, not with a search
    from engram.trust.likeness import Encoder
    from engram.trust.policy import TrustSettings

STATE_DIR = ".engram"


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


#: Where the actor came from, in the order they are tried (see :func:`resolve_actor`).
ACTOR_SOURCES = ("flag", "env", "git", "login")


def resolve_actor(root: Path | None = None, explicit: str | None = None) -> tuple[str, str]:
    """Who is writing, and where that came from: ``(name, source)``.

    In order: ``explicit`` (``--actor``, source ``"flag"``), ``ENGRAM_ACTOR`` (``"env"``),
    ``git config user.name`` as the vault's repository sees it (``"git"``: its own
    config, then the user's), then the login name (``"login"``). Git is asked only when
    the first two are unset, so a caller that names the actor never starts a process.
    """
    if explicit and explicit.strip():
        return explicit.strip(), "flag"
    env = os.environ.get("ENGRAM_ACTOR", "").strip()
    if env:
        return env, "env"
    name = git_user_name(root or Path.cwd())
    if name:
        return name, "git"
    try:
        import getpass

        return getpass.getuser(), "login"
    except (KeyError, OSError):
        return "unknown", "login"


def git_user_name(folder: Path) -> str | None:
    """``git config user.name`` run in ``folder`` (None when unset or git is missing)."""
    try:
        proc = subprocess.run(
            ["git", "config", "--get", "user.name"],
            cwd=folder if folder.is_dir() else None,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    name = proc.stdout.strip()
    return name if proc.returncode == 0 and name else None


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``engram.yaml`` or ``.engram/``."""
    current = start.resolve()
    for folder in (current, *current.parents):
        if (folder / SETTINGS_FILE).is_file() or (folder / STATE_DIR).is_dir():
            return folder
    return None


def locate(path: str | Path | None) -> Path:
    """The root of the vault at or above ``path`` (default: the current folder).

    A folder given explicitly that has no vault marker above it is opened as a vault as
    it is (a Co-Engram repository, say); the current folder is not. Raises VaultNotFound.
    """
    # `~` is expanded here, the one place every adapter's path goes through (`--vault`,
    # ENGRAM_VAULT, `Vault.open("~/team-memory")`); a shell does it only when unquoted.
    start = Path(path).expanduser() if path is not None else Path.cwd()
    if not start.exists():
        raise VaultNotFound(
            f"no folder at {start}.", hint="Check the path, or create a vault with `engram init PATH`."
        )
    named_file = start.is_file()
    if named_file:
        start = start.parent
    root = find_root(start)
    if root is None:
        if named_file:  # a file outside any vault: opening its folder would write .engram/ there
            raise VaultNotFound(
                f"{path} is a file, and no engram vault is at or above it.",
                hint="Pass the vault's folder to --vault, or create one with `engram init FOLDER`.",
            )
        if path is None:
            raise VaultNotFound(
                f"no engram vault at or above {start}.",
                hint="Run `engram init` here, or pass --vault PATH (or set ENGRAM_VAULT).",
            )
        root = start
    return root


class Refusal:
    """Which item a write that may be refused is about (see :meth:`VaultState.refusals_audited`)."""

    __slots__ = ("id",)

    def __init__(self, ref: str) -> None:
        self.id = ref


class VaultState:
    """One opened vault: its parts, and the helpers its operations share."""

    def __init__(self, root: Path, *, actor: str | None = None) -> None:
        self.root = root.resolve()
        self.state_dir = self.root / STATE_DIR
        # The state folder ignores itself whatever the vault's .gitignore says, from the
        # first command on: in a clone `engram init` never ran (issue 28). A read-only
        # vault gets none (and no folder): its index lives elsewhere.
        with contextlib.suppress(StorageError):
            ensure_ignored(self.state_dir)
        self.settings = Settings.load(self.root)
        self._actor = actor.strip() if actor and actor.strip() else None
        self._actor_source = "flag" if self._actor else None
        # A broken engram.yaml must not stop reads or `doctor` (see Settings.problem): the
        # index then keeps the ignore list it was built with.
        index_settings = None if self.settings.problem else self.settings.section("index", IndexSettings)
        self.index = Index(self.root, self.state_dir / "index.sqlite", index_settings)
        self.audit = AuditLog(self.state_dir / "audit.jsonl")
        self.lock = VaultLock(self.state_dir / "write.lock", prepare=self._prepare_writes)
        self._fresh = False
        self._companions: dict[str, _Closable] = {}
        self._trust: tuple[Settings, TrustSettings] | None = None
        self._roles: tuple[Settings, bool, Roles] | None = None
        #: True when an agent acts through this state (the MCP server sets it): without
        #: ``roles`` in engram.yaml an agent is a writer, a person a curator (see
        #: :mod:`engram.trust.roles`).
        self.agent_session = False
        #: The sentence encoder the instruction screen reads meaning with
        #: (:mod:`engram.trust.likeness`). It lives in engram.recall, above this layer, so
        #: whoever opens the vault hands it in (:class:`engram.vault.Vault` does); None
        #: leaves the screen to its rules and says so (``meaning: unavailable``).
        self.encoder: Encoder | None = None

    def __repr__(self) -> str:
        return f"VaultState({str(self.root)!r})"

    @functools.cached_property
    def dedup_settings(self) -> DedupSettings:
        # Read on first use, not at open: a broken engram.yaml must not stop `doctor`,
        # which reports it (see Settings.problem).
        return self.settings.section("dedup", DedupSettings)

    @property
    def actor(self) -> str:
        """Who this state writes as (resolved on first use; see :func:`resolve_actor`)."""
        if self._actor is None:
            self._actor, self._actor_source = resolve_actor(self.root)
        return self._actor

    @actor.setter
    def actor(self, name: str) -> None:
        self._actor, self._actor_source = name, "flag"

    @property
    def actor_source(self) -> str:
        """Where :attr:`actor` came from: one of :data:`ACTOR_SOURCES`."""
        _ = self.actor
        assert self._actor_source is not None
        return self._actor_source

    def close(self) -> None:
        """Close the index connection and stop its file watcher (and companions')."""
        for companion in self._companions.values():
            companion.close()
        self._companions.clear()
        self.index.close()

    def companion(self, key: str, make: Callable[[], C]) -> C:
        """An object made once per state and closed with it (the org vault's state)."""
        found = self._companions.get(key)
        if found is None:
            found = self._companions[key] = make()
        return found  # type: ignore[return-value]

    # ------------------------------------------------------------------ trust

    # Read from the settings on first use and again whenever ``settings`` is reloaded
    # (scope setup, an org sync): who may do what follows the engram.yaml in force.

    @property
    def trust(self) -> TrustSettings:
        """The ``trust`` section of ``engram.yaml`` (see :mod:`engram.trust.policy`)."""
        from engram.trust.policy import TrustSettings

        if self._trust is None or self._trust[0] is not self.settings:
            self._trust = (self.settings, self.settings.section("trust", TrustSettings).validated())
        return self._trust[1]

    def _prepare_writes(self) -> None:
        """Before this state first takes the write lock: load the trust screen a write
        admits through (:func:`engram.trust.policy.warm`). A broken ``trust`` section is
        left for the write itself to report."""
        from engram.trust.policy import warm

        with contextlib.suppress(EngramError):
            warm(self.trust, self.encoder)

    @property
    def roles(self) -> Roles:
        """``roles`` of ``engram.yaml`` (see :mod:`engram.trust.roles`)."""
        if self._roles is None or self._roles[0] is not self.settings or self._roles[1] != self.agent_session:
            self._roles = (self.settings, self.agent_session,
                           Roles.from_settings(self.settings, agent=self.agent_session))
        return self._roles[2]

    @property
    def role(self) -> Role:
        """The role of this state's actor."""
        return self.roles.of(self.actor)

    @contextmanager
    def refusals_audited(self, action: str, ref: str, *, target: str = "item") -> Iterator[Refusal]:
        """Record a refused write (a role, a secret, a screen, a stale version) in the
        audit log with the rule that refused it, then let the error go on. The body may
        set ``.id`` on what it yields once it knows which item ``ref`` names."""
        refusal = Refusal(ref)
        try:
            yield refusal
        except (Forbidden, SensitiveData, VersionConflict, InvalidInput) as exc:
            rule = getattr(exc, "rule", None) or ("version-conflict" if isinstance(exc, VersionConflict) else None)
            if rule is not None:
                self.audit.record(
                    self.actor, action, refusal.id, target=target, outcome="refused", rule=rule, reason=exc.message
                )
            raise

    # ------------------------------------------------------------------ freshness

    def refresh(self, progress: Progress | None = None) -> RefreshStats:
        """Bring the derived index in line with the files (cheap when nothing changed);
        ``progress`` is told of the files parsed (:mod:`engram.store.progress`)."""
        stats = self.index.refresh(progress)
        self._fresh = True
        return stats

    def reindex(self, progress: Progress | None = None) -> RefreshStats:
        """Rebuild the index from the files alone."""
        stats = self.index.rebuild(progress)
        self._fresh = True
        return stats

    def ensure_fresh(self) -> None:
        """Before a read: the index reflects every file change that completed before this
        call (a watcher in long-lived processes, a stat walk otherwise; see
        :meth:`engram.index.catalog.Index.ensure_fresh`)."""
        if self.settings.problem is not None:
            mode = "walk"  # always correct; a broken engram.yaml must not stop plain reads
        else:
            mode = self.settings.section("recall", FreshnessSettings).validated().freshness
        self.index.ensure_fresh(mode)
        self._fresh = True

    def ensure_indexed(self) -> None:
        """For writers: one full walk per process, then the shared index is kept current."""
        if not self._fresh:
            self.refresh()

    # ------------------------------------------------------------------ resolving

    def abspath(self, relpath: str) -> Path:
        """The absolute path of a vault-relative one; refuses paths that leave the vault."""
        return resolve_inside(self.root, relpath)

    def relpath_of(self, ref: str) -> str | None:
        """Turn a path-like reference into a vault-relative path, if it is one."""
        if not (ref.endswith(".md") or "/" in ref or os.sep in ref):
            return None
        candidate = Path(ref)
        if candidate.is_absolute():
            try:
                rel = candidate.resolve().relative_to(self.root).as_posix()
            except ValueError:
                raise InvalidInput(
                    f"{ref} is outside the vault {self.root}.", hint="Pass a path inside the vault."
                ) from None
        else:
            rel = candidate.as_posix().removeprefix("./")
        if not rel.endswith(".md"):
            rel += ".md"
        self.abspath(rel)  # refuses paths that leave the vault
        return rel

    def resolve(self, ref: str) -> str:
        """The path of the item named by id, id prefix (6+ chars), path or exact title.

        Raises InvalidInput (empty or ambiguous) or NotFound.
        """
        ref = ref.strip()
        if not ref:
            raise InvalidInput("the item reference is empty.", hint="Pass an id, a path or a title.")
        for attempt in range(2):
            found = self._lookup(ref)
            if found:
                return found
            if attempt == 0:
                self.refresh()
        if ref.startswith(DERIVED_PREFIX):
            # A note adopted since something named it by its derived id (a proposal, a
            # journal line): that id is still the hash of the note's path.
            for row in self.index.query("SELECT path FROM items WHERE identity = 'file'"):
                if derived_id(row["path"]) == ref:
                    return str(row["path"])
        raise NotFound(
            f"no item matches {ref!r}.",
            ref=ref,
            hint="Pass an id, a vault-relative path or the exact title; `engram list` shows items.",
        )

    def resolve_id(self, ref: str) -> str:
        """The id of the item named by ``ref`` (see :meth:`resolve`)."""
        return self.index.item_rows("path = ?", (self.resolve(ref),))[0].id

    def _lookup(self, ref: str) -> str | None:
        rel = self.relpath_of(ref)
        if rel is not None:
            rows = self.index.item_rows("path = ?", (rel,))
            return rows[0].path if rows else None
        for where, params in (
            ("id = ?", (ref,)),
            ("title = ?", (ref,)),
            ("title_key = ?", (ref.casefold(),)),
        ):
            rows = self.index.item_rows(where, params)
            if len(rows) == 1:
                return rows[0].path
            if len(rows) > 1:
                _ambiguous(ref, rows)
        if len(ref) >= 6 and re.fullmatch(r"[0-9A-Za-z]+", ref):
            rows = self.index.item_rows("id LIKE ? ESCAPE '\\'", (ref.upper() + "%",))
            if len(rows) == 1:
                return rows[0].path
            if len(rows) > 1:
                _ambiguous(ref, rows)
        return None

    # ------------------------------------------------------------------ items

    def read(self, rel: str) -> tuple[Engram, str]:
        """(item, derived section) of the file at ``rel``. Raises FormatError."""
        return read_engram(self.abspath(rel), rel)

    def claim(self, rel: str) -> Engram:
        """The item at ``rel``, ready for a write its owner asked for.

        A note that has only a derived id (see :mod:`engram.store.notes`) is adopted first:
        a new ULID is written into its frontmatter and nothing else changes, so whatever
        this write records under the id (a synapse, a version) survives renames and
        reaches every clone. Only a write that names the note as its subject comes here
        (``engram adopt``, an update, a typed link a caller asked for); any other write
        leaves such a note alone (the writer refuses it: :mod:`engram.store.format`).

        What was kept beside the note follows the new id: its counters
        (:mod:`engram.items.sidecar`) and the typed links that named its derived id, which
        are re-pointed. The note stays a person's (:func:`engram.store.notes.persons_note`):
        the id line is all that is written, its links show on their other ends. Raises
        FormatError when the frontmatter cannot be edited in place (it is not YAML),
        NotAdopted for an Obsidian template (an id in it would be copied into every note
        made from it).
        """
        path = self.abspath(rel)
        data = read_bytes(path, rel)
        note = read_note(data, rel)
        if note.adopted:
            return note.item
        folder = in_folders(rel, template_folders(self.root))
        if folder is not None:
            raise NotAdopted(
                rel,
                f"it is an Obsidian template (the templates folder {folder}/), and an id written into it would be "
                "copied into every note made from it, so engram never writes one",
                hint="Write to the notes made from it instead; to keep templates out of the index, add "
                f"'{folder}/' to index.ignore in engram.yaml.",
            )
        adopted = replace(note.item, id=new_id())
        try:
            atomic_write(path, edit_frontmatter(data, {"id": adopted.id}))
        except CodecError as exc:
            raise FormatError(rel, f"cannot be given an id in place: {exc}") from exc
        self.index.put_item(rel, adopted, note.derived)
        self.audit.record(self.actor, "adopt", adopted.id, path=rel, fields=("id",))
        sidecar.move(self.state_dir, note.item.id, adopted.id)
        # The other ends' derived lines name the note by path and title, which stay.
        self._repoint(note.item.id, adopted.id)
        return adopted

    def _repoint(self, old: str, new: str) -> None:
        """Move the typed links that name ``old`` (a derived id) to ``new``: each is a new
        synapse file (its name is a hash of its ends), the old file goes."""
        for syn in self.incident(old):
            source = new if syn.source == old else syn.source
            target = new if syn.target == old else syn.target
            if syn.kind in SYMMETRIC_KINDS:
                source, target = sorted((source, target))
            moved = replace(syn, id=synapse_id(source, target, syn.kind), source=source, target=target)
            for rel in self.index.synapse_paths(syn.id):
                remove(self.abspath(rel))
                prune_empty_dirs(self.abspath(rel).parent, self.root)
                self.index.drop(rel)
            rel = self.store_synapse(moved)
            self.audit.record(self.actor, "relink", moved.id, target="synapse", path=rel, note=f"was {syn.id}")

    def place(self, item: Engram, current: str | None = None) -> str:
        """The path for ``item``: its natural path, or with an id suffix when taken."""
        slug = item.slug or "untitled"
        private = item.visibility == "private"
        natural = item_relpath(item.domain_tags, slug, private=private)
        if natural == current:
            return natural
        path = self.abspath(natural)
        if not path.exists() or self._file_id(natural) == item.id:
            return natural
        suffixed = item_relpath(item.domain_tags, slug, private=private, suffix=id_suffix(item.id))
        if suffixed == current:
            return suffixed
        self.abspath(suffixed)
        return suffixed

    def _file_id(self, rel: str) -> str | None:
        try:
            return self.read(rel)[0].id
        except (FileNotFoundError, EngramError):
            return None

    def check_version(self, current: Engram, expected: int | None) -> None:
        """Raise VersionConflict (saying what changed since) unless ``expected`` is the
        item's version or None."""
        if expected is None or expected == current.version:
            return
        since = [
            e for e in self.audit.entries(current.id)
            if e.new_version is not None and e.new_version > expected
        ]
        if since:
            changes = "; ".join(
                f"v{e.new_version} by {e.actor or 'unknown'} at {e.at}"
                + (f" ({', '.join(e.fields)})" if e.fields else "")
                for e in since[-5:]
            )
        else:
            changes = f"last updated by {current.updated_by or 'unknown'} at {current.updated_at}"
        raise VersionConflict(current.id, expected, current.version, changes, current.path or "")

    def write_item(
        self, item: Engram, derived_lines: builtins.list[str] | None, previous: str | None = None
    ) -> None:
        """Write an item file (derived section recomputed when not given) and index it;
        ``previous`` is the path it is moving from (a person's note keeps its bytes)."""
        assert item.path is not None
        if derived_lines is None:
            derived_lines = derived.lines_for(self.index, item)
        # A content edit made outside engram keeps its stale hash here: only a writer that
        # vetted the body (sync's staging, `update`, doctor with consent) records it, so a
        # half-saved body is never blessed by a rewrite of the links around it.
        if item.path.startswith("private/"):
            ensure_ignored(self.root / "private")
        written = write_note(
            self.abspath(item.path), item.path, item, derived_lines,
            previous=self.abspath(previous) if previous else None,
        )
        self.index.put_item(item.path, item, "\n".join(derived_lines), written)

    def move_item(self, current: Engram, updated: Engram) -> None:
        """Write ``updated`` at its new path, remove the old file, fix what points at it."""
        assert current.path is not None and updated.path is not None
        self.write_item(updated, None, previous=current.path)
        old = self.abspath(current.path)
        remove(old)
        self.index.drop(current.path)
        prune_empty_dirs(old.parent, self.root)
        if (current.visibility == "private") != (updated.visibility == "private"):
            for syn in self.incident(current.id):
                self.store_synapse(syn)
        for neighbour in self.neighbours(updated.id):
            self.refresh_derived(neighbour)
        self.refresh_derived(updated.id)

    def refresh_derived(self, item_id: str) -> None:
        """Regenerate one item's derived section from the synapses (no version bump)."""
        for row in self.index.item_rows("id = ?", (item_id,)):
            try:
                item, old = self.read(row.path)
            except (FileNotFoundError, FormatError):
                continue
            if persons_note(item):
                continue  # a person's note: its links show on the other ends only
            lines = derived.lines_for(self.index, item)
            if "\n".join(lines) != old:
                self.write_item(item, lines)

    def trash_bin(self, *parts: str) -> Path:
        """A new folder under ``.engram/trash/`` for one removal."""
        return self.state_dir.joinpath("trash", *parts, now().replace(":", "-"))

    def to_trash(self, rel: str, bin_dir: Path) -> None:
        """Move one vault file into ``bin_dir`` (keeping its relative path) and unindex it."""
        source = self.abspath(rel)
        target = bin_dir / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(source, target)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot move {rel} to the trash: {exc}.", hint="Check permissions.") from exc
        prune_empty_dirs(source.parent, self.root)  # git keeps no empty folders; neither do we
        self.index.drop(rel)

    # ------------------------------------------------------------------ synapses

    def existing_synapse(self, sid: str) -> Synapse | None:
        """The synapse with id ``sid`` as its file says, shared or private, or None."""
        for rel in self.index.synapse_paths(sid):
            try:
                return read_synapse(self.abspath(rel), rel)
            except FileNotFoundError:
                self.index.drop(rel)
        for rel in (f"synapses/{kind}/{sid}.yaml" for kind in SYNAPSE_KINDS):
            for candidate in (rel, "private/" + rel):
                try:
                    return read_synapse(self.abspath(candidate), candidate)
                except FileNotFoundError:
                    continue
        return None

    def synapse_relpath(self, syn: Synapse, private: bool | None = None) -> str:
        """Where ``syn`` belongs: under ``private/`` when it touches a private item."""
        if private is None:
            rows = self.index.query(
                "SELECT visibility FROM items WHERE id IN (?, ?)", (syn.source, syn.target)
            )
            private = any(r["visibility"] == "private" for r in rows)
        return ("private/" if private else "") + syn.path

    def store_synapse(self, syn: Synapse, private: bool | None = None) -> str:
        """Write a synapse at its place (shared or private), removing a stale copy."""
        rel = self.synapse_relpath(syn, private)
        if rel.startswith("private/"):
            ensure_ignored(self.root / "private")
        write_synapse(self.abspath(rel), syn)
        self.index.put_synapse(rel, syn)
        for old in self.index.synapse_paths(syn.id):
            if old != rel:
                remove(self.abspath(old))
                prune_empty_dirs(self.abspath(old).parent, self.root)
                self.index.drop(old)
        return rel

    def incident(self, item_id: str) -> builtins.list[Synapse]:
        """Every synapse with ``item_id`` at either end."""
        return self.index.synapses("source = ? OR target = ?", (item_id, item_id))

    def neighbours(self, item_id: str) -> builtins.list[str]:
        """The ids at the other end of ``item_id``'s synapses."""
        return sorted({s.other(item_id) for s in self.incident(item_id)} - {item_id})


def edited_outside(item: Engram) -> bool:
    """Whether the content changed since engram last wrote the file (a person's edit in
    Obsidian or any editor): its ``contentHash`` no longer matches it."""
    return item.content_hash != codec.content_hash(item.content)


def settled(item: Engram, actor: str, *, bump: bool) -> Engram:
    """``item`` with ``contentHash``/``contentSize`` brought up to date after an edit made
    outside engram, and the edit recorded as a new version by ``actor`` when ``bump``
    (the caller's own write does not already count one). Unchanged when not edited."""
    if not edited_outside(item):
        return item
    fresh = replace(
        item,
        content_hash=codec.content_hash(item.content),
        content_size=len(item.content.encode("utf-8")),
    )
    if bump:
        fresh = replace(fresh, version=item.version + 1, updated_at=now(), updated_by=actor)
    return fresh


def _ambiguous(ref: str, rows: Sequence[Any]) -> None:
    listing = "; ".join(f"{r.id} ({r.path})" for r in rows[:10])
    same_id = len({r.id for r in rows}) == 1
    raise InvalidInput(
        f"{len(rows)} items match {ref!r}: {listing}.",
        hint="Run `engram doctor --fix` to give copies new ids."
        if same_id
        else "Pass one of the ids instead.",
    )
