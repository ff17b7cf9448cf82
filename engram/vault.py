"""The vault: the one public entry point of the library.

:class:`Vault` is what the CLI, the MCP server and the viewer call, and what a Python
user starts from. It holds one :class:`~engram.items.state.VaultState` (root, settings,
index, audit log, lock, actor) and nothing else: every method is a function of that
state in the module that owns the capability, named beside it below, so this class is
the table of contents of the API and each line says which module to open.

The invariants every operation keeps (locking, atomic files, validation before any
write, paths that follow titles, deletes to the trash) are stated in
:mod:`engram.items.state`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import MethodType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from engram.adopt import adopting, export
from engram.adopt import batch as adopt_batch
from engram.adopt import sources as adopt_sources
from engram.doctor import diagnose
from engram.items import attachments, links, quarantine, reading, repair, writing
from engram.items import properties as item_properties
from engram.items import trash as item_trash
from engram.items.neighbourhood import neighbourhood as graph_neighbourhood
from engram.items.state import VaultState, locate
from engram.items.writing import CreateResult
from engram.lifecycle import feedback as lc_feedback
from engram.lifecycle import (
    forgetting,
    freshness,
    learning,
    maintenance,
    resolve,
    review,
    succession,
)
from engram.lifecycle import lineage as lc_lineage
from engram.lifecycle import proposals as lc_proposals
from engram.lifecycle import skills as lc_skills
from engram.quality import evaluation, timing
from engram.recall import encoder, meaning, usage
from engram.scopes import capture, distill, promotion, status
from engram.scopes import recall as scope_recall
from engram.team import conflicts as merge_conflicts
from engram.team import history as team_history
from engram.team import mergelog, setup
from engram.team.sync import sync as team_sync

__all__ = ["CreateResult", "Vault"]

P = ParamSpec("P")
R = TypeVar("R")


class delegate(Generic[P, R]):
    """A :class:`Vault` method implemented by ``fn(state, ...)``.

    On an instance it is ``fn`` bound to the vault's state, with ``fn``'s signature and
    docstring (so ``help(vault.search)`` and type checkers see the real parameters).
    """

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[Concatenate[VaultState, P], R]) -> None:
        self.fn = fn

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
    get = delegate(reading.get)
    list = delegate(reading.list_items)
    titles = delegate(reading.titles)
    history = delegate(reading.history)  # this machine's audit entries (see timeline)
    browse = delegate(reading.browse)  # a sorted page and the total, for tables
    census = delegate(reading.census)
    derived_section = delegate(reading.derived_section)
    activity = delegate(reading.activity)  # the audit log, newest first
    paths = delegate(reading.paths)
    broken_files = delegate(reading.broken_files)
    properties = delegate(item_properties.properties)  # the person's frontmatter apart from engram's fields
    attachment = delegate(attachments.attachment)  # an image a note embeds, read safely
    find_attachment = delegate(attachments.locate)  # where that image is, without reading it
    create = delegate(learning.create)  # a near match becomes a learn decision
    update = delegate(writing.update)
    delete = delegate(writing.delete)

    # the trash — engram.items.trash
    trash = delegate(item_trash.entries)
    in_trash = delegate(item_trash.holds)
    restore_deleted = delegate(item_trash.restore)  # from .engram/trash (restore: a forgotten item)
    purge_trash = delegate(item_trash.purge)

    # imports and exports — engram.adopt.sources (which reader), .batch (writing it), .export
    read_import = delegate(adopt_sources.read_for)
    run_import = delegate(adopt_batch.run)
    export_markdown = delegate(export.markdown)
    export_document = delegate(export.document)  # the same text, with its item count
    export_jsonl = delegate(export.jsonl)
    write_export = delegate(export.write_markdown)  # to a path outside the vault, never over a person's file

    # synapses — engram.items.links
    link = delegate(links.link)
    unlink = delegate(links.unlink)
    synapse = delegate(links.synapse)
    synapses = delegate(links.synapses)
    wikilinks = delegate(links.wikilinks)  # derived from the text of notes
    neighbourhood = delegate(graph_neighbourhood)  # a bounded piece of the graph

    # recall — engram.scopes.recall (this vault and the org vault) / engram.recall.usage /
    # engram.quality (a golden set's quality and recall latency, measured on this vault)
    search = delegate(scope_recall.search)
    get_any = delegate(scope_recall.get_any)  # this vault, then the org vault
    embed_all = delegate(meaning.embed_all)  # every item's vectors for recall by meaning, up front
    unembedded = delegate(meaning.unembedded)  # vectors not computed yet
    evaluate = delegate(evaluation.run)  # a golden set through recall's defaults
    bench = delegate(timing.run)  # recall latency on this vault's own words
    flush_usage = delegate(usage.flush)

    # learning and lifecycle — engram.lifecycle.*
    learn = delegate(learning.learn)
    feedback = delegate(lc_feedback.feedback)
    fold = delegate(lc_feedback.fold)  # usage and feedback journals into frontmatter
    supersede = delegate(succession.supersede)
    lineage = delegate(lc_lineage.lineage)
    archive = delegate(forgetting.archive)
    forget = delegate(forgetting.forget)
    restore = delegate(forgetting.restore)
    purge = delegate(forgetting.purge)
    verify_entry = delegate(freshness.verify_entry)
    upgrade_verification = delegate(freshness.upgrade_verification)
    refute = delegate(freshness.refute)
    stale_report = delegate(freshness.stale_report)
    contradiction_resolve = delegate(resolve.contradiction_resolve)
    maintain = delegate(maintenance.maintain)
    proposals = delegate(lc_proposals.list_proposals)
    proposal = delegate(lc_proposals.get_proposal)
    accept = delegate(review.accept)
    dismiss = delegate(review.dismiss)
    create_skill = delegate(lc_skills.create_skill)
    skills = delegate(lc_skills.skills)
    find_skill = delegate(lc_skills.find_skill)
    invoke_skill = delegate(lc_skills.invoke_skill)

    # trust — engram.items.quarantine, engram.items.reading (the audit log)
    quarantined = delegate(quarantine.listing)
    release = delegate(quarantine.release)
    audit = delegate(reading.audit_entries)

    # scopes and capture — engram.scopes.promotion / .distill / .capture / .status
    endorse = delegate(promotion.endorse)
    promote = delegate(promotion.promote)
    standing = delegate(promotion.standing)
    review_promotions = delegate(promotion.review_promotions)
    generalize = delegate(promotion.generalize)
    sync_scopes = delegate(promotion.sync_scopes)
    distill = delegate(distill.distill)
    record_need = delegate(capture.record_need)
    observe = delegate(capture.observe)  # files a capture proposal, never an item
    screen_observation = delegate(capture.screen)
    scopes_status = delegate(status.scopes_status)
    configure_scopes = delegate(status.configure)

    # sharing — engram.team.sync / .setup / .conflicts / .history
    timeline = delegate(team_history.history)  # audit entries and the file's git log
    sync = delegate(team_sync)
    add_remote = delegate(setup.add_remote)
    conflicts = delegate(merge_conflicts.flagged)
    resolve_conflict = delegate(merge_conflicts.resolve)
    merge_stats = delegate(mergelog.merge_stats)
    merge_anomalies = delegate(mergelog.merge_anomalies)

    # an existing folder of notes, adopted in place — engram.adopt.adopting
    adopt = delegate(adopting.adopt)
    adoption = delegate(adopting.summary)

    # health and repairs — engram.doctor, engram.items.repair
    doctor = delegate(diagnose)
    rewrite_derived = delegate(repair.rewrite_derived)
    rewrite_item = delegate(repair.rewrite_item)
    relocate = delegate(repair.relocate)
    reassign_id = delegate(repair.reassign_id)
    discard_file = delegate(repair.discard_file)
