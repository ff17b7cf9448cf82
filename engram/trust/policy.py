"""The ``trust`` settings and :func:`admit`: what one intended write becomes.

::

    trust:
      secrets: refuse        # refuse | private | redact — a credential bound for a shared file
      personalData: refuse   # refuse | private | redact — emails, phone numbers, private IPs, home paths
      phoneRegion: US        # how phone numbers without a +country code are read
      allow: []              # regular expressions of values that are never findings
      screen: true           # the instruction screen (quarantine)
      meaning: false         # true: the screen also reads meaning (sentences close to known attacks)
      meaningSimilarity: 0.575 # … at least this close (cosine) to an attack exemplar
      meaningMargin: 0.175     # … and closer to it than to any benign exemplar by this much

:func:`admit` is pure: given the item about to be written and the version it replaces
(None for a new item), it returns the item to write — unchanged, quarantined, redacted
or made private — and the events to audit, or raises
:class:`~engram.errors.SensitiveData` when the setting is ``refuse``. One import may
override ``personalData`` for its notes (``engram import --personal-data
private|redact|keep``); ``keep`` writes the personal data as it is and audits that a
person chose so (``keep-personal-data``). It is never a setting, and never applies to
secrets.

- Secrets and personal data are looked for only when the item will live in a shared
  (committed) file: visibility ``team`` or ``org``. A private item stays on the machine
  (``private/`` is gitignored), so nothing is refused there. Only text that is new in this
  write is looked at when the item was already shared, so an unrelated edit (a tag) of an
  item is never refused for what it held before.
- The instruction screen looks at the text this write adds (findings the previous
  version already had do not count). A curator's release records the digest of the text
  it vouched for in the frontmatter key ``quarantineReleased`` (:data:`RELEASE_KEY`), so
  the release travels with the file: no machine screens that exact text again, and new
  instruction-shaped text written into the item later is screened as usual.
- The screen reads meaning too (:mod:`engram.trust.likeness`) when ``meaning`` is turned on and
  the caller hands in the sentence encoder (``encoder=``): without one, or when the model
  cannot run, the screen is the rules alone and its :class:`Screening` says
  ``meaning: unavailable``; a write is never refused for that.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from engram.errors import InstructionShaped, InvalidInput, SensitiveData
from engram.store import rules
from engram.store.model import Engram
from engram.store.settings import SETTINGS_FILE
from engram.trust.secrets import Detection, ScanOptions, field_texts, redact, scan_fields

if TYPE_CHECKING:  # the screen loads with the first write it reads: a commit's secret scan needs none of it
    from engram.trust.likeness import Encoder, Likeness
    from engram.trust.screen import Screening

Action = Literal["refuse", "private", "redact"]
ACTIONS: tuple[str, ...] = ("refuse", "private", "redact")
#: Personal data written as it is: never a setting, only a person's choice for one import
#: (``engram import --personal-data keep``), and audited as such. Secrets are never kept.
KEEP = "keep"
#: What ``engram import --personal-data`` may choose for the notes that hold personal data.
PERSONAL_CHOICES: tuple[str, ...] = ("private", "redact", KEEP)
SHARED = frozenset({"team", "org"})
#: Fields the detectors read, and the ones a redaction may rewrite.
TEXT_FIELDS = ("title", "summary", "content")
#: Frontmatter key a curator's release sets: ``sha256:`` of the text it vouched for.
RELEASE_KEY = "quarantineReleased"


@dataclass(frozen=True, slots=True)
class TrustSettings:
    """The ``trust`` section of ``engram.yaml`` (defaults: refuse both, screen on, its
    meaning stage off: it costs ~20× a create's time and holds some plain facts, see
    docs/trust.md)."""

    secrets: str = "refuse"
    personal_data: str = "refuse"
    phone_region: str = "US"
    allow: tuple[str, ...] = ()
    screen: bool = True
    #: The screen's meaning stage (engram.trust.likeness) and its bounds.
    meaning: bool = False
    meaning_similarity: float = 0.575
    meaning_margin: float = 0.175

    def validated(self) -> TrustSettings:
        for key, number in (("meaningSimilarity", self.meaning_similarity), ("meaningMargin", self.meaning_margin)):
            if not -1.0 <= number <= 1.0:
                raise InvalidInput(
                    f"{SETTINGS_FILE}: trust.{key} is {number}, not a cosine between -1 and 1.",
                    field=f"trust.{key}",
                    hint="Fix the trust section of engram.yaml (docs/trust.md has the defaults).",
                )
        for key, value in (("secrets", self.secrets), ("personalData", self.personal_data)):
            if value not in ACTIONS:
                raise InvalidInput(
                    f"{SETTINGS_FILE}: trust.{key} is {value!r}, not one of {', '.join(ACTIONS)}.",
                    field=f"trust.{key}",
                    hint="Fix the trust section of engram.yaml.",
                )
        return self

    def options(self) -> ScanOptions:
        return ScanOptions.of(phone_region=self.phone_region, allow=self.allow)

    def action_for(self, detection: Detection) -> str:
        return self.secrets if detection.kind == "secret" else self.personal_data

    @property
    def likeness(self) -> Likeness:
        from engram.trust.likeness import Likeness

        return Likeness(self.meaning_similarity, self.meaning_margin)


_warmed: set[tuple[bool, bool]] = set()


def warm(settings: TrustSettings, encoder: Encoder | None = None) -> None:
    """Load what :func:`admit` uses — the screen's patterns and, with ``trust.meaning``,
    its model — once per process, by screening a sample. Writers call it before they
    take the vault lock (:class:`engram.store.fsio.VaultLock`'s ``prepare``): loaded
    under it, a process's first write held every other writer up for a third of a
    second (``benchmarks/bench_lock.py``). The sample is prose, so detect-secrets'
    provider plugins stay unloaded until a text with a token-like run needs them (~40 ms
    once per process; a one-shot ``engram add`` of prose never pays it)."""
    key = (settings.screen, bool(settings.meaning and encoder is not None))
    if key in _warmed:
        return
    sample = {"content": "Warm-up: the deploy needs 2 GB of memory."}
    scan_fields(sample, settings.options())
    if settings.screen:
        screen(sample, settings, encoder)
    _warmed.add(key)


def screen(
    fields: dict[str, str], settings: TrustSettings, encoder: Encoder | None, known: dict[str, str] | None = None
) -> Screening:
    """The instruction screen over the named ``fields`` of one write: the rules, and the
    meaning stage when ``trust.meaning`` is on. ``known`` holds the fields of the
    version this write replaces: what they already held does not count again."""
    from engram.trust.likeness import screen_meaning
    from engram.trust.screen import screen_fields

    screening = screen_fields(fields)
    if known is not None:
        screening = screening.without(screen_fields(known))
    if not settings.meaning:
        return screening
    found = screen_meaning(fields, encoder, settings.likeness, known)
    return screening.with_meaning(found.findings, found.status, found.problem)


@dataclass(frozen=True, slots=True)
class Event:
    """Something :func:`admit` did to the write, for the audit log."""

    action: str  # quarantine | redact | make-private
    rule: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"rules": self.rule.split(","), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Admission:
    item: Engram
    screening: Screening = field(default_factory=lambda: _nothing_screened())
    detections: tuple[Detection, ...] = ()
    events: tuple[Event, ...] = ()

    @property
    def quarantined(self) -> bool:
        return any(e.action == "quarantine" for e in self.events)

    @property
    def quarantine(self) -> Event | None:
        """The quarantine event (which rules, why), when the write was held back."""
        return next((e for e in self.events if e.action == "quarantine"), None)


def _nothing_screened() -> Screening:
    from engram.trust.screen import Screening

    return Screening()


def held_message(event: Event, path: str | None) -> str:
    """What a writer is told when its write was quarantined: where, which rule, why, and
    what next — the same words from every adapter (the CLI's add and learn, MCP)."""
    fired = event.rule.split(",")
    return (
        f"Quarantined: recorded as {path} but held back, because it reads like instructions to an AI"
        f" reader ({'rules' if len(fired) > 1 else 'rule'} {', '.join(fired)}; {event.reason}). No other"
        " item was changed, and recall will not return this one until a curator reviews and releases it."
        " State knowledge as facts about systems, not as orders to agents."
    )


def text_fields(item: Engram) -> dict[str, str]:
    """The named texts of an item the detectors read: title, summary, body, tags, the
    lifecycle's prose fields (situation, steps, preconditions, example), endorsement
    notes, extra keys and ``source``."""
    fields = {name: getattr(item, name) for name in TEXT_FIELDS}
    if item.tags:
        fields["tags"] = " ".join(item.tags)
    for name in ("situation", "example"):
        if getattr(item, name):
            fields[name] = getattr(item, name)
    for name in ("steps", "preconditions"):
        fields.update(field_texts(list(getattr(item, name) or ()), name))
    for i, endorsement in enumerate(item.endorsements or ()):
        if isinstance(endorsement.get("note"), str):  # who and when are names and times, not prose
            fields[f"endorsements[{i}].note"] = endorsement["note"]
    fields.update(field_texts({k: v for k, v in item.extra.items() if k != RELEASE_KEY}, "extra"))
    if item.source is not None:
        fields.update(field_texts(item.source, "source"))
    return fields


def text_digest(item: Engram) -> str:
    """``sha256:`` of the texts the screen reads (what a release vouches for)."""
    joined = "\0".join(f"{name}\0{text}" for name, text in sorted(text_fields(item).items()))
    return "sha256:" + hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()


def released(item: Engram) -> bool:
    """Whether a curator released exactly this text of ``item`` (an item no one
    released has no digest to compare, so its text is not hashed)."""
    mark = item.extra.get(RELEASE_KEY)
    return mark is not None and mark == text_digest(item)


def _new_text(fields: dict[str, str], previous: Engram | None) -> dict[str, str]:
    """Of an item's ``fields`` (its :func:`text_fields`), those this write adds."""
    if previous is None or previous.visibility not in SHARED:
        return fields
    before = text_fields(previous)
    return {name: text for name, text in fields.items() if before.get(name) != text}


def scan_new_text(item: Engram, previous: Engram | None, settings: TrustSettings) -> list[Detection]:
    """Secrets and personal data in the text this write adds to ``item``."""
    return scan_fields(_new_text(text_fields(item), previous), settings.options())


def admit(
    item: Engram,
    previous: Engram | None,
    settings: TrustSettings,
    *,
    check_sensitive: bool = True,
    encoder: Encoder | None = None,
) -> Admission:
    """The item to write in place of ``item`` (see the module docstring).

    ``check_sensitive=False`` screens for instructions only (text that already arrived
    through git: its secrets are reported, not refused). ``encoder`` lets the screen
    read meaning. Raises SensitiveData when a finding's setting is ``refuse`` (nothing
    is written).
    """
    events: list[Event] = []
    detections: tuple[Detection, ...] = ()
    fields = text_fields(item)
    if check_sensitive and item.visibility in SHARED:
        detections = tuple(scan_fields(_new_text(fields, previous), settings.options()))
    if detections:
        item, more = _handle_sensitive(item, detections, settings)
        events += more
        fields = text_fields(item)  # redacted: the screen reads what will be written
    screening = _nothing_screened()
    if settings.screen and not released(item):
        screening = screen(fields, settings, encoder, None if previous is None else text_fields(previous))
        if screening.quarantine and item.status != "quarantined":
            item = replace(item, status="quarantined")
            events.append(Event("quarantine", ",".join(screening.rules), screening.reason()))
    return Admission(item, screening, detections, tuple(events))


def _handle_sensitive(
    item: Engram, detections: tuple[Detection, ...], settings: TrustSettings
) -> tuple[Engram, list[Event]]:
    kept = [d for d in detections if d.kind != "secret" and settings.action_for(d) == KEEP]
    events = [Event("keep-personal-data", ",".join(dict.fromkeys(d.rule for d in kept)),
                    "; ".join(d.describe() for d in kept))] if kept else []
    detections = tuple(d for d in detections if d not in kept)
    if not detections:
        return item, events
    item, more = _handle_rest(item, detections, settings)
    return item, events + more


def _handle_rest(
    item: Engram, detections: tuple[Detection, ...], settings: TrustSettings
) -> tuple[Engram, list[Event]]:
    actions = {settings.action_for(d) for d in detections}
    described = [d.describe() for d in detections]
    rules_fired = ",".join(dict.fromkeys(d.rule for d in detections))
    unredactable = [d for d in detections if d.field not in (*TEXT_FIELDS, "tags")]
    if "refuse" in actions or ("private" not in actions and unredactable):
        what = "secret(s)" if any(d.kind == "secret" for d in detections) else "piece(s) of personal data"
        raise SensitiveData(
            f"{len(detections)} {what} would go into a shared (committed) file, so nothing was written: "
            + "; ".join(described[:10]) + ("" if len(described) <= 10 else f" (and {len(described) - 10} more)") + ".",
            findings=described,
            rule=rules_fired,
            detections=detections,
            hint="Remove them (keep credentials in your secret manager and refer to them by name), or store "
            "the item with visibility private. The trust section of engram.yaml can redact or keep such "
            "items private instead of refusing.",
        )
    reason = "; ".join(described)
    if "private" in actions:
        return replace(item, visibility="private"), [Event("make-private", rules_fired, reason)]
    changes: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        found = [d for d in detections if d.field == name]
        if found:
            changes[name] = redact(getattr(item, name), found)
    tagged = [d for d in detections if d.field == "tags"]
    if tagged:  # a tag holding a finding is dropped, not rewritten
        kept, offset = [], 0
        for tag in item.tags:
            if not any(d.start < offset + len(tag) and offset < d.end for d in tagged):
                kept.append(tag)
            offset += len(tag) + 1
        changes["tags"] = tuple(kept)
    return rules.apply_changes(item, changes), [Event("redact", rules_fired, reason)]


def admit_text(
    text: str, name: str, settings: TrustSettings, *, shared: bool, encoder: Encoder | None = None
) -> str:
    """A text that is not an item (a synapse's evidence, an observation filed as a
    proposal): the text to store, redacted if the settings say so. Nothing can be
    quarantined or made private on its own here, so instruction-shaped text raises
    InstructionShaped, and a secret raises SensitiveData unless the setting is ``redact``."""
    if settings.screen:
        screening = screen({name: text}, settings, encoder)
        if screening.quarantine:
            raise InstructionShaped(
                f"the {name} is instruction-shaped text: {screening.reason()}.",
                field=name,
                rule=",".join(screening.rules),
                hint=f"Say it as a plain fact or procedure: the {name} is shown to every agent that reads it.",
            )
    if not shared:
        return text
    found = scan_fields({name: text}, settings.options())
    if not found:
        return text
    if all(settings.action_for(d) == "redact" for d in found):
        return redact(text, found)
    described = [d.describe() for d in found]
    raise SensitiveData(
        f"{len(found)} secret(s) or piece(s) of personal data would go into a shared file, so nothing was "
        "written: " + "; ".join(described[:10]) + ".",
        findings=described,
        rule=",".join(dict.fromkeys(d.rule for d in found)),
        detections=found,
        hint=f"Take them out of the {name}.",
    )


def check_move(item: Engram, scope: str, settings: TrustSettings, encoder: Encoder | None = None) -> Screening:
    """The checks for ``item`` moving unchanged into the shared ``scope`` (a promotion):
    every text is new to that scope, so all of it is read. Any secret or personal data
    refuses the move, whatever the ``trust`` setting, because a move never rewrites what
    its author wrote (redacting would change their own copy; keeping it private is not a
    move). Returns the screening, for the caller to refuse instruction-shaped text (an
    item a curator released passes). Raises SensitiveData."""
    moved = replace(item, visibility=scope)
    found = scan_fields(text_fields(moved), settings.options())
    if found:
        described = [d.describe() for d in found]
        secret = any(d.kind == "secret" for d in found)
        what = "secret(s)" if secret else "piece(s) of personal data"
        raise SensitiveData(
            f"{item.id} holds {len(found)} {what}, and {scope} is shared (committed and pushed), so it was not "
            "promoted and nothing was changed: " + "; ".join(described[:10])
            + ("" if len(described) <= 10 else f" (and {len(described) - 10} more)") + ".",
            findings=described,
            rule=",".join(dict.fromkeys(d.rule for d in found)),
            detections=found,
            hint=f"Take them out of the item (`engram update {item.id} --body -`, or engram_update), then promote "
            "it again; " + ("keep credentials in your secret manager and refer to them by name." if secret
                            else "name a role, a team or a channel rather than a person or a machine."),
        )
    if not settings.screen or released(moved):
        return _nothing_screened()
    return screen(text_fields(moved), settings, encoder)

