"""Trust for files engram did not write itself: edits made outside engram and peers' commits.

:mod:`engram.items.writing` screens every write that goes through engram. Files change
in other ways too — a person edits an item in Obsidian, a script writes a note, a peer's
commit arrives with ``git pull`` or ``engram sync`` — and those must meet the same rules
before they are committed or read. :func:`admit_changes` takes the changed files with
the bytes each had before (from git) and:

- before a commit (``incoming=False``): a secret or personal data that is new in a file
  bound for a shared path is handled as the ``trust`` settings say — the whole commit is
  refused (:class:`~engram.errors.SensitiveData`, every finding listed, nothing changed),
  or the item is made private (moved under ``private/``) or redacted; an item the
  instruction screen flags is quarantined. Files that are not items (notes without engram
  frontmatter, synapse files, settings) can only be refused.
- after a merge or a pull (``incoming=True``): instruction-shaped items that arrived are
  quarantined; secrets that arrived are reported (they are already in the remote's
  history: the fix is to rotate them, which the report says).

Everything is planned before anything is written, so a refusal changes nothing.
Files under ``private/`` are never committed and are left alone; files that are not
UTF-8 text are left to the checks that own them (doctor, sync's own parsing).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from engram.errors import SensitiveData
from engram.store.model import Engram, now
from engram.store.notes import body_offset
from engram.trust import policy
from engram.trust.policy import Admission
from engram.trust.secrets import Detection, scan_text
from mergedriver import codec

if TYPE_CHECKING:  # the pre-commit hook imports this module and needs no index
    from engram.items.state import VaultState

#: Larger files are left to the size checks that own them (engram refuses to write them).
MAX_BYTES = 4_000_000


@dataclass(frozen=True, slots=True)
class Change:
    """One changed file: its vault-relative path, its bytes before (None: new) and now."""

    rel: str
    old: bytes | None
    new: bytes


@dataclass
class GuardReport:
    quarantined: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    made_private: list[tuple[str, str]] = field(default_factory=list)
    #: Incoming secrets and personal data, described (path, line, type; never the value).
    arrived: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.quarantined or self.redacted or self.made_private)


def text_of(data: bytes | None) -> str | None:
    """UTF-8 text of a file's bytes, or None (absent, binary, too large, not UTF-8)."""
    if data is None or len(data) > MAX_BYTES or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def item_of(data: bytes | None, rel: str) -> Engram | None:
    """The item a file's bytes hold, or None when they are not an engram item."""
    if data is None or not rel.endswith(".md"):
        return None
    try:
        meta, content, _ = codec.parse_engram(data)
        return Engram.from_meta(meta, content, path=rel)
    except (codec.CodecError, KeyError, TypeError, ValueError):
        return None


def _new_findings(rel: str, old: bytes | None, new: str, state: VaultState) -> list[Detection]:
    before = text_of(old)
    seen = {(d.rule, d.digest) for d in scan_text(before, rel, state.trust.options())} if before else set()
    return [d for d in scan_text(new, rel, state.trust.options()) if (d.rule, d.digest) not in seen]


def admit_changes(state: VaultState, changes: list[Change], *, incoming: bool) -> GuardReport:
    """Apply the trust rules to files changed outside engram (see the module docstring)."""
    report = GuardReport()
    planned: list[tuple[Engram, Admission]] = []
    refused: list[str] = []
    rules_fired: list[str] = []
    for change in changes:
        if change.rel.startswith("private/") or text_of(change.new) is None:
            continue
        item = item_of(change.new, change.rel)
        if item is None or item.id == "":
            text = text_of(change.new)
            assert text is not None
            found = _new_findings(change.rel, change.old, text, state)
            (report.arrived if incoming else refused).extend(f"{change.rel}: {d.describe()}" for d in found)
            rules_fired += [d.rule for d in found]
            continue
        previous = item_of(change.old, change.rel)
        settings = state.trust
        offset = body_offset(change.new)  # findings are named by the file's line
        if incoming:
            shared = item.visibility in policy.SHARED
            for d in policy.scan_new_text(item, previous, settings) if shared else []:
                report.arrived.append(f"{change.rel}: {d.describe(offset)}")
            admission = policy.admit(item, previous, settings, check_sensitive=False, encoder=state.encoder)
        else:
            try:
                admission = policy.admit(item, previous, settings, encoder=state.encoder)
            except SensitiveData as exc:
                refused += ([f"{change.rel}: {d.describe(offset)}" for d in exc.detections]
                            or [f"{change.rel}: {f}" for f in exc.findings])
                rules_fired.append(exc.rule)
                continue
        if admission.events:
            planned.append((item, admission))
    if refused:
        with state.refusals_audited("commit", "(local changes)"):
            raise SensitiveData(
                f"{len(refused)} secret(s) or piece(s) of personal data are in files about to be committed, so "
                "nothing was committed: " + "; ".join(refused[:10]) + ("" if len(refused) <= 10 else f" (and {len(refused) - 10} more)") + ".",
                findings=refused,
                rule=",".join(dict.fromkeys(",".join(rules_fired).split(","))),
                hint="Remove them from those files (keep credentials in your secret manager), or move the items "
                "under private/ (visibility private), then run the command again.",
            )
    for item, admission in planned:
        _apply(state, item, admission, report)
    return report


def _apply(state: VaultState, current: Engram, admission: Admission, report: GuardReport) -> None:
    assert current.path is not None
    with state.lock.hold():
        updated = replace(
            admission.item, version=current.version + 1, updated_at=now(), updated_by=state.actor, path=current.path
        )
        if updated.visibility != current.visibility:
            rel = state.place(updated, current=current.path)
            updated = replace(updated, path=rel)
            state.move_item(current, updated)
            report.made_private.append((current.path, rel))
        else:
            state.write_item(updated, None)
        if updated.status == "quarantined" and current.status != "quarantined":
            report.quarantined.append(updated.path or current.path)
        if any(e.action == "redact" for e in admission.events):
            report.redacted.append(updated.path or current.path)
        for event in admission.events:
            state.audit.record(
                state.actor, event.action, updated.id, path=updated.path, old_version=current.version,
                new_version=updated.version, rule=event.rule, reason=event.reason,
            )
