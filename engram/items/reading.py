"""Reading items: one by reference, many by filter, their history, the audit log, the domain tree.

Every read first brings the index up to date (:meth:`VaultState.ensure_fresh`), so a
file changed by another process or a person before the call is seen; listings and the
domain tree come from the index alone, never from Markdown. Files that do not parse
are skipped by listings and reported by :func:`broken_files`, never fatal.

:func:`browse` is the paged, sortable listing a table shows (one page of items and the
total that match, both from the index); :func:`activity` pages through the audit log
newest first; :func:`census` counts what the vault holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from engram.errors import InvalidInput, NotFound
from engram.index.overview import Counts, DomainNode, counts, tree
from engram.items.state import VaultState
from engram.store import rules
from engram.store.audit import AuditEntry
from engram.store.model import Engram
from engram.store.rules import Filters
from engram.store.settings import SETTINGS_FILE
from mergedriver import codec

#: Sort keys of :func:`browse` and the index column each orders by.
SORTS = {
    "updated": "updated_at",
    "created": "created_at",
    "title": "title_key",
    "kind": "kind",
    "domain": "domain",
    "status": "status",
    "importance": "importance",
    "confidence": "confidence",
    "retrievals": "retrieval_count",
    "version": "version",
}
MAX_PAGE = 500


@dataclass(frozen=True, slots=True)
class ItemPage:
    """One page of a listing: the items, how many match in all, and where the page starts."""

    items: tuple[Engram, ...]
    total: int
    offset: int
    limit: int


def get(state: VaultState, ref: str) -> Engram:
    """The item named by id, id prefix (6+ chars), path or exact title.

    Raises NotFound, InvalidInput (ambiguous), FormatError (the file is broken).
    """
    state.ensure_fresh()
    rel = state.resolve(ref)
    try:
        return state.read(rel)[0]
    except FileNotFoundError:  # moved or deleted since the index saw it
        state.refresh()
        return state.read(state.resolve(ref))[0]


def list_items(
    state: VaultState,
    *,
    domain: str | Sequence[str] | None = None,
    kinds: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    statuses: Iterable[str] | None = None,
    visibility: Iterable[str] | None = None,
    min_importance: float | None = None,
    include_hidden: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[Engram]:
    """Items matching every given filter, most recently updated first.

    ``domain`` is a path prefix (``engineering`` matches ``engineering/python``).
    Frozen, forgotten and quarantined items are left out unless ``statuses`` names them
    or ``include_hidden`` is set. Files that fail to parse are skipped (see
    :func:`broken_files`), never fatal.
    """
    state.ensure_fresh()
    where, params = Filters.of(
        domain=domain,
        kinds=kinds,
        tags=tags,
        statuses=statuses,
        visibility=visibility,
        min_importance=min_importance,
        include_hidden=include_hidden,
    ).sql()
    tail = "ORDER BY updated_at DESC, path"
    if limit is not None:
        tail += f" LIMIT {int(limit)} OFFSET {int(offset)}"
    return state.index.items(where, params, tail)


def titles(state: VaultState, ids: Iterable[str]) -> dict[str, str]:
    """``{id: title}`` for the ids the index knows (unknown ids are left out)."""
    state.ensure_fresh()
    wanted = sorted(set(ids))
    found: dict[str, str] = {}
    for start in range(0, len(wanted), 500):  # stay under SQLite's parameter limit
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update((row.id, row.title) for row in state.index.item_rows(f"id IN ({marks})", chunk))
    return found


def broken_files(state: VaultState) -> list[tuple[str, str]]:
    """(path, problem) for every item or synapse file that does not parse, and
    ``engram.yaml`` first when it cannot be taken."""
    state.ensure_fresh()
    settings = [] if state.settings.problem is None else [(SETTINGS_FILE, state.settings.problem)]
    return settings + [(b.path, b.error) for b in state.index.bad_files()]


def history(state: VaultState, ref: str) -> list[AuditEntry]:
    """Audit entries about one item, oldest first."""
    item = get(state, ref)
    return list(state.audit.entries(item.id))


_SINCE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def audit_entries(
    state: VaultState,
    *,
    actor: str | None = None,
    item: str | None = None,
    since: str | None = None,
    refused: bool = False,
    limit: int | None = None,
) -> list[AuditEntry]:
    """The audit log, filtered: by ``actor``, by ``item`` (an id, or any ref of an item
    that still exists), entries at or after ``since`` (ISO 8601, or an age such as
    ``7d``, ``24h``, ``30m``), only refused writes; the newest ``limit``, oldest first.
    Raises InvalidInput for a ``since`` it cannot read."""
    item_id = None
    if item is not None:
        try:
            item_id = state.resolve_id(item)
        except NotFound:
            item_id = item  # a deleted item, or a write that was refused before it existed
    at = None
    if since is not None:
        age = _SINCE.match(since.strip())
        if age:
            seconds = int(age.group(1)) * _UNIT_SECONDS[age.group(2)]
            at = codec.format_time(datetime.now(UTC) - timedelta(seconds=seconds))
        else:
            at = rules.timestamp("since", since)
    return state.audit.query(actor=actor, item_id=item_id, since=at, refused=refused, limit=limit)


def paths(
    state: VaultState,
    *,
    domain: str | Sequence[str] | None = None,
    depth: int | None = None,
    include_hidden: bool = False,
) -> DomainNode:
    """The domain tree under ``domain`` (default: the whole vault) with each folder's
    own and cumulative item counts, to ``depth`` levels (see :mod:`engram.index.overview`)."""
    state.ensure_fresh()
    return tree(state.index, domain=domain, depth=depth, include_hidden=include_hidden)


def browse(
    state: VaultState,
    *,
    domain: str | Sequence[str] | None = None,
    kinds: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    statuses: Iterable[str] | None = None,
    visibility: Iterable[str] | None = None,
    min_importance: float | None = None,
    include_hidden: bool = False,
    title: str | None = None,
    sort: str = "updated",
    descending: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> ItemPage:
    """One page of the items matching every filter (those of :func:`list_items`, plus
    ``title``: a case-insensitive substring of the title), ordered by ``sort`` (a key of
    :data:`SORTS`), ties broken by path; with the number that match in all.

    Raises InvalidInput for an unknown sort key, a limit outside 1..500 or a negative
    offset, and for the filters :func:`list_items` refuses.
    """
    if sort not in SORTS:
        raise InvalidInput(f"cannot sort by {sort!r}.", field="sort", hint=f"Use one of: {', '.join(SORTS)}.")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be 1 to {MAX_PAGE}, not {limit!r}.", field="limit", hint="e.g. 50")
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInput(f"offset must be 0 or more, not {offset!r}.", field="offset", hint="e.g. 0")
    state.ensure_fresh()
    where, params = Filters.of(
        domain=domain, kinds=kinds, tags=tags, statuses=statuses, visibility=visibility,
        min_importance=min_importance, include_hidden=include_hidden,
    ).sql()
    if title and title.strip():
        needle = title.strip().casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where += " AND title_key LIKE ? ESCAPE '\\'"
        params.append(f"%{needle}%")
    total = int(state.index.query(f"SELECT count(*) AS n FROM items WHERE {where}", params)[0]["n"])
    order = f"ORDER BY {SORTS[sort]} {'DESC' if descending else 'ASC'}, path"
    # Sort row ids alone, then read the page's rows: sorting whole rows (body and
    # frontmatter JSON) to skip thousands of them costs ten times more at 10k items.
    page = f"rowid IN (SELECT rowid FROM items WHERE {where} {order} LIMIT {limit} OFFSET {offset})"
    return ItemPage(tuple(state.index.items(page, params, order)), total, offset, limit)


def census(state: VaultState) -> Counts:
    """Items by kind, status, visibility and top-level domain; synapses by kind; the
    number of files that do not parse (see :func:`engram.index.overview.counts`)."""
    state.ensure_fresh()
    return counts(state.index)


def derived_section(state: VaultState, ref: str) -> str:
    """The item's ``## Synapses (derived)`` lines as its file holds them (``""`` when it
    has no edges). Raises NotFound, InvalidInput (ambiguous)."""
    state.ensure_fresh()
    rows = state.index.item_rows("path = ?", (state.resolve(ref),))
    return rows[0].derived if rows else ""


def activity(
    state: VaultState,
    *,
    limit: int = 50,
    offset: int = 0,
    actor: str | None = None,
    action: str | None = None,
    item: str | None = None,
) -> list[AuditEntry]:
    """Audit entries newest first, optionally only one actor's, one action's or about one
    id (an item's or a synapse's, exactly as logged). Raises InvalidInput for a limit
    outside 1..500 or a negative offset."""
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be 1 to {MAX_PAGE}, not {limit!r}.", field="limit", hint="e.g. 50")
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInput(f"offset must be 0 or more, not {offset!r}.", field="offset", hint="e.g. 0")

    def keep(entry: AuditEntry) -> bool:
        return (
            (actor is None or entry.actor == actor)
            and (action is None or entry.action == action)
            and (item is None or entry.id == item)
        )

    return state.audit.latest(limit, offset=offset, keep=keep)
