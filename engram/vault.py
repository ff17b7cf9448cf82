"""The vault: the one public entry point of the library.

:class:`Vault` is what the CLI, the MCP server and the viewer call, and what a Python
user starts from. It holds one :class:`~engram.items.state.VaultState` (root, settings,
index, audit log, lock, actor) and nothing else: every method is a function of that
state in the module that owns the capability, named beside it below, so this class is
the table of contents of the API and each line says which module to open.

Each line names its function by its dotted path (``delegate(engram.items.reading.get)``)
and the module is imported the first time the method is looked up, so opening a vault —
which every command and git hook does — imports only the layers it then calls; before,
building this table imported all of them, and a one-shot ``engram search`` paid for the
lifecycle, imports, sync and doctor. The type checker reads the same paths against the
real modules, and tests/test_architecture.py counts each one as an import of its layer.

The invariants every operation keeps (locking, atomic files, validation before any
write, paths that follow titles, deletes to the trash) are stated in
:mod:`engram.items.state`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import MethodType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from engram.items.state import VaultState, locate
from engram.recall import encoder  # cheap: ONNX Runtime loads on the first embed

if TYPE_CHECKING:  # what the delegations below name; each module is imported when first called
    import engram.adopt.adopting
    import engram.adopt.batch
    import engram.adopt.export
    import engram.adopt.sources
    import engram.doctor
    import engram.items.attachments
    import engram.items.links
    import engram.items.neighbourhood
    import engram.items.properties
    import engram.items.quarantine
    import engram.items.reading
    import engram.items.repair
    import engram.items.trash
    import engram.items.writing
    import engram.lifecycle.creating
    import engram.lifecycle.feedback
    import engram.lifecycle.forgetting
    import engram.lifecycle.freshness
    import engram.lifecycle.learning
    import engram.lifecycle.lineage
    import engram.lifecycle.maintenance
    import engram.lifecycle.proposals
    import engram.lifecycle.resolve
    import engram.lifecycle.review
    import engram.lifecycle.skills
    import engram.lifecycle.succession
    import engram.quality.evaluation
    import engram.quality.timing
    import engram.recall.meaning
    import engram.recall.usage
    import engram.scopes.capture
    import engram.scopes.distill
    import engram.scopes.promotion
    import engram.scopes.recall
    import engram.scopes.status
    import engram.team.conflicts
    import engram.team.history
    import engram.team.mergelog
    import engram.team.setup
    import engram.team.sync
    from engram.items.writing import CreateResult

__all__ = ["CreateResult", "Vault"]

P = ParamSpec("P")
R = TypeVar("R")


class Named:
    """A function named by its dotted path (``engram.scopes.recall.search``) and imported
    on first use. At run time the delegations below name ``engram.….fn`` through this
    stand-in, so opening a vault imports none of the layers it does not call; the type
    checker reads the same expressions against the real modules (the ``TYPE_CHECKING``
    imports above). Its one attribute is underscored: any other name is a step of a path."""

    __slots__ = ("_dotted",)

    def __init__(self, dotted: str) -> None:
        self._dotted = dotted

    def __getattr__(self, name: str) -> Named:
        if name.startswith("__"):  # copy, pickle and inspect probe dunders: not a path
            raise AttributeError(name)
        return Named(f"{self._dotted}.{name}")

    def __repr__(self) -> str:
        return f"Named({self._dotted!r})"


def _imported(named: Named) -> Any:
    module, _, name = named._dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


if not TYPE_CHECKING:
    engram = Named("engram")


class delegate(Generic[P, R]):
    """A :class:`Vault` method implemented by ``fn(state, ...)``.

    On an instance it is ``fn`` bound to the vault's state, with ``fn``'s signature and
    docstring (so ``help(vault.search)`` and type checkers see the real parameters).
    ``fn`` may be given as a :class:`Named` path: its module is imported the first time
    the method is looked up.
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[Concatenate[VaultState, P], R]) -> None:
        self._fn: Any = fn

    @property
    def fn(self) -> Callable[Concatenate[VaultState, P], R]:
        if isinstance(self._fn, Named):
            self._fn = _imported(self._fn)
        fn: Callable[Concatenate[VaultState, P], R] = self._fn
        return fn

    @overload
    def __get__(self, vault: None, owner: type[Any]) -> Callable[Concatenate[VaultState, P], R]: ...
    @overload
    def __get__(self, vault: Vault, owner: type[Any]) -> Callable[P, R]: ...
    def __get__(self, vault: Vault | None, owner: type[Any]) -> Callable[..., R]:
        return self.fn if vault is None else MethodType(self.fn, vault.state)


class Vault:
    """A vault on disk. Open one with :meth:`open` or create one with :meth:`init`."""

    def __init__(self, root: Path, *, actor: str | None = None) -> None:
        self.state = VaultState(root, actor=actor)
        # The screen sits below recall, so the encoder it reads meaning with is handed in here.
        self.state.encoder = encoder.embed

    @classmethod
    def open(cls, path: str | Path | None = None, *, actor: str | None = None) -> Vault:
        """Open the vault at or above ``path`` (default: the current folder); see
        :func:`engram.items.state.locate`. Raises VaultNotFound."""
        return cls(locate(path), actor=actor)

    @classmethod
    def init(cls, path: str | Path, *, actor: str | None = None) -> Vault:
        """Create (or complete) a vault at ``path``; safe to run again (engram.team.setup)."""
        from engram.team import setup

        return cls(setup.init_vault(Path(path).expanduser()), actor=actor)

    @property
    def root(self) -> Path:
        return self.state.root

    @property
    def actor(self) -> str:
        return self.state.actor

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    close = delegate(VaultState.close)
    refresh = delegate(VaultState.refresh)  # the index, in line with the files
    reindex = delegate(VaultState.reindex)  # the index, rebuilt from the files alone
    abspath = delegate(VaultState.abspath)

    # items — engram.items.reading / .writing / .properties / .attachments
    get = delegate(engram.items.reading.get)
    list = delegate(engram.items.reading.list_items)
    titles = delegate(engram.items.reading.titles)
    history = delegate(engram.items.reading.history)  # this machine's audit entries (see timeline)
    browse = delegate(engram.items.reading.browse)  # a sorted page and the total, for tables
    census = delegate(engram.items.reading.census)
    derived_section = delegate(engram.items.reading.derived_section)
    activity = delegate(engram.items.reading.activity)  # the audit log, newest first
    paths = delegate(engram.items.reading.paths)
    broken_files = delegate(engram.items.reading.broken_files)
    properties = delegate(engram.items.properties.properties)  # the frontmatter apart from engram's
    attachment = delegate(engram.items.attachments.attachment)  # an image a note embeds, read safely
    find_attachment = delegate(engram.items.attachments.locate)  # where that image is, without reading it
    create = delegate(engram.lifecycle.creating.create)  # a near match becomes a learn decision
    update = delegate(engram.items.writing.update)
    delete = delegate(engram.items.writing.delete)

    # the trash — engram.items.trash
    trash = delegate(engram.items.trash.entries)
    in_trash = delegate(engram.items.trash.holds)
    restore_deleted = delegate(engram.items.trash.restore)  # from .engram/trash (restore: a forgotten item)
    purge_trash = delegate(engram.items.trash.purge)

    # imports and exports — engram.adopt.sources (which reader), .batch (writing it), .export
    read_import = delegate(engram.adopt.sources.read_for)
    run_import = delegate(engram.adopt.batch.run)
    export_markdown = delegate(engram.adopt.export.markdown)
    export_document = delegate(engram.adopt.export.document)  # the same text, with its item count
    export_jsonl = delegate(engram.adopt.export.jsonl)
    write_export = delegate(engram.adopt.export.write_markdown)  # outside the vault, never over a file

    # synapses — engram.items.links
    link = delegate(engram.items.links.link)
    unlink = delegate(engram.items.links.unlink)
    synapse = delegate(engram.items.links.synapse)
    synapses = delegate(engram.items.links.synapses)
    wikilinks = delegate(engram.items.links.wikilinks)  # derived from the text of notes
    neighbourhood = delegate(engram.items.neighbourhood.neighbourhood)  # a bounded piece of the graph

    # recall — engram.scopes.recall (this vault and the org vault) / engram.recall.usage /
    # engram.quality (a golden set's quality and recall latency, measured on this vault)
    search = delegate(engram.scopes.recall.search)
    get_any = delegate(engram.scopes.recall.get_any)  # this vault, then the org vault
    embed_all = delegate(engram.recall.meaning.embed_all)  # every item's vectors, up front
    unembedded = delegate(engram.recall.meaning.unembedded)  # vectors not computed yet
    evaluate = delegate(engram.quality.evaluation.run)  # a golden set through recall's defaults
    bench = delegate(engram.quality.timing.run)  # recall latency on this vault's own words
    flush_usage = delegate(engram.recall.usage.flush)

    # learning and lifecycle — engram.lifecycle.*
    learn = delegate(engram.lifecycle.learning.learn)
    feedback = delegate(engram.lifecycle.feedback.feedback)
    fold = delegate(engram.lifecycle.feedback.fold)  # usage and feedback journals into frontmatter
    supersede = delegate(engram.lifecycle.succession.supersede)
    lineage = delegate(engram.lifecycle.lineage.lineage)
    archive = delegate(engram.lifecycle.forgetting.archive)
    forget = delegate(engram.lifecycle.forgetting.forget)
    restore = delegate(engram.lifecycle.forgetting.restore)
    purge = delegate(engram.lifecycle.forgetting.purge)
    verify_entry = delegate(engram.lifecycle.freshness.verify_entry)
    upgrade_verification = delegate(engram.lifecycle.freshness.upgrade_verification)
    refute = delegate(engram.lifecycle.freshness.refute)
    stale_report = delegate(engram.lifecycle.freshness.stale_report)
    contradiction_resolve = delegate(engram.lifecycle.resolve.contradiction_resolve)
    maintain = delegate(engram.lifecycle.maintenance.maintain)
    proposals = delegate(engram.lifecycle.proposals.list_proposals)
    proposal = delegate(engram.lifecycle.proposals.get_proposal)
    accept = delegate(engram.lifecycle.review.accept)
    dismiss = delegate(engram.lifecycle.review.dismiss)
    create_skill = delegate(engram.lifecycle.skills.create_skill)
    skills = delegate(engram.lifecycle.skills.skills)
    find_skill = delegate(engram.lifecycle.skills.find_skill)
    invoke_skill = delegate(engram.lifecycle.skills.invoke_skill)

    # trust — engram.items.quarantine, engram.items.reading (the audit log)
    quarantined = delegate(engram.items.quarantine.listing)
    release = delegate(engram.items.quarantine.release)
    audit = delegate(engram.items.reading.audit_entries)

    # scopes and capture — engram.scopes.promotion / .distill / .capture / .status
    endorse = delegate(engram.scopes.promotion.endorse)
    promote = delegate(engram.scopes.promotion.promote)
    standing = delegate(engram.scopes.promotion.standing)
    review_promotions = delegate(engram.scopes.promotion.review_promotions)
    generalize = delegate(engram.scopes.promotion.generalize)
    sync_scopes = delegate(engram.scopes.promotion.sync_scopes)
    distill = delegate(engram.scopes.distill.distill)
    record_need = delegate(engram.scopes.capture.record_need)
    observe = delegate(engram.scopes.capture.observe)  # files a capture proposal, never an item
    screen_observation = delegate(engram.scopes.capture.screen)
    scopes_status = delegate(engram.scopes.status.scopes_status)
    configure_scopes = delegate(engram.scopes.status.configure)

    # sharing — engram.team.sync / .setup / .conflicts / .history
    timeline = delegate(engram.team.history.history)  # audit entries and the file's git log
    sync = delegate(engram.team.sync.sync)
    add_remote = delegate(engram.team.setup.add_remote)
    conflicts = delegate(engram.team.conflicts.flagged)
    resolve_conflict = delegate(engram.team.conflicts.resolve)
    merge_stats = delegate(engram.team.mergelog.merge_stats)
    merge_anomalies = delegate(engram.team.mergelog.merge_anomalies)

    # an existing folder of notes, adopted in place — engram.adopt.adopting
    adopt = delegate(engram.adopt.adopting.adopt)
    adoption = delegate(engram.adopt.adopting.summary)

    # health and repairs — engram.doctor, engram.items.repair
    doctor = delegate(engram.doctor.diagnose)
    rewrite_derived = delegate(engram.items.repair.rewrite_derived)
    rewrite_item = delegate(engram.items.repair.rewrite_item)
    relocate = delegate(engram.items.repair.relocate)
    reassign_id = delegate(engram.items.repair.reassign_id)
    discard_file = delegate(engram.items.repair.discard_file)


def __getattr__(name: str) -> Any:
    if name == "CreateResult":  # what create() returns, exported here; loaded on first use
        from engram.items.writing import CreateResult

        return CreateResult
    raise AttributeError(f"module 'engram.vault' has no attribute {name!r}")
