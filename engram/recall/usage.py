"""Usage without churn: searches journal retrievals; a flush folds them into frontmatter.

Co-Engram rewrote an item's file every time a search returned it, so reading the memory
dirtied the git tree and raced concurrent writers. Here a search appends one JSON line
to ``.engram/usage.jsonl`` (machine-local, never committed)::

    {"at": "2026-06-21T10:30:00.000Z", "by": "alice-agent", "hits": [["01J…", 0.8312], ["01K…", 0.41]]}

and never touches Markdown. :func:`flush` (``engram flush``, and ``engram sync`` before it
commits) folds the journal into the items in one batch: ``retrievalCount`` grows by the
number of retrievals and ``lastRetrievedAt`` moves to the latest one, written through the
vault's canonical writer under the vault lock, without a version bump (counters are not
content; the merge driver adds them up across machines) — or, for a person's note
(:func:`engram.store.notes.persons_note`), beside it (:mod:`engram.items.sidecar`). The same flush adds the actor
to ``recalledBy`` and the UTC date to ``recallDays`` — the evidence that earns an item
promotion to a wider scope (:mod:`engram.scopes.promotion`); both are sets the merge
unions, and each stops growing at :data:`MAX_MARKS` entries (enough for any threshold).

Invariants:

- Appends are one ``write`` on an ``O_APPEND`` descriptor under a shared ``flock`` on
  ``usage.lock``; flush takes the lock exclusively just long enough to rename the journal
  aside, so no retrieval lands in a file that is being folded (and none is lost).
- A flush that dies half-way resumes: ids already applied are listed in
  ``usage.flushing.done`` and skipped on the next run, so nothing is counted twice.
- :class:`UsageJournal` tails the journal (reading only bytes appended since it last
  looked), so ranking sees unflushed retrievals — its own and other processes' — at the
  cost of one ``stat`` per search.
- A journal past 4 MB (a long-lived server nobody flushes) is compacted in place to one
  line per item, atomically and under the exclusive lock; totals do not change.

Losing the journal loses only retrievals not yet flushed. On a read-only vault nothing is
journaled.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engram.errors import FormatError, StorageError
from engram.items import sidecar
from engram.items.repair import rewrite_item
from engram.items.state import VaultState
from engram.store.fsio import append_line, atomic_write
from engram.store.model import instant, now

JOURNAL = "usage.jsonl"
FLUSHING = "usage.flushing.jsonl"
DONE = "usage.flushing.done"
LOCK = "usage.lock"
#: A journal larger than this is compacted to one line per item on the next append.
COMPACT_BYTES = 4 * 2**20
#: recalledBy / recallDays stop growing at this many entries: promotion needs a few.
MAX_MARKS = 32

try:
    import fcntl

    def _flock(fd: int, exclusive: bool) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

except ImportError:  # pragma: no cover - Windows: appends are still atomic per line

    def _flock(fd: int, exclusive: bool) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Usage:
    """Retrievals of one item not yet folded into its frontmatter."""

    count: int
    last_at: str
    last_score: float
    agents: frozenset[str] = frozenset()
    days: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class FlushStats:
    items: int = 0
    retrievals: int = 0
    missing: int = 0  # ids in the journal that no longer name an item


def _fold(agg: dict[str, Usage], line: str) -> None:
    try:
        entry = json.loads(line)
        at = str(entry["at"])
        hits = entry["hits"]
        by = entry.get("by")
    except (ValueError, KeyError, TypeError, AttributeError):
        return  # a torn or foreign line: skip it rather than fail a search
    line_agents = frozenset([by] if isinstance(by, str) and by else [])
    line_days = frozenset([at[:10]]) if len(at) >= 10 else frozenset()
    for hit in hits:
        try:
            item_id, score = str(hit[0]), float(hit[1])
            n = int(hit[2]) if len(hit) > 2 else 1  # a compacted line carries a count
            last = str(hit[3]) if len(hit) > 3 else at
            # ... and the agents and days it folded
            agents = frozenset(map(str, hit[4])) if len(hit) > 4 else line_agents
            days = frozenset(map(str, hit[5])) if len(hit) > 5 else line_days
        except (IndexError, TypeError, ValueError):
            continue
        old = agg.get(item_id)
        if old is None:
            agg[item_id] = Usage(n, last, score, agents, days)
        elif last >= old.last_at:
            agg[item_id] = Usage(old.count + n, last, score, old.agents | agents, old.days | days)
        else:
            agg[item_id] = Usage(old.count + n, old.last_at, old.last_score, old.agents | agents, old.days | days)


def _can_write(folder: Path) -> bool:
    return os.access(folder if folder.exists() else folder.parent, os.W_OK)


class UsageJournal:
    """The journal under one ``.engram/`` folder: append, tail, and lock for a flush."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / JOURNAL
        self._mutex = threading.Lock()
        self._ino: int | None = None
        self._offset = 0
        self._agg: dict[str, Usage] = {}

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.state_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(
                f"cannot open {self.state_dir / LOCK}: {exc.strerror}.",
                hint="The vault's .engram/ folder must be writable.",
            ) from exc
        try:
            _flock(fd, exclusive)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def record(self, hits: Sequence[tuple[str, float]], at: str | None = None, by: str | None = None) -> None:
        """Journal one search's hits (id, score), made by actor ``by``. On a read-only
        vault nothing is journaled: the search still answers, and its usage is not kept."""
        if not hits or not _can_write(self.state_dir):
            return
        entry: dict[str, object] = {"at": at or now()}
        if by:
            entry["by"] = by
        entry["hits"] = [[i, round(s, 4)] for i, s in hits]
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        with self._locked(exclusive=False):
            append_line(self.path, line)
            try:
                big = self.path.stat().st_size > COMPACT_BYTES
            except OSError:
                big = False
        if big:
            self.compact()

    def compact(self) -> None:
        """Rewrite the journal as one line per item (count, last time, last score), so a
        long-lived process that is never flushed keeps a small journal. Atomic: readers
        see the old file or the new one, and the totals are the same."""
        with self._locked(exclusive=True):
            agg: dict[str, Usage] = {}
            try:
                text = self.path.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                return
            for line in text.splitlines():
                _fold(agg, line)
            lines = [
                json.dumps(
                    {"at": u.last_at,
                     "hits": [[i, u.last_score, u.count, u.last_at, sorted(u.agents), sorted(u.days)]]},
                    ensure_ascii=False, separators=(",", ":"),
                )
                for i, u in sorted(agg.items())
            ]
            atomic_write(self.path, ("\n".join(lines) + "\n").encode("utf-8") if lines else b"")

    def pending(self) -> Mapping[str, Usage]:
        """Unflushed retrievals by item id (reads only what was appended since last time)."""
        with self._mutex:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                self._ino, self._offset, self._agg = None, 0, {}
                return self._agg
            if st.st_ino != self._ino or st.st_size < self._offset:
                self._ino, self._offset, self._agg = st.st_ino, 0, {}
            if st.st_size > self._offset:
                try:
                    with open(self.path, "rb") as fh:
                        fh.seek(self._offset)
                        data = fh.read(st.st_size - self._offset)
                except OSError:
                    return self._agg
                end = data.rfind(b"\n") + 1  # a line still being written waits
                for line in data[:end].decode("utf-8", "replace").splitlines():
                    _fold(self._agg, line)
                self._offset += end
            return self._agg

    def take(self) -> dict[str, Usage]:
        """Move the journal aside for a flush and return everything to fold (including a
        previous flush's leftovers)."""
        flushing = self.state_dir / FLUSHING
        with self._locked(exclusive=True):
            if self.path.exists():
                if flushing.exists():  # an interrupted flush: keep both, fold both
                    with open(self.path, "rb") as src:
                        data = src.read()
                    with open(flushing, "ab") as dst:
                        dst.write(data)
                    self.path.unlink()
                else:
                    os.replace(self.path, flushing)
        agg: dict[str, Usage] = {}
        with contextlib.suppress(FileNotFoundError):
            for line in flushing.read_text(encoding="utf-8", errors="replace").splitlines():
                _fold(agg, line)
        return agg

    def done_ids(self) -> set[str]:
        with contextlib.suppress(FileNotFoundError):
            return set((self.state_dir / DONE).read_text(encoding="utf-8").split())
        return set()

    def mark_done(self, item_id: str) -> None:
        append_line(self.state_dir / DONE, item_id)

    def finish(self) -> None:
        for name in (FLUSHING, DONE):
            with contextlib.suppress(FileNotFoundError):
                (self.state_dir / name).unlink()


def flush(state: VaultState) -> FlushStats:
    """Fold the usage journal into frontmatter (see the module docstring)."""
    journal = journal_for(state)
    items = retrievals = missing = 0
    with state.lock.hold():
        state.refresh()
        pending = journal.take()
        done = journal.done_ids()
        for item_id, usage in sorted(pending.items()):
            if item_id in done:
                continue
            rows = state.index.item_rows("id = ?", (item_id,))
            if not rows:
                missing += 1
                journal.mark_done(item_id)
                continue
            if any(row.by_person for row in rows):
                # A person's note is never rewritten for being recalled: its retrievals are
                # kept beside it.
                sidecar.add(state.state_dir, item_id, sidecar.Kept(retrievals=usage.count, last_retrieved=usage.last_at))
                rows = []
            for row in rows:
                try:
                    item, _ = state.read(row.path)
                except (FileNotFoundError, FormatError):
                    continue
                last = item.last_retrieved_at
                if last is None or instant(usage.last_at) > instant(last):
                    last = usage.last_at
                rewrite_item(
                    state,
                    row.path,
                    record=False,
                    retrieval_count=item.retrieval_count + usage.count,
                    last_retrieved_at=last,
                    recalled_by=_marks(item.recalled_by, usage.agents),
                    recall_days=_marks(item.recall_days, usage.days),
                )
            journal.mark_done(item_id)
            items += 1
            retrievals += usage.count
        journal.finish()
    return FlushStats(items, retrievals, missing)


def _marks(current: tuple[str, ...] | None, new: frozenset[str]) -> tuple[str, ...] | None:
    """``current`` plus the new marks in sorted order, up to :data:`MAX_MARKS` entries."""
    out = list(current or ())
    for mark in sorted(new - set(out)):
        if len(out) >= MAX_MARKS:
            break
        out.append(mark)
    return tuple(out) if out else current


_journals: dict[Path, UsageJournal] = {}
_journals_lock = threading.Lock()


def journal_for(state: VaultState) -> UsageJournal:
    """The one journal object per ``.engram/`` folder in this process (so tailing state
    is shared by every Vault opened on it)."""
    with _journals_lock:
        journal = _journals.get(state.state_dir)
        if journal is None:
            journal = _journals[state.state_dir] = UsageJournal(state.state_dir)
        return journal


__all__ = ["FlushStats", "Usage", "UsageJournal", "flush", "journal_for"]
