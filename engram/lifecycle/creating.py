"""``create``: a new item, unless the vault already holds it — then a learn decision.

:func:`engram.items.writing.create` writes a new item, reinforces an identical one, or
names the near match (``UPDATE``) without writing. A near match is never an instruction
to overwrite it: here it becomes what :func:`engram.lifecycle.learning.learn` decides
(``DUPLICATE`` reinforced, ``EXTENDED``, ``SUPERSEDED``, ``DISPUTED``, or ``NEW`` linked
to it), with the caller's fields on the item the decision wrote.

A candidate that is not a near match becomes a learn decision too when its title names
the same subject — the same words once the value a title asserts is set aside ("Design
review is on Thursdays" / "… on Tuesdays", :mod:`engram.lifecycle.subjects`) — and the
classifier's rules find the new item contradicting or repeating it
(:func:`same_subject_claim`): "The ALB idle timeout is 120 s" under the title of "… is
60 s" differs too much to be a near match, and was written beside it as a second,
disagreeing item. The title test keeps this safe: two aeronautics abstracts with
different figures are no versions of one another, nor are "Kubernetes version (prod
cluster)" and "(staging cluster)"; and two titles that name two notes of a series
("Sprint 12 retro" / "Sprint 13 retro") never are either (:mod:`engram.store.titles`).

Its own module so that ``engram add`` of a new item imports none of learn's classifier,
stemmer and recall (~0.1 s of a one-shot command's start-up): the rules load when a
candidate shares the new item's subject, learn for a decision only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engram.items import writing
from engram.items.state import VaultState
from engram.items.writing import CreateResult
from engram.store.dedup import same_subject
from engram.store.model import Engram


def same_subject_claim(item: Engram, candidates: Mapping[str, tuple[str, str]]) -> str | None:
    """The deduplication candidate (``path → (title, body)``) whose title names ``item``'s
    subject (the same subject and qualifier words; values may differ) which ``item``
    contradicts or says again by the classifier's rules, the best aligned when several
    do; None when none does. The rules alone, no encoder: this runs on every create with
    a same-titled candidate, and learn, which the create then becomes, decides with
    meaning too."""
    near = {path: found for path, found in candidates.items() if same_subject(item.title, found[0])}
    if not near:
        return None
    from engram.lifecycle.classify import Lesson, compare, text_of  # see the module docstring
    from engram.lifecycle.subjects import subject

    def about(title: str) -> frozenset[str]:
        named = subject(title)  # a title that is all value ("Use pg_repack, not …") is its value
        return named.words | named.qualifiers or named.values

    mine = about(item.title)
    same = {path: found for path, found in near.items() if mine and about(found[0]) == mine}
    lesson = Lesson(text_of(item.title, item.content), item.situation, title=item.title)
    best: tuple[float, str] | None = None
    for path, (title, body) in sorted(same.items()):
        c = compare(lesson, Lesson(text_of(title, body), title=title))
        if c.relation in ("contradicts", "duplicate") and (best is None or c.alignment > best[0]):
            best = (c.alignment, path)
    return best[1] if best else None


def create(
    state: VaultState,
    title: str,
    content: str = "",
    *,
    domain: Sequence[str] = (),
    kind: str = "observation",
    tags: Sequence[str] = (),
    summary: str = "",
    importance: float = 0.5,
    confidence: float = 0.5,
    source_type: str = "firsthand",
    status: str = "active",
    visibility: str = "team",
    extra: Mapping[str, Any] | None = None,
    source: Any = None,
    dedupe: bool = True,
    fields: Mapping[str, Any] | None = None,
) -> CreateResult:
    """Create an item, unless the vault already holds it (:func:`engram.items.writing.create`).

    A near match is never an instruction to overwrite it: it becomes a learn decision
    (``DUPLICATE`` reinforced, ``EXTENDED`` with the new sentences appended after the
    original's text, ``SUPERSEDED``, ``DISPUTED``, or ``NEW`` linked to the near match),
    and ``note`` says why. So does a same-subject claim (:func:`same_subject_claim`).
    Raises InvalidInput / UnknownKind before writing anything.
    """
    with state.lock.hold():
        result = writing.create(
            state, title, content, domain=domain, kind=kind, tags=tags, summary=summary,
            importance=importance, confidence=confidence, source_type=source_type,
            status=status, visibility=visibility, extra=extra, source=source, dedupe=dedupe,
            fields=fields, related=same_subject_claim,
        )
        if result.outcome != "UPDATE":
            return result
        # The classifier and recall load for a near match only (see the module docstring).
        from engram.lifecycle.learning import learn

        learned = learn(
            state, content or title, (fields or {}).get("situation"), title=title,
            domain=domain, kind=kind, tags=tags, importance=importance, confidence=confidence,
            visibility=visibility,
        )
        item = learned.item or result.item
        outcome = {
            "reinforced": "DUPLICATE", "extended": "EXTENDED", "superseded": "SUPERSEDED",
            "disputed": "DISPUTED",
        }.get(learned.action, "NEW")
        rest = {k: v for k, v in (fields or {}).items() if k != "situation"}
        # The caller's fields belong on the item the decision wrote — a new one, a
        # successor or a disputed draft — never on an existing item it reinforced; and a
        # successor or a draft keeps the status the decision gave it.
        given = (("summary", summary, ""), ("source_type", source_type, "firsthand"), ("source", source, None),
                 *((("status", status, "active"),) if outcome == "NEW" else ()))
        changes: dict[str, Any] = {**dict(extra or {}), **rest}
        changes.update({key: value for key, value, default in given if value != default})
        if outcome in ("NEW", "SUPERSEDED", "DISPUTED") and changes:
            item = writing.update(state, item.id, changes, expected_version=item.version)
        return CreateResult(
            outcome,  # type: ignore[arg-type]
            item, result.similarity, learned.message,
            learned.target.id if learned.target else None,
        )
