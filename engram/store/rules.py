"""Validating and building item values: the rules a write must pass before any I/O.

Everything here is pure (no files, no index): :func:`build_new` makes a new
:class:`~engram.model.Engram` from user input, :func:`normalize_changes` and
:func:`apply_changes` turn an update request into a new value, and :class:`Filters`
turns list filters into an index query. Each refusal is an
:class:`~engram.errors.InvalidInput` naming the field and saying what is accepted.

Every text a write stores — title, content, summary, tags, evidence, extra values — is
refused when it holds a NUL character or a lone surrogate (:func:`plain_text`): neither
survives a round trip through the file, git or most editors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any

from engram.errors import InvalidInput, UnknownKind
from engram.store.model import (
    ENGRAM_KINDS,
    HIDDEN_STATUSES,
    STATUSES,
    VERIFICATION_STATUSES,
    VISIBILITIES,
    Engram,
    is_valid_id,
)
from engram.store.paths import normalize_domain, slugify, split_domain
from mergedriver import codec
from mergedriver.yamlio import reads_back_plain

MAX_TITLE_CHARS = 300
MAX_SUMMARY_CHARS = 2_000
MAX_CONTENT_BYTES = 1_000_000
MAX_TAGS = 64
MAX_TAG_CHARS = 64
#: Nesting and size of the free-form frontmatter values (extra keys, ``source``,
#: ``validWhile``): frontmatter is read on every listing, so it stays small and shallow.
MAX_VALUE_DEPTH = 16
MAX_FRONTMATTER_BYTES = 64_000

#: Fields a caller may not set: identity, provenance and bookkeeping.
IMMUTABLE = frozenset(
    {"id", "created_at", "created_by", "version", "updated_at", "updated_by",
     "content_hash", "content_size", "path", "slug", "by_person"}
)
#: Optional fields an update may clear by passing None.
_CLEARABLE = frozenset(
    {"last_retrieved_at", "last_effective_at", "last_failed_at", "last_verified_at", "valid_while",
     "source", "activated_at", "deactivated_at", "superseded_by", "situation", "steps",
     "preconditions", "composed_of", "example"}
)
_FIELD_NAMES = {f.name for f in fields(Engram)} - {"extra"}
_CAMEL_TO_FIELD = {
    f.name.split("_")[0] + "".join(p.title() for p in f.name.split("_")[1:]): f.name
    for f in fields(Engram)
}
_KNOWN_KEYS = {key for key, _ in codec.ENGRAM_KEYS}


# ---------------------------------------------------------------------- validators


def plain_text(name: str, value: str) -> str:
    """``value`` unless it holds a NUL or is not valid Unicode (a lone surrogate)."""
    if "\x00" in value:
        raise InvalidInput(f"{name} contains a NUL character.", field=name, hint="Pass text, not binary data.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            f"{name} is not valid Unicode text (a lone surrogate).", field=name, hint="Pass UTF-8 text."
        ) from None
    return value


def text(name: str, raw: Any, limit: int, *, required: bool = False, single_line: bool = False) -> str:
    if not isinstance(raw, str):
        raise InvalidInput(f"{name} must be text, not {type(raw).__name__}.", field=name, hint=f"Pass {name} as a string.")
    value = plain_text(name, raw).strip()
    if required and not value:
        raise InvalidInput(f"{name} is empty.", field=name, hint=f"Give a non-empty {name}.")
    if single_line and ("\n" in value or "\r" in value):
        raise InvalidInput(f"{name} must be one line.", field=name, hint="Put details in the body.")
    if len(value) > limit:
        raise InvalidInput(
            f"{name} is {len(value):,} characters; the limit is {limit:,}.",
            field=name,
            hint=f"Shorten it{' and put the rest in the body' if name == 'title' else ''}.",
        )
    return value


def unit(name: str, value: Any) -> float:
    if isinstance(value, bool):  # float(True) is 1.0: a yes/no is not a weight
        raise InvalidInput(f"{name} must be a number from 0 to 1, not {value!r}.", field=name, hint="e.g. 0.7")
    if not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"{name} must be a number from 0 to 1, not {value!r}.", field=name, hint="e.g. 0.7") from None
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(f"{name} must be from 0 to 1, not {value}.", field=name, hint="e.g. 0.7")
    return round(float(value), 6)


def choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        if name == "kind":
            raise UnknownKind(str(value), allowed)
        raise InvalidInput(
            f"{name} {value!r} is not one of {', '.join(allowed)}.", field=name, hint=f"Use one of: {', '.join(allowed)}."
        )
    return str(value)


def tag_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        raise InvalidInput("tags must be a list of words.", field="tags", hint="e.g. ['postgres', 'gotcha']")
    out: list[str] = []
    for raw in value:
        if not isinstance(raw, str):
            raise InvalidInput(f"tag {raw!r} is not text.", field="tags", hint="Pass tags as strings.")
        tag = re.sub(r"\s+", "-", plain_text("tag", raw).strip().lstrip("#")).lower()
        if not tag:
            continue
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"tag {raw[:40]!r}… is longer than {MAX_TAG_CHARS} characters.", field="tags", hint="Use a shorter tag.")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInput(f"{len(out)} tags; at most {MAX_TAGS} are allowed.", field="tags", hint="Keep the tags that matter.")
    return tuple(out)


def domain_tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = split_domain(value)
    if not isinstance(value, Iterable):
        raise InvalidInput("domain must be a path like 'engineering/python'.", field="domainTags", hint="e.g. engineering/python")
    parts = list(value)
    for part in parts:
        if not isinstance(part, str):
            raise InvalidInput(f"domain tag {part!r} is not text.", field="domainTags", hint="e.g. engineering/python")
    return normalize_domain(parts)


def content_text(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"content must be text, not {type(value).__name__}.", field="content", hint="Pass Markdown text.")
    plain_text("content", value)
    size = len(value.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise InvalidInput(
            f"content is {size:,} bytes; the limit is {MAX_CONTENT_BYTES:,}.",
            field="content",
            hint="Split it into several items linked with part_of.",
        )
    return codec.canonical_content(value)


def timestamp(name: str, value: Any) -> str:
    try:
        return codec.format_time(value)
    except codec.CodecError as exc:
        raise InvalidInput(f"{name}: {exc}.", field=name, hint="Use ISO-8601, e.g. 2026-06-21T10:30:00Z.") from None


def _depth(value: Any, limit: int) -> int | None:
    """How deeply ``value`` nests mappings and lists (counting stops past ``limit``), or
    None when a list or mapping contains itself (no file can hold that)."""
    stack: list[tuple[Any, int, tuple[int, ...]]] = [(value, 0, ())]
    deepest = 0
    while stack:
        node, depth, above = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(node, (Mapping, list, tuple)):
            if id(node) in above:
                return None
            inner = (*above, id(node))
            stack.extend((v, depth + 1, inner) for v in (node.values() if isinstance(node, Mapping) else node))
    return deepest


@functools.lru_cache(maxsize=4096)
def _text_as_read(value: str) -> Any:
    """What a reader of the YAML sees for this text (``1e3`` reads back as a number);
    cached, because imports repeat the same property values thousands of times. Plain
    text that reads back as itself (most of it: names, paths, words) skips PyYAML."""
    if reads_back_plain(value):
        return value
    return codec.load_yaml(codec.dump_yaml(value))


def _as_read(value: Any, depth: int = 0) -> Any:
    """:func:`_storable`'s work for text, whole numbers, booleans and lists and mappings
    of them; ``NotImplemented`` for anything else (it takes the long way)."""
    if value is None or isinstance(value, int):  # bool is an int
        return value
    if isinstance(value, str):
        return _text_as_read(value) if value.isprintable() else NotImplemented
    if depth < 4 and isinstance(value, list):
        items = [_as_read(v, depth + 1) for v in value]
        return NotImplemented if any(v is NotImplemented for v in items) else items
    if depth < 4 and isinstance(value, dict) and all(isinstance(k, str) and k.isprintable() for k in value):
        pairs = {k: _as_read(v, depth + 1) for k, v in value.items()}
        return NotImplemented if any(v is NotImplemented for v in pairs.values()) else pairs
    return NotImplemented


def _storable(name: str, value: Any) -> Any:
    """A value as a reader of the YAML will see it; refuses what YAML cannot hold, and
    values nested deeper than :data:`MAX_VALUE_DEPTH` or larger than
    :data:`MAX_FRONTMATTER_BYTES`."""
    if value is None:
        return None
    depth = _depth(value, MAX_VALUE_DEPTH)
    if depth is None:
        raise InvalidInput(f"{name} cannot be stored: it contains itself.", field=name,
                           hint="Use text, numbers, lists or mappings.")
    if depth > MAX_VALUE_DEPTH:
        raise InvalidInput(
            f"{name} nests more than {MAX_VALUE_DEPTH} levels deep.", field=name,
            hint="Flatten it; put structured detail in the body.",
        )
    if _text_size(name, value) > MAX_FRONTMATTER_BYTES:
        raise InvalidInput(
            f"{name} is larger than {MAX_FRONTMATTER_BYTES:,} bytes of frontmatter.", field=name,
            hint="Keep frontmatter small (it is read on every listing); put the rest in the body.",
        )
    quick = _as_read(value)
    if quick is not NotImplemented:
        return quick  # new lists and mappings; the cached leaves are immutable
    try:
        # The reader also rounds floats to six places (codec.normalize_unknown): the value
        # a write returns must be the value every later read gives.
        return codec.normalize_unknown(codec.load_yaml(codec.dump_yaml(value)))
    except Exception:  # noqa: BLE001 - any unrepresentable value
        raise InvalidInput(f"{name} cannot be stored.", field=name, hint="Use text, numbers, lists or mappings.") from None


def _text_size(name: str, value: Any) -> int:
    """The UTF-8 size of every string inside ``value``, keys included, each checked as
    plain text on the way (what frontmatter's size is made of)."""
    size = 0
    stack, seen = [value], set()
    while stack:
        part = stack.pop()
        if isinstance(part, str):
            plain_text(name, part)
            size += len(part.encode("utf-8", "surrogatepass"))
        elif isinstance(part, (Mapping, list, tuple)) and id(part) not in seen:
            seen.add(id(part))  # a structure that contains itself is refused by the codec
            stack.extend([*part.keys(), *part.values()] if isinstance(part, Mapping) else part)
    return size


#: Extra (unknown) frontmatter keys: any name Obsidian would show as a property —
#: ``Due date``, ``obsidian.status``, ``Ångström`` — but one line, no padding.
_EXTRA_KEY = re.compile(r"[^\s\x00-\x1f\x7f](?:[^\x00-\x1f\x7f]{0,62}[^\s\x00-\x1f\x7f])?")


def extra_values(value: Mapping[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    out: dict[str, Any] = {}
    for key, val in value.items():
        if not isinstance(key, str) or not _EXTRA_KEY.fullmatch(key):
            raise InvalidInput(
                f"extra key {key!r} is not a valid name.",
                field="extra",
                hint="Use 1-64 printable characters on one line, no surrounding spaces.",
            )
        if key in _KNOWN_KEYS:
            raise InvalidInput(f"{key!r} is a built-in field, not an extra.", field="extra", hint=f"Set {key} directly.")
        out[key] = _storable(f"extra value for {key!r}", val)
    if sum(len(k) + _text_size("extra", v) for k, v in out.items()) > MAX_FRONTMATTER_BYTES:
        raise InvalidInput(
            f"the extra keys together are larger than {MAX_FRONTMATTER_BYTES:,} bytes.", field="extra",
            hint="Keep frontmatter small (it is read on every listing); put the rest in the body.",
        )
    return out


_VALIDATORS: dict[str, Any] = {
    "title": lambda v: text("title", v, MAX_TITLE_CHARS, required=True, single_line=True),
    "content": content_text,
    "summary": lambda v: text("summary", v, MAX_SUMMARY_CHARS),
    "domain_tags": domain_tags,
    "kind": lambda v: choice("kind", v, ENGRAM_KINDS),
    "tags": tag_list,
    "importance": lambda v: unit("importance", v),
    "confidence": lambda v: unit("confidence", v),
    "source_type": lambda v: text("sourceType", v, 40, required=True, single_line=True),
    "status": lambda v: choice("status", v, STATUSES),
    "visibility": lambda v: choice("visibility", v, VISIBILITIES),
    "verification_status": lambda v: choice("verificationStatus", v, VERIFICATION_STATUSES),
    "retrieval_count": lambda v: _count("retrievalCount", v),
    "effective_retrievals": lambda v: _count("effectiveRetrievals", v),
    "failed_uses": lambda v: _count("failedUses", v),
    "reinforcement_score": lambda v: _number("reinforcementScore", v),
    "last_retrieved_at": lambda v: timestamp("lastRetrievedAt", v),
    "last_effective_at": lambda v: timestamp("lastEffectiveAt", v),
    "last_failed_at": lambda v: timestamp("lastFailedAt", v),
    "last_verified_at": lambda v: timestamp("lastVerifiedAt", v),
    "activated_at": lambda v: timestamp("activatedAt", v),
    "deactivated_at": lambda v: timestamp("deactivatedAt", v),
    "superseded_by": lambda v: text("supersededBy", v, 128, required=True, single_line=True),
    "valid_while": lambda v: _storable("validWhile", v),
    "situation": lambda v: text("situation", v, MAX_SUMMARY_CHARS, required=True),
    "steps": lambda v: text_list("steps", v, keep_repeats=True),
    "preconditions": lambda v: text_list("preconditions", v),
    "composed_of": lambda v: text_list("composedOf", v),
    "provenance": lambda v: record_list("provenance", v),
    "verifications": lambda v: record_list("verifications", v),
    "source": lambda v: _storable("source", v),
    "recalled_by": lambda v: text_list("recalledBy", v),
    "recall_days": lambda v: text_list("recallDays", v),
    "endorsements": lambda v: record_list("endorsements", v),
    "promotions": lambda v: record_list("promotions", v),
    "merge_conflicts": lambda v: text_list("mergeConflicts", v),
    "example": content_text,
}


MAX_LIST_ENTRIES = 200


def text_list(name: str, value: Any, *, keep_repeats: bool = False) -> tuple[str, ...]:
    """A list of one-paragraph texts (a skill's steps keep their order and repeats)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        raise InvalidInput(f"{name} must be a list of texts.", field=name, hint="e.g. ['first', 'then']")
    out: list[str] = []
    for raw in value:
        entry = text(name, raw, MAX_SUMMARY_CHARS, required=True)
        if keep_repeats or entry not in out:
            out.append(entry)
    if len(out) > MAX_LIST_ENTRIES:
        raise InvalidInput(f"{name} has {len(out)} entries; at most {MAX_LIST_ENTRIES}.", field=name, hint="Split it.")
    return tuple(out)


def record_list(name: str, value: Any) -> tuple[Any, ...]:
    """A list of mappings (provenance records, verification events)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, Mapping) for v in value):
        raise InvalidInput(f"{name} must be a list of mappings.", field=name, hint="e.g. [{'by': 'dana'}]")
    return tuple(_storable(name, dict(v)) for v in value)


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{name} must be a whole number ≥ 0, not {value!r}.", field=name, hint="e.g. 3")
    return value


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{name} must be a number, not {value!r}.", field=name, hint="e.g. 1.5")
    return round(float(value), 6)


# ---------------------------------------------------------------------- building


def build_new(
    item_id: str,
    *,
    title: str,
    content: str,
    domain: Sequence[str] | str,
    kind: str,
    tags: Sequence[str],
    summary: str,
    importance: float,
    confidence: float,
    source_type: str,
    status: str,
    visibility: str,
    extra: Mapping[str, Any] | None,
    actor: str,
    at: str,
    source: Any = None,
) -> Engram:
    """A validated new item (version 1, no path yet)."""
    values = {
        name: _VALIDATORS[name](value)
        for name, value in (
            ("title", title),
            ("content", content),
            ("summary", summary),
            ("domain_tags", domain),
            ("kind", kind),
            ("tags", tags),
            ("importance", importance),
            ("confidence", confidence),
            ("source_type", source_type),
            ("status", status),
            ("visibility", visibility),
        )
    }
    body = values["content"]
    return Engram(
        id=item_id,
        slug=slugify(values["title"]),
        created_by=actor,
        created_at=at,
        updated_by=actor,
        updated_at=at,
        activated_at=at,
        version=1,
        content_hash=codec.content_hash(body),
        content_size=len(body.encode("utf-8")),
        extra=MappingProxyType(extra_values(extra)),
        source=_storable("source", source),
        **values,
    )


#: Frontmatter keys an import may carry over from another vault or an export, so the
#: item keeps its identity and history instead of starting again at version 1.
PRESERVABLE = (
    "id", "slug", "createdBy", "createdAt", "updatedBy", "updatedAt", "version", "verificationStatus",
    "retrievalCount", "effectiveRetrievals", "failedUses", "reinforcementScore",
    "lastRetrievedAt", "lastEffectiveAt", "lastVerifiedAt", "validWhile", "activatedAt",
    "deactivatedAt", "supersededBy",
)


def preserved(item: Engram, meta: Mapping[str, Any]) -> Engram:
    """``item`` with the :data:`PRESERVABLE` keys of ``meta`` (camelCase) applied, each
    validated; other keys are ignored. Raises InvalidInput."""
    values: dict[str, Any] = {}
    for key in PRESERVABLE:
        if key not in meta or meta[key] is None:
            continue
        value, name = meta[key], _CAMEL_TO_FIELD[key]
        if key == "id":
            if not isinstance(value, str) or not is_valid_id(value):
                raise InvalidInput(f"id {value!r} is not a valid item id.", field="id", hint="Use a ULID, or leave id out.")
        elif key == "slug":
            value = slugify(text("slug", value, MAX_TITLE_CHARS, required=True, single_line=True))
        elif key in ("createdBy", "updatedBy"):
            value = text(key, value, 200, required=True, single_line=True)
        elif key in ("createdAt", "updatedAt"):
            value = timestamp(key, value)
        elif key == "version":
            value = _count(key, value) or 1
        else:
            value = _VALIDATORS[name](value)
        values[name] = value
    return replace(item, **values) if values else item


def normalize_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Validate an update request; keys may be snake_case fields or camelCase keys.

    Keys that are not fields go to ``extra`` (``None`` removes one). Refuses immutable
    fields and invalid values before anything is read or written.
    """
    if not isinstance(changes, Mapping):
        raise InvalidInput("changes must be a mapping of field to value.", hint="e.g. {'title': 'New title'}")
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in changes.items():
        name = _CAMEL_TO_FIELD.get(key, key)
        if name in IMMUTABLE:
            raise InvalidInput(
                f"{key!r} cannot be changed by an update.",
                field=key,
                hint="It is set by engram itself; change title/content/… instead.",
            )
        if name in _VALIDATORS:
            if value is None and name in _CLEARABLE:
                out[name] = None
            elif value is None:
                raise InvalidInput(f"{key!r} cannot be empty.", field=key, hint="Pass a value.")
            else:
                out[name] = _VALIDATORS[name](value)
        elif name in _FIELD_NAMES:
            raise InvalidInput(f"{key!r} cannot be changed by an update.", field=key, hint="Leave it out.")
        else:
            extra[key] = value
    if extra:
        removals = {k for k, v in extra.items() if v is None}
        kept = extra_values({k: v for k, v in extra.items() if v is not None})
        out["extra"] = (kept, removals)
    return out


def apply_changes(item: Engram, changes: Mapping[str, Any]) -> Engram:
    """A new value with validated ``changes`` applied (bookkeeping fields untouched)."""
    values = dict(changes)
    if "extra" in values:
        kept, removals = values.pop("extra")
        merged = {k: v for k, v in item.extra.items() if k not in removals}
        merged.update(kept)
        values["extra"] = MappingProxyType(merged)
    updated = replace(item, **values)
    if "title" in changes and changes["title"] != item.title:
        updated = replace(updated, slug=slugify(updated.title))
    if "content" in changes:
        updated = replace(
            updated,
            content_hash=codec.content_hash(updated.content),
            content_size=len(updated.content.encode("utf-8")),
        )
    return updated


_BOOKKEEPING = {"version", "updatedAt", "updatedBy", "contentHash", "contentSize", "slug"}


def changed_fields(old: Engram, new: Engram) -> tuple[str, ...]:
    """Frontmatter keys (plus ``content``) whose values differ, in canonical order."""
    a, b = old.to_meta(), new.to_meta()
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in _BOOKKEEPING and a.get(k) != b.get(k)]
    if old.content != new.content:
        keys.append("content")
    return tuple(keys)


# ---------------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class Filters:
    """Which items a listing or a search looks at; every part optional.

    Build one with :meth:`of` (which validates and normalises, raising InvalidInput or
    UnknownKind); :meth:`sql` is its WHERE clause over the ``items`` index table.
    Frozen, forgotten and quarantined items are left out unless ``statuses`` names them
    or ``include_hidden`` is set.
    """

    domain: str = ""  # a folder prefix, e.g. "ops/postgres"
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # an item must carry all of them
    statuses: tuple[str, ...] = ()
    visibility: tuple[str, ...] = ()
    min_importance: float | None = None
    include_hidden: bool = False

    @classmethod
    def of(
        cls,
        *,
        domain: str | Sequence[str] | None = None,
        kinds: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        statuses: Iterable[str] | None = None,
        visibility: Iterable[str] | None = None,
        min_importance: float | None = None,
        include_hidden: bool = False,
    ) -> Filters:
        return cls(
            domain="/".join(domain_tags(domain)) if domain else "",
            kinds=tuple(choice("kind", k, ENGRAM_KINDS) for k in kinds or ()),
            tags=tag_list(list(tags)) if tags is not None else (),
            statuses=tuple(choice("status", s, STATUSES) for s in statuses or ()),
            visibility=tuple(choice("visibility", v, VISIBILITIES) for v in visibility or ()),
            min_importance=unit("min_importance", min_importance) if min_importance is not None else None,
            include_hidden=include_hidden,
        )

    def sql(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.domain:
            clauses.append("(domain = ? OR domain LIKE ? ESCAPE '\\')")
            params += [self.domain, _like_escape(self.domain) + "/%"]
        for column, values in (("kind", self.kinds), ("status", self.statuses), ("visibility", self.visibility)):
            if values:
                clauses.append(f"{column} IN ({','.join('?' * len(values))})")
                params += values
        if not self.statuses and not self.include_hidden:
            clauses.append(f"status NOT IN ({','.join('?' * len(HIDDEN_STATUSES))})")
            params += HIDDEN_STATUSES
        for tag in self.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(json_extract(meta, '$.tags')) WHERE value = ?)")
            params.append(tag)
        if self.min_importance is not None:
            clauses.append("importance >= ?")
            params.append(self.min_importance)
        return (" AND ".join(clauses) or "1"), params


def _like_escape(text_: str) -> str:
    return text_.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_WORD = re.compile(r"\w{3,}", re.UNICODE)


def candidate_words(title: str, content: str, limit: int = 12) -> list[str]:
    """The words most likely to be rare in a vault: the longest distinct words of five or
    more characters from the title and the start of the content, lower-cased. (Looking up
    exact document frequencies costs most for common words, so they are not asked about.)"""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(title + " " + content[:8000]) if len(w) >= 5)
    return sorted(words, key=lambda w: (-len(w), w))[:limit]
