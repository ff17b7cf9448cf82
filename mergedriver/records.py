"""Merge records: one JSON line per structured merge in ``<vault>/.engram/merges.jsonl``.

Both the git driver and ``engram sync`` append here; ``engram merge stats`` and ``engram
merge anomalies`` (``engram.mergelog``) read it. A line is ``{"at", "via", "path", "kind",
"ok", "clean", "strategies", "conflicts", "reason"}`` (see
:meth:`mergedriver.merge.MergeResult.record`).

Invariants: a record is one ``write`` on an ``O_APPEND`` descriptor, so records from
concurrent merges never interleave; and logging is best effort — a merge never fails
because its record could not be written (a read-only folder, a full disk).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mergedriver.codec import format_time

__all__ = ["LOG_NAME", "append_records", "find_state_dir"]

LOG_NAME = "merges.jsonl"
_STATE = ".engram"
_MARKERS = (_STATE, "engram.yaml")
_IGNORE_ALL = b"# engram: never committed (see docs/format.md)\n*\n"


def find_state_dir(workdir: Path, relpath: str) -> Path | None:
    """The ``.engram`` folder of the vault that holds ``relpath`` (relative to ``workdir``).

    git runs a driver at the top of the work tree; the vault is that folder or the
    nearest folder above the file that has ``.engram/`` or ``engram.yaml``.
    """
    parts = [p for p in relpath.replace("\\", "/").split("/")[:-1] if p not in ("", ".", "..")]
    for depth in range(len(parts), -1, -1):
        folder = workdir.joinpath(*parts[:depth])
        if any((folder / marker).exists() for marker in _MARKERS):
            return folder / _STATE
    return None


def append_records(state_dir: Path | None, records: Iterable[Mapping[str, Any]], via: str) -> bool:
    """Append records (stamped with the time and ``via``); False if they were not written."""
    if state_dir is None:
        return False
    at = format_time(datetime.now(UTC))
    lines = "".join(
        json.dumps({"at": at, "via": via, **record}, ensure_ascii=False, separators=(",", ":")) + "\n"
        for record in records
    )
    if not lines:
        return True
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        _ignore_itself(state_dir)
        fd = os.open(state_dir / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, lines.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _ignore_itself(state_dir: Path) -> None:
    """The marker :func:`engram.store.fsio.ensure_ignored` writes (the same bytes): a
    merge in a clone no engram command ran in yet must not leave a folder git offers
    to commit."""
    marker = state_dir / ".gitignore"
    if not marker.exists():
        marker.write_bytes(_IGNORE_ALL)
