"""Texts the secret scan found clean, remembered between runs of ``engram doctor``.

doctor scans every shared item for credentials (:func:`engram.trust.secrets.scan_fields`)
on every run; on a vault of 6,571 notes that was half of its time, for the verdicts the
last run gave. A verdict depends on the text, the scan's options and the scanner alone,
so a *clean* one is kept by a hash of the three in ``.engram/clean-scans``:

- machine-local and derived: deleting the file costs one full scan, nothing else;
- only clean verdicts are kept, so a finding is scanned again and reported every run;
- the scanner is named by the bytes of its modules (:mod:`engram.trust.secrets`,
  :mod:`engram.trust.detectors`) and detect-secrets' version, so any change to a rule,
  by an upgrade or an edit, makes every entry unknown;
- the file holds what the last run saw and no more: it never outgrows the vault.

Format: the 32-byte salt (scanner and options), then 16-byte digests, sorted. A file
that does not start with this run's salt is ignored; one that cannot be written is
skipped (the next run scans again), and a vault without ``.engram/`` (read-only, its
index kept elsewhere) gets none.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from pathlib import Path

from engram.errors import StorageError
from engram.store.fsio import atomic_write
from engram.trust import detectors, secrets
from engram.trust.secrets import ScanOptions

FILE = "clean-scans"
_DIGEST = 16


def _salt(options: ScanOptions) -> bytes:
    h = hashlib.sha256()
    for module in (secrets, detectors):
        h.update(Path(str(module.__file__)).read_bytes())
    from detect_secrets.__version__ import VERSION  # the scan has imported the package

    h.update(VERSION.encode())
    # Sorted: a frozenset's order changes with each process's hash seed.
    h.update(repr((sorted(options.kinds), options.phone_region, [p.pattern for p in options.allow])).encode())
    return h.digest()


class CleanScans:
    """The clean verdicts of the last run, and this run's, for one set of options."""

    def __init__(self, state_dir: Path, options: ScanOptions) -> None:
        self._path = state_dir / FILE
        self._salt = _salt(options)
        self._known: set[bytes] = set()
        self._now: set[bytes] = set()
        try:
            data = self._path.read_bytes()
        except OSError:
            return
        if data[: len(self._salt)] == self._salt:
            body = data[len(self._salt):]
            self._known = {body[i : i + _DIGEST] for i in range(0, len(body) - _DIGEST + 1, _DIGEST)}

    def key(self, fields: Mapping[str, str]) -> bytes:
        """The digest of one item's named texts (names and order included)."""
        h = hashlib.sha256(self._salt)
        for name, text in fields.items():
            h.update(name.encode() + b"\0" + text.encode("utf-8", "surrogatepass") + b"\0")
        return h.digest()[:_DIGEST]

    def clean(self, key: bytes) -> bool:
        """Whether the last run found these texts clean (they are kept for the next)."""
        if key in self._known:
            self._now.add(key)
            return True
        return False

    def found_clean(self, key: bytes) -> None:
        self._now.add(key)

    def save(self) -> None:
        if not self._path.parent.is_dir():
            return  # a read-only vault has no .engram/ (its index lives elsewhere): nothing is written
        with contextlib.suppress(OSError, StorageError):  # a cache: the next run scans again
            atomic_write(self._path, self._salt + b"".join(sorted(self._now)))
