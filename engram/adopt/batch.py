"""Writing what an importer read: a :class:`Batch` of records in, an :class:`ImportReport` out.

Every importer turns its source into the same shape — :class:`SourceRecord` values (the
arguments of :func:`engram.items.writing.create`, a stable key within the source, and
links to other records) plus, for engram-format sources, synapses carried as they are —
and :func:`run` writes it:

1. Each record is checked as ``create`` will check it; a bad record is counted, reported
   with where it came from, and skipped — never the whole batch. A record that holds
   personal data (an email, a home-folder path — often a placeholder like
   ``/Users/yourusername/…``) bound for a shared file, which the vault's ``trust``
   settings refuse, is ``HELD``: reported with what was found where, and brought in by a
   person's choice for the run (``personal_data``: ``private``, ``redact`` or ``keep`` —
   :func:`engram.items.writing.create`), never dropped in silence. Secrets are never
   held for a choice: such a record is bad.
2. A record this source already gave the vault (the same importer, source and key in
   an item's ``source``) is ``SKIPPED``: nothing is written, nothing reinforced, even if
   the item was edited since. Otherwise ``create`` runs with ``reinforce=False`` (an
   identical item already in the vault is reported ``DUPLICATE`` and left as it is) and
   with the lines the batch's records share as boilerplate (template pages are told
   apart by what was filled in). So a second run writes nothing. Two files of one
   folder that repeat each other both come in (each is a note people link to by its
   path); the repeat is reported. Records without paths (JSON, a memory graph) that
   repeat each other come in once.
3. Links are resolved against the batch (by key), then the vault (by id or exact title),
   and written through :func:`engram.items.links.link`; an unresolvable one is reported.

``dry_run`` validates and classifies every record against the vault as it is and
writes nothing. The vault lock is held per chunk of records, not for the whole import,
so other writers get their turn. ``progress`` is called once per record.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from engram.errors import EngramError, Forbidden, InvalidInput, NotFound, SensitiveData
from engram.items import links as item_links
from engram.items import writing
from engram.items.state import VaultState
from engram.store.dedup import LineCounts
from engram.store.model import SYNAPSE_KINDS, Synapse
from engram.trust import roles
from engram.trust.policy import PERSONAL_CHOICES

Outcome = Literal["NEW", "DUPLICATE", "UPDATE", "SKIPPED", "HELD", "BAD"]
OUTCOMES: tuple[Outcome, ...] = ("NEW", "DUPLICATE", "UPDATE", "SKIPPED", "HELD", "BAD")
_CHUNK = 200


@dataclass(frozen=True, slots=True)
class Link:
    """An edge from a record to ``target``: another record's key, or an item's id or title."""

    kind: str
    target: str
    evidence: str | None = None
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One piece of knowledge as an importer read it.

    ``fields`` are keyword arguments of :func:`engram.items.writing.create` (``title``,
    ``content``, ``domain``, …, ``path``, ``preserve``); ``key`` identifies the record
    within its source (a path, an entity name, an id); ``where`` says where it is, for
    messages. A record the importer could not read carries ``problem`` instead. A record
    read from a file of its own (a note) says in ``body_line`` how many of the file's
    lines come before its ``content`` (its frontmatter), so a finding in the content is
    named by the file's line, the one a person opens; None for records that are not a
    file (a JSON record, an entity).
    """

    key: str
    where: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    links: tuple[Link, ...] = ()
    problem: str | None = None
    body_line: int | None = None


@dataclass(frozen=True, slots=True)
class Batch:
    """What one source holds: records, edges carried as they are, and what was passed over."""

    importer: str
    origin: str
    records: tuple[SourceRecord, ...]
    synapses: tuple[Synapse, ...] = ()
    passed_over: tuple[str, ...] = ()  # files that are not notes (attachments, settings)
    unit: str = "record"


@dataclass(frozen=True, slots=True)
class RecordResult:
    key: str
    where: str
    outcome: Outcome
    id: str | None = None
    path: str | None = None
    similarity: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ImportReport:
    importer: str
    origin: str
    dry_run: bool
    results: tuple[RecordResult, ...]
    links: int = 0
    unresolved: tuple[str, ...] = ()
    passed_over: int = 0
    unit: str = "record"

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(r.outcome for r in self.results)
        return {outcome: counted.get(outcome, 0) for outcome in OUTCOMES}

    @property
    def written(self) -> int:
        """Items and edges this run wrote (0 on a second run of the same import)."""
        return 0 if self.dry_run else self.counts["NEW"] + self.links

    def summary(self) -> str:
        """One line for a person: what came in and what happened to it."""
        c = self.counts
        n = len(self.results)
        verb = "would be" if self.dry_run else "were"
        repeats = sum(1 for r in self.results if r.outcome == "NEW" and r.message)
        parts = [
            f"{c['NEW']:,} new" + (f" ({repeats:,} repeating another note of the source)" if repeats else ""),
            f"{c['SKIPPED']:,} already imported",
            f"{c['DUPLICATE']:,} duplicate(s) of items the vault holds",
            f"{c['UPDATE']:,} near-duplicate(s) not written",
            *((f"{c['HELD']:,} held back for personal data (not written)",) if c["HELD"] else ()),
            f"{c['BAD']:,} bad (skipped)",
        ]
        line = f"{n:,} {self.unit}(s) from {self.origin}: " + ", ".join(parts)
        line += f"; {self.links:,} link(s) {verb} written"
        if self.unresolved:
            line += f", {len(self.unresolved):,} could not be resolved"
        if self.passed_over:
            line += f"; {self.passed_over:,} other file(s) passed over"
        return line + (" (dry run: nothing was written)" if self.dry_run else "")


def provenance(batch: Batch, record: SourceRecord) -> dict[str, Any]:
    """The ``source`` value an imported item carries: importer, origin and key."""
    return {"importer": batch.importer, "from": batch.origin, "key": record.key}


def _identity(source: Any) -> tuple[str, str, str] | None:
    if isinstance(source, Mapping) and {"importer", "from", "key"} <= source.keys():
        return str(source["importer"]), str(source["from"]), str(source["key"])
    return None


def imported_keys(state: VaultState, importer: str) -> dict[tuple[str, str, str], str]:
    """``(importer, origin, key) → item id`` for every item this importer brought in."""
    state.ensure_fresh()
    rows = state.index.query(
        "SELECT id, json_extract(meta, '$.source') AS source FROM items"
        " WHERE json_extract(meta, '$.source.importer') = ?",
        (importer,),
    )
    found: dict[tuple[str, str, str], str] = {}
    for row in rows:
        ident = _identity(json.loads(row["source"]) if row["source"] else None)
        if ident is not None:
            found[ident] = row["id"]
    return found


def run(
    state: VaultState,
    batch: Batch,
    *,
    dedupe: bool = True,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
    personal_data: str | None = None,
) -> ImportReport:
    """Write ``batch`` into the vault (see the module docstring); return what happened.
    ``personal_data`` (``private``, ``redact``, ``keep``) is what becomes of records that
    hold personal data (default: the vault's ``trust`` settings; refused ones are HELD).
    Raises Forbidden for a reader, dry run or not: a dry run answers whether the import
    would go through; InvalidInput for another ``personal_data``."""
    if personal_data is not None and personal_data not in PERSONAL_CHOICES:
        raise InvalidInput(
            f"personal data can be imported private, redacted or kept, not {personal_data!r}.",
            field="personal_data", hint=f"Use one of: {', '.join(PERSONAL_CHOICES)}.",
        )
    with state.refusals_audited("import", batch.origin):
        roles.require_writer(state.actor, state.role, "import notes")
    seen = imported_keys(state, batch.importer)
    shared = LineCounts(
        str(r.fields.get("content", "")) for r in batch.records if r.problem is None
    ).common() if dedupe else frozenset()
    results: list[RecordResult] = []
    ids: dict[str, str] = {}
    written: set[str] = set()  # ids this run created
    for start in range(0, len(batch.records), _CHUNK):
        with state.lock.hold():
            for record in batch.records[start : start + _CHUNK]:
                result = _one(state, batch, record, seen, shared, written, dedupe=dedupe, dry_run=dry_run,
                              personal_data=personal_data)
                results.append(result)
                if result.id is not None:
                    ids.setdefault(record.key, result.id)
                if progress is not None:
                    progress(1)
    made, unresolved = (0, []) if dry_run else _link(state, batch, ids)
    if not dry_run:
        made += _carry_synapses(state, batch, unresolved)
    return ImportReport(
        batch.importer, batch.origin, dry_run, tuple(results), made, tuple(unresolved),
        len(batch.passed_over), batch.unit,
    )


def _one(
    state: VaultState,
    batch: Batch,
    record: SourceRecord,
    seen: Mapping[tuple[str, str, str], str],
    shared: frozenset[int],
    written: set[str],
    *,
    dedupe: bool,
    dry_run: bool,
    personal_data: str | None,
) -> RecordResult:
    if record.problem is not None:
        return RecordResult(record.key, record.where, "BAD", message=record.problem)
    source = provenance(batch, record)
    done = seen.get((batch.importer, batch.origin, record.key))
    kept_id = (record.fields.get("preserve") or {}).get("id")
    if done is None and isinstance(kept_id, str) and state.index.item_rows("id = ?", (kept_id,)):
        done = kept_id  # an item carried with its id (an export, a Co-Engram file) is here
    if done is not None:
        return RecordResult(record.key, record.where, "SKIPPED", id=done, message="already imported")
    kwargs = dict(record.fields)
    kwargs.setdefault("source", source)
    try:
        if dry_run:
            if "path" in kwargs:
                writing.check_path(kwargs["path"])
            fields = {k: v for k, v in kwargs.items() if k not in ("path", "title", "content")}
            item = writing.build(state, kwargs.get("title", ""), kwargs.get("content", ""), **fields)
            item = writing.admit_new(state, item, personal_data).item  # a secret refuses the record here too
            found = writing.classify(state, item, shared) if dedupe else None
            if found is None:
                return RecordResult(record.key, record.where, "NEW")
            return RecordResult(record.key, record.where, cast(Outcome, found.outcome), found.id, found.item.path, found.similarity)
        made = writing.create(state, dedupe=dedupe, reinforce=False, boilerplate=shared,
                              personal_data=personal_data, **kwargs)
        if made.outcome != "NEW" and "path" in kwargs and made.id in written:
            # Two files of one folder: each is a note people link to by its path, so both
            # come in; the repeat is reported, not dropped.
            repeated = made
            made = writing.create(state, dedupe=False, personal_data=personal_data, **kwargs)
            written.add(made.id)
            return RecordResult(record.key, record.where, "NEW", made.id, made.item.path, repeated.similarity,
                                f"repeats {repeated.item.path} of the same source")
    except SensitiveData as exc:
        message, findings = _in_file(exc, record)
        if any(rule.startswith("secret.") for rule in exc.rule.split(",")):
            return RecordResult(record.key, record.where, "BAD", message=message.rstrip("."))
        return RecordResult(record.key, record.where, "HELD", message="; ".join(findings))
    except EngramError as exc:
        return RecordResult(record.key, record.where, "BAD", message=exc.message.rstrip("."))
    if made.outcome == "NEW":
        written.add(made.id)
    return RecordResult(record.key, record.where, cast(Outcome, made.outcome), made.id, made.item.path, made.similarity)


def _in_file(exc: SensitiveData, record: SourceRecord) -> tuple[str, list[str]]:
    """The refusal's message and findings, each finding in the content named by its line
    in the record's file ("on line 23", not "content line 17") when the record is a file."""
    if record.body_line is None or not exc.detections:
        return exc.message, list(exc.findings)
    message, found = exc.message, []
    for d in exc.detections:
        at = d.describe(record.body_line)
        message = message.replace(d.describe(), at, 1)  # the message lists the same descriptions
        found.append(at)
    return message, found


def _link(state: VaultState, batch: Batch, ids: Mapping[str, str]) -> tuple[int, list[str]]:
    made = 0
    unresolved: list[str] = []
    titles: dict[str, str | None] = {}
    for record in batch.records:
        title = str(record.fields.get("title", "")).casefold()
        if title and record.key in ids:
            titles[title] = ids[record.key] if title not in titles else None  # None: ambiguous
    for record in batch.records:
        source_id = ids.get(record.key)
        if source_id is None:
            continue
        for link in record.links:
            target_id = ids.get(link.target) or titles.get(link.target.casefold()) or _vault_ref(state, link.target)
            if target_id is None or link.kind not in SYNAPSE_KINDS or target_id == source_id:
                unresolved.append(f"{record.where}: {link.kind} → {link.target}")
                continue
            try:
                if item_links.ensure(state, source_id, link.kind, target_id, weight=link.weight, evidence=link.evidence):
                    made += 1
            except (InvalidInput, Forbidden) as exc:  # evidence refused by the trust checks
                unresolved.append(f"{record.where}: {link.kind} → {link.target} refused: {exc.message.rstrip('.')}")
    return made, unresolved


def _vault_ref(state: VaultState, ref: str) -> str | None:
    try:
        return state.resolve_id(ref)
    except EngramError:
        return None


def _carry_synapses(state: VaultState, batch: Batch, unresolved: list[str]) -> int:
    made = 0
    for syn in batch.synapses:
        try:
            if item_links.adopt_synapse(state, syn):
                made += 1
        except NotFound:
            unresolved.append(f"{syn.path}: an end of {syn.source} --{syn.kind}--> {syn.target} is not in the vault")
        except (InvalidInput, Forbidden) as exc:  # evidence refused by the trust checks
            unresolved.append(f"{syn.path}: {syn.source} --{syn.kind}--> {syn.target} refused: {exc.message.rstrip('.')}")
    return made
