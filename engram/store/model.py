"""Value types: engrams, synapses, evidence, and the vocabularies they draw on.

Values are frozen dataclasses. An :class:`Engram` maps one-to-one onto the frontmatter
keys of PRODUCT.md (camelCase on disk, snake_case here); keys this version does not know
ride along in ``extra`` and are written back unchanged. Timestamps are kept as canonical
strings (``2026-06-21T10:30:00.000Z``) so a value compares and serialises exactly as the
file does; :func:`instant` parses one when arithmetic is needed.

Ids: engrams get ULIDs (sortable by creation time, unique without coordination).
Synapse ids are derived: ``syn-`` + the first 16 hex digits of SHA-256 over
``"<from>|<to>|<kind>"``, endpoints sorted first for the symmetric kinds, so the same edge
created on two machines lands in the same file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from mergedriver import codec

ENGRAM_KINDS = (
    "observation",
    "fact",
    "pattern",
    "procedure",
    "hypothesis",
    "decision",
    "need",
    "skill",
    "note",  # a person's Markdown note that says no kind of its own (see store/notes.py)
)
STATUSES = ("active", "draft", "archived", "frozen", "superseded", "forgotten", "quarantined")
#: Statuses hidden from listings and recall unless asked for explicitly.
HIDDEN_STATUSES = ("frozen", "forgotten", "quarantined")
VISIBILITIES = ("private", "team", "org")
#: The ladder unverified → plausible → probable → verified (Co-Engram's), and beside it
#: refuted (found false on evidence), disputed (a contradiction open) and stale (aged).
VERIFICATION_STATUSES = ("unverified", "plausible", "probable", "verified", "refuted", "disputed", "stale")

#: The twelve synapse kinds by family.
SYNAPSE_FAMILIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "structural": ("extends", "part_of", "similar_to"),
        "causal": ("depends_on", "causes", "follows"),
        "evidential": ("derives_from", "contradicts", "exemplifies"),
        "temporal": ("supersedes", "consolidates"),
        "modulatory": ("contextualizes",),
    }
)
SYNAPSE_KINDS = tuple(kind for kinds in SYNAPSE_FAMILIES.values() for kind in kinds)
SYMMETRIC_KINDS = frozenset({"similar_to", "contradicts"})

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def new_id() -> str:
    """A new ULID, upper-case Crockford base32 (26 characters)."""
    import ulid  # imported on first use: it is not needed to read a vault

    return str(ulid.new())


def is_valid_id(value: str) -> bool:
    """Whether ``value`` can be an item id (ULIDs and ids from other tools qualify)."""
    return bool(_ID_PATTERN.fullmatch(value))  # not match: '$' also matches before a final "\n"


def now() -> str:
    """The current instant in canonical form."""
    return codec.format_time(datetime.now(UTC))


def instant(value: str) -> datetime:
    """Parse a canonical (or any ISO-8601) timestamp into an aware UTC datetime."""
    return codec.parse_time(value)


def synapse_id(source: str, target: str, kind: str) -> str:
    """The content-derived id of an edge; symmetric kinds ignore direction."""
    if kind in SYMMETRIC_KINDS:
        source, target = sorted((source, target))
    digest = hashlib.sha256(f"{source}|{target}|{kind}".encode()).hexdigest()
    return f"syn-{digest[:16]}"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True, slots=True)
class Engram:
    """One piece of knowledge: a Markdown file with frontmatter.

    ``content`` is the body without the derived synapse section. ``path`` is the
    vault-relative POSIX path the item was read from (``None`` before it is written).
    """

    id: str
    title: str
    content: str = ""
    slug: str | None = None
    domain_tags: tuple[str, ...] = ()
    kind: str = "observation"
    tags: tuple[str, ...] = ()
    summary: str = ""
    importance: float = 0.5
    confidence: float = 0.5
    source_type: str = "firsthand"
    status: str = "active"
    verification_status: str = "unverified"
    visibility: str = "team"
    created_by: str = ""
    created_at: str = ""
    updated_by: str = ""
    updated_at: str = ""
    version: int = 1
    content_hash: str = ""
    content_size: int = 0
    retrieval_count: int = 0
    effective_retrievals: int = 0
    failed_uses: int = 0
    reinforcement_score: float = 0.0
    last_retrieved_at: str | None = None
    last_effective_at: str | None = None
    last_failed_at: str | None = None
    last_verified_at: str | None = None
    valid_while: Any = None
    source: Any = None
    activated_at: str | None = None
    deactivated_at: str | None = None
    superseded_by: str | None = None
    situation: str | None = None
    provenance: tuple[Any, ...] | None = None
    steps: tuple[str, ...] | None = None
    preconditions: tuple[str, ...] | None = None
    composed_of: tuple[str, ...] | None = None  # a composed skill's component skills, in order
    verifications: tuple[Any, ...] | None = None
    recalled_by: tuple[str, ...] | None = None
    recall_days: tuple[str, ...] | None = None
    endorsements: tuple[Mapping[str, Any], ...] | None = None
    promotions: tuple[Mapping[str, Any], ...] | None = None
    example: str | None = None
    merge_conflicts: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    path: str | None = None
    #: The file is a person's note, not engram's own item: its frontmatter lacks engram's
    #: identity triple (see :func:`engram.store.notes.persons_note`). Like ``path``, it is
    #: where the item was read from, not what it says: never a frontmatter key, and not
    #: part of the value (an item equals itself whichever file kind holds it).
    by_person: bool = field(default=False, compare=False)

    # ------------------------------------------------------------------ conversion

    def to_meta(self) -> dict[str, Any]:
        """Frontmatter mapping (camelCase keys, ``None`` omitted, extras last)."""
        meta: dict[str, Any] = {}
        for attr, key in _ENGRAM_KEYMAP:
            value = getattr(self, attr)
            if value is None:
                continue
            meta[key] = list(value) if isinstance(value, tuple) else value
        for key, value in self.extra.items():
            meta.setdefault(key, value)
        return meta

    @classmethod
    def from_meta(
        cls, meta: Mapping[str, Any], content: str, path: str | None = None, *, by_person: bool = False
    ) -> Engram:
        """Build from canonical frontmatter (see ``codec.normalize_engram_meta``).

        Missing keys take their defaults in memory only; the file is not touched. A
        missing ``contentHash``/``contentSize`` is computed from the content. ``by_person``:
        the file it came from is a person's note (:attr:`by_person`).
        """
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in meta.items():
            attr = _ATTR_OF.get(key)
            if attr is None:
                extra[key] = value
            else:
                values[attr] = tuple(value) if isinstance(value, list) else value
        content = codec.canonical_content(content)
        if "content_hash" not in values:  # computed only when the file does not say
            values["content_hash"] = codec.content_hash(content)
        if "content_size" not in values:
            values["content_size"] = len(content.encode())
        return cls(content=content, extra=MappingProxyType(extra), path=path, by_person=by_person, **values)

    @staticmethod
    def meta_of(meta: Mapping[str, Any], content: str) -> dict[str, Any]:
        """``Engram.from_meta(meta, content).to_meta()``, without building the item (the
        index takes an item's row from this mapping, and a cold index reads every item)."""
        out: dict[str, Any] = {}
        for attr, key in _ENGRAM_KEYMAP:
            if key in meta:
                value = meta[key]
            elif attr == "content_hash":
                value = codec.content_hash(content)
            elif attr == "content_size":
                value = len(codec.canonical_content(content).encode())
            else:
                value = _DEFAULTS[attr]
                if value is MISSING:
                    raise TypeError(f"Engram.from_meta() missing required argument: {attr!r}")
            if value is not None:
                out[key] = list(value) if isinstance(value, (list, tuple)) else value
        for key, value in meta.items():
            if key not in _ATTR_OF:
                out.setdefault(key, value)
        return out

    def with_changes(self, **changes: Any) -> Engram:
        """A copy with fields replaced (a thin alias of ``dataclasses.replace``)."""
        return replace(self, **changes)

    @property
    def domain(self) -> str:
        """The domain path, e.g. ``engineering/python``."""
        return "/".join(self.domain_tags)


_ENGRAM_KEYMAP: tuple[tuple[str, str], ...] = tuple(
    (f.name, _camel(f.name))
    for f in fields(Engram)
    if f.name not in ("content", "extra", "path", "by_person")
)
_ATTR_OF: Mapping[str, str] = {key: attr for attr, key in _ENGRAM_KEYMAP}
_DEFAULTS: Mapping[str, Any] = {f.name: f.default for f in fields(Engram)}
assert {key for _, key in _ENGRAM_KEYMAP} == {key for key, _ in codec.ENGRAM_KEYS}


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why an edge exists: one statement, by one author, at one time."""

    description: str
    added_by: str = ""
    confidence: float | None = None
    added_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"description": self.description, "addedBy": self.added_by}
        if self.confidence is not None:
            meta["confidence"] = self.confidence
        if self.added_at is not None:
            meta["addedAt"] = self.added_at
        for key, value in self.extra.items():
            meta.setdefault(key, value)
        return meta

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Evidence:
        known = {"description", "addedBy", "confidence", "addedAt"}
        return cls(
            description=str(meta.get("description", "")),
            added_by=str(meta.get("addedBy", "")),
            confidence=meta.get("confidence"),
            added_at=meta.get("addedAt"),
            extra=MappingProxyType({k: v for k, v in meta.items() if k not in known}),
        )


@dataclass(frozen=True, slots=True)
class Synapse:
    """A typed edge between two engrams, stored as one hash-named YAML file."""

    id: str
    source: str
    target: str
    kind: str
    weight: float = 0.5
    evidence: tuple[Evidence, ...] = ()
    created_by: str = ""
    created_at: str = ""
    updated_by: str | None = None
    updated_at: str = ""
    retrieval_weight: float | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def symmetric(self) -> bool:
        return self.kind in SYMMETRIC_KINDS

    @property
    def path(self) -> str:
        """Vault-relative path of the synapse file."""
        return f"synapses/{self.kind}/{self.id}.yaml"

    def other(self, item_id: str) -> str:
        """The endpoint that is not ``item_id``."""
        return self.target if item_id == self.source else self.source

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "id": self.id,
            "from": self.source,
            "to": self.target,
            "kind": self.kind,
            "weight": self.weight,
            "evidence": [e.to_meta() for e in self.evidence],
            "createdBy": self.created_by,
            "createdAt": self.created_at,
        }
        if self.updated_by is not None:
            meta["updatedBy"] = self.updated_by
        meta["updatedAt"] = self.updated_at
        if self.retrieval_weight is not None:
            meta["retrievalWeight"] = self.retrieval_weight
        for key, value in self.extra.items():
            meta.setdefault(key, value)
        return meta

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Synapse:
        known = {key for key, _ in codec.SYNAPSE_KEYS}
        return cls(
            id=meta["id"],
            source=meta["from"],
            target=meta["to"],
            kind=meta["kind"],
            weight=meta.get("weight", 0.5),
            evidence=tuple(Evidence.from_meta(e) for e in meta.get("evidence", [])),
            created_by=meta.get("createdBy", ""),
            created_at=meta.get("createdAt", ""),
            updated_by=meta.get("updatedBy"),
            updated_at=meta.get("updatedAt", meta.get("createdAt", "")),
            retrieval_weight=meta.get("retrievalWeight"),
            extra=MappingProxyType({k: v for k, v in meta.items() if k not in known}),
        )
