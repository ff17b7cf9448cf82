"""Reading items: one by reference, many by filter, their history, the domain tree.

Every read first brings the index up to date (:meth:`VaultState.ensure_fresh`), so a
file changed by another process or a person before the call is seen; listings and the
domain tree come from the index alone, never from Markdown. Files that do not parse
are skipped by listings and reported by :func:`broken_files`, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engram.index.overview import DomainNode, tree
from engram.items.state import VaultState
from engram.store.audit import AuditEntry
from engram.store.model import Engram
from engram.store.rules import Filters


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
    """(path, problem) for every item or synapse file that does not parse."""
    state.ensure_fresh()
    return [(b.path, b.error) for b in state.index.bad_files()]


def history(state: VaultState, ref: str) -> list[AuditEntry]:
    """Audit entries about one item, oldest first."""
    item = get(state, ref)
    return list(state.audit.entries(item.id))


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
