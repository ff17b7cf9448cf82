"""Classifying a new lesson against existing ones: duplicate, contradicts, extends, novel.

Offline and deterministic: the verdict depends only on the texts (and situations), never
on a model, the clock or the order candidates arrive in. For each candidate the lesson
is compared as a whole and sentence by sentence (a one-line lesson can contradict one
sentence of a long note), on the signals of :mod:`engram.lifecycle.signals`:

- **alignment** — how far the two are about the same thing: the overlap of their
  content words, whole or in the best-matching pair of sentences, raised when both name
  the same situation. Two lessons for *different* situations never conflict, nor do
  two that say different things of differently named things ("the v1 API was
  deprecated" / "the v2 API was released"), nor two notes whose titles name two members
  of a series ("Sprint 12 retro" / "Sprint 13 retro", :mod:`engram.store.titles`) or
  two subjects ("… — hallway" / "… — kitchen", :mod:`engram.lifecycle.subjects`).
- **conflicts** — a changed quantity on the same key (``port 5432 → 6432``, ``30 s →
  2 min``), a negation flip, an antonym swap (``enabled``/``disabled``, ``always``/
  ``never``), an ordering or preference flip, one lesson rejecting what the other uses
  ("instead of", "no longer", "avoid"), or one value swapped after a verb that admits
  only one ("the API returns JSON" / "XML").
- **coverage** — how much of each the other holds.

The decision, for the best-aligned candidate:

=========== ==============================================================================
contradicts aligned, and at least one conflict — unless one clause of the lesson says the
            whole candidate again with nothing against it ("…; tenants without a key fall
            back to …"): then the other clauses are a condition or an exception
duplicate   aligned, no conflict, and the lesson adds (almost) nothing the candidate lacks
extends     aligned, no conflict, the lesson restates the candidate and adds detail (a
            clause of its own, or an exception however short)
novel       anything else — including everything the classifier is unsure about
=========== ==============================================================================

Safety is the design constraint: a wrong ``contradicts`` hides an existing item, so it
needs alignment *and* a named conflict; weak evidence gives ``novel`` with the nearest
candidate as ``related`` (and ``warn`` when a conflict was seen), so the caller links
instead of destroying. Every verdict carries its reasons in words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from engram.lifecycle.signals import (
    NEGATIONS,
    Text,
    analyse,
    antonym_flips,
    containment,
    opposites,
    order_flips,
    overlap,
    polarity_flips,
    rejections,
    renamed,
    same_value,
    sentences,
    slot_words,
    subject_changed,
    substitution,
    value_changes,
    without,
)
from engram.lifecycle.subjects import apart as titles_apart
from engram.lifecycle.subjects import own_words
from engram.store.dedup import normalize_text
from engram.store.model import Engram
from engram.store.titles import series

Relation = Literal["duplicate", "contradicts", "extends", "novel"]
RELATIONS: tuple[Relation, ...] = ("duplicate", "contradicts", "extends", "novel")

#: Alignment at which two lessons are taken to be about the same thing.
ALIGNED = 0.5
#: A swapped value without a change marker needs more alignment than a named conflict.
SWAP_ALIGNED = 0.6
#: Below this a candidate is not even related.
RELATED = 0.3
#: A lesson whose words the candidate holds to this share adds nothing: a duplicate.
COVERED = 0.8
#: A lesson holding this share of the candidate restates it (and extends it if it adds).
EXTENDS_COVER = 0.8
#: New content words a lesson must add to extend rather than duplicate.
NEW_DETAIL = 2
#: A cosine (all-MiniLM-L6-v2) at which two lessons say the same claim, whatever their
#: words: then a lesson with no conflict is a duplicate, and one with a conflict the rules
#: name contradicts. Read off the development sets (learn-golden and the two holdouts):
#: duplicates and contradictions sit at 0.82–0.98, different claims on one subject at a
#: median of 0.55; docs/benchmarks.md has the distribution.
SAME_CLAIM = 0.85


@dataclass(frozen=True, slots=True)
class Lesson:
    """What is compared: a text and the situation it holds in (either side)."""

    text: str
    situation: str | None = None
    id: str = ""
    #: A candidate's cosine with the new lesson by the sentence encoder, when the caller
    #: had it (:mod:`engram.recall.meaning`); None leaves the verdict to the words alone.
    meaning: float | None = None
    #: The note's title, when it has one: two titles naming two notes of a series, or two
    #: subjects the texts bear out, keep both notes (:func:`engram.store.titles.series`,
    #: :func:`engram.lifecycle.subjects.apart`).
    title: str = ""


@dataclass(frozen=True, slots=True)
class Comparison:
    """The new lesson against one candidate."""

    id: str
    relation: Relation
    alignment: float
    similarity: float
    covers_new: float  # share of the new lesson's words the candidate holds
    covers_old: float  # share of the candidate's words the new lesson holds
    situation: Literal["same", "different", "unknown"]
    conflicts: tuple[str, ...]
    new_words: tuple[str, ...]
    meaning: float | None = None  # the cosine the caller gave, when it did
    #: Why the two titles name two notes, whatever their bodies say: "series" ("Sprint 12
    #: retro" / "Sprint 13 retro"), "subject" ("… — hallway" / "… — kitchen"), or "".
    apart: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "relation": self.relation, "alignment": self.alignment,
            "similarity": self.similarity, "coversNew": self.covers_new,
            "coversOld": self.covers_old, "situation": self.situation,
            "conflicts": list(self.conflicts), "newWords": list(self.new_words),
            "meaning": self.meaning, "apart": self.apart,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """The classification of a lesson: the relation, its target and why."""

    relation: Relation
    target: str | None
    confidence: float
    reasons: tuple[str, ...]
    related: str | None = None  # novel: the nearest candidate, to link as similar_to
    warn: bool = False  # novel: a conflict was seen with too little alignment to act on
    comparisons: tuple[Comparison, ...] = field(default=())
    decided_by: str = "offline"

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation, "target": self.target, "confidence": self.confidence,
            "reasons": list(self.reasons), "related": self.related, "warn": self.warn,
            "decidedBy": self.decided_by,
            "comparisons": [c.to_json() for c in self.comparisons],
        }


def _situation(new: str | None, old: str | None) -> Literal["same", "different", "unknown"]:
    """Two situations are different when each names something the other does not
    ("… to staging" / "… to production"); one merely more specific is not different."""
    if not new or not old:
        return "unknown"
    a, b = analyse(new).stems, analyse(old).stems
    if a == b or (overlap(a, b) >= 0.8 and not (a - b and b - a)):
        return "same"
    if (a - b) and (b - a):
        return "different"
    return "unknown"


def _best_sentences(
    new: Text, old: Text, new_raw: str, old_raw: str, slots: frozenset[str]
) -> tuple[Text, Text, float]:
    """For a short lesson (one or two sentences), the sentence of the candidate most
    about the same thing; otherwise the whole texts. A sentence needs three content
    words to count, so boilerplate ("Status: accepted.") never aligns two notes."""
    whole = (new, old, overlap(new.stems, old.stems))
    ns = [without(analyse(s), slots) for s in sentences(new_raw)]
    os_ = [without(analyse(s), slots) for s in sentences(old_raw)]
    if len(ns) > 2 or (len(ns) <= 1 and len(os_) <= 1):
        return whole
    best = whole
    for a in ns:
        if len(a.stems) < 3:
            continue
        for b in os_:
            score = overlap(a.stems, b.stems)
            if len(b.stems) >= 3 and score > best[2] + 1e-9:
                best = (a, b, score)
    return best


def compare(lesson: Lesson, candidate: Lesson) -> Comparison:
    """Compare a new lesson with one existing lesson (see the module docstring)."""
    new, old = analyse(lesson.text), analyse(candidate.text)
    # A word that only names a value both state ("the check interval is 10 s") is no news.
    slots = slot_words(new, old)
    new, old = without(new, slots), without(old, slots)
    similarity = overlap(new.stems, old.stems)
    ns, os_, sentence_sim = _best_sentences(new, old, lesson.text, candidate.text, slots)
    situation = _situation(lesson.situation, candidate.situation)
    covers_new = containment(new.stems, old.stems)
    covers_old = containment(old.stems, new.stems)
    # A short lesson wholly inside a long note is about that note.
    contained = 0.9 * covers_new if len(new.stems) >= 4 else 0.0
    alignment = max(similarity, sentence_sim, contained)
    if situation == "same":
        alignment = min(1.0, alignment + 0.15)
    old_only, new_only = os_.stems - ns.stems, ns.stems - os_.stems
    # Words both whole lessons negate somewhere are no flip between two of their sentences
    # ("pg_repack, not VACUUM FULL. VACUUM FULL locks …" / "pg_repack instead of VACUUM FULL").
    agreed = frozenset(new.denied & old.denied)
    flips = [*polarity_flips(ns, os_, agreed), *antonym_flips(ns, os_)]
    flipped = {w for pair in _flipped_words(ns, os_) for w in pair}
    # A flip is a contradiction only when the rest of the old claim is still there:
    # "before a release, freeze …" / "after a release, unfreeze …" is another step.
    # A flip next to a replaced word ("before … freeze … announce" / "after … unfreeze …
    # post") describes another step, not the opposite of this one.
    if ((old_only - flipped) and (new_only - flipped)) or subject_changed(ns, os_, frozenset(flipped)):
        flips = []
    values = [] if subject_changed(ns, os_) else value_changes(ns, os_)
    if values and flips and not polarity_flips(ns, os_, agreed) and not new.changes:
        # "The window opens after 5 min" / "… closes after 30 min": opposite verbs with
        # their own values are two events, not one turned round.
        values, flips = [], []
    conflicts = [*values, *flips, *order_flips(ns, os_), *rejections(ns, os_, agreed)]
    if (ns, os_) != (new, old) and not subject_changed(new, old):
        # values stated elsewhere in the texts count too
        conflicts += [c for c in value_changes(new, old) if c not in conflicts]
    if _PAST.search(lesson.text):
        # "Backups used to be kept 30 days; now 90": the value said of the past is no
        # evidence that the old value still holds.
        present = " ".join(p for p in _CLAUSE_SPLIT.split(lesson.text) if p and not _PAST.search(p))
        if present.strip():
            conflicts += [c for c in value_changes(without(analyse(present), slots), old) if c not in conflicts]
    strong = bool(conflicts)
    swapped = substitution(ns, os_)
    if swapped is not None and not strong:
        conflicts.append(f"'{' '.join(swapped[0])}' became '{' '.join(swapped[1])}'")
    # "The v1 API …" / "The v2 API …": what one says of its thing is no news of, and
    # replaces nothing in, the other; only the same claim of another value conflicts.
    another = bool(renamed(ns, os_))
    # "We switched … to Rollbar" against "… goes to Sentry": a change marker and a word
    # that replaced another.
    replaced = not another and bool(new.changes) and bool(old_only) and bool(new_only) and len(old_only) <= 3
    if replaced and not conflicts:
        conflicts.append(
            f"'{' '.join(sorted(new_only))}' replaces '{' '.join(sorted(old_only))}'"
            f" ({', '.join(new.changes)})"
        )
    # A lesson that says the whole candidate again in one clause cannot contradict it:
    # what its other clauses add is a condition or an exception ("…; tenants without
    # their own key fall back to the platform key"), and it extends the candidate.
    restated = (
        None if new.changes or _PAST.search(lesson.text) or _QUOTED.search(lesson.text)
        else _restating_clause(lesson.text, old, slots)
    )
    if restated is not None:
        conflicts, strong, swapped, replaced = [], False, None, False
    added = tuple(sorted(new.stems - old.stems))
    removed = old.stems - new.stems
    long_candidate = len(old.stems) >= 2 * len(new.stems)
    aligned = alignment >= ALIGNED or (situation == "same" and alignment >= RELATED + 0.1)
    # The same claim in other words: the words barely overlap, the meaning does.
    said = candidate.meaning is not None and candidate.meaning >= SAME_CLAIM and not aligned
    if said:
        aligned = True
    # "Sprint 12 retro" / "Sprint 13 retro", "… — hallway" / "… — kitchen": another note,
    # however alike (engram.store.titles, engram.lifecycle.subjects).
    apart = ("series" if series(lesson.title, candidate.title)
             else "subject" if _subjects_apart(lesson, candidate, min(covers_new, covers_old)) else "")
    relation: Relation = "novel"
    if situation == "different" or not aligned or apart:
        relation = "novel"
    elif (
        strong
        or (swapped is not None and (alignment >= SWAP_ALIGNED or bool(new.changes)))
        or (replaced and alignment >= ALIGNED)
    ):
        relation = "contradicts"
    elif conflicts or another:
        relation = "novel"
    elif restated is not None and (len(restated[0]) >= NEW_DETAIL or (restated[1] and bool(restated[0]))):
        relation = "extends"  # an exception is detail however short
    elif covers_new >= COVERED and (not added or not removed or long_candidate or covers_new >= 0.9):
        relation = "duplicate"
    elif said:
        relation = "duplicate"  # no conflict, and it means what the candidate means
    elif covers_old >= EXTENDS_COVER and len(removed) <= 1 and len(added) >= NEW_DETAIL:
        relation = "extends"
    if said:
        alignment = max(alignment, ALIGNED)
    return Comparison(
        id=candidate.id, relation=relation, alignment=round(alignment, 4),
        similarity=round(similarity, 4), covers_new=round(covers_new, 4),
        covers_old=round(covers_old, 4), situation=situation, conflicts=tuple(conflicts),
        new_words=added, meaning=None if candidate.meaning is None else round(candidate.meaning, 4),
        apart=apart,
    )


def _subjects_apart(lesson: Lesson, candidate: Lesson, covered: float) -> bool:
    """Whether the two titles name two subjects (:mod:`engram.lifecycle.subjects`) that
    the texts bear out: they differ, or each names its own title's words. The same text
    filed under another title ("Jury duty leave" / "Jury service — pay") is one piece of
    knowledge; one template filled for "HEK293" and for "HeLa" is two."""
    if not titles_apart(lesson.title, candidate.title):
        return False
    if covered < COVERED:
        return True
    mine, theirs = _body_stems(lesson), _body_stems(candidate)
    return bool(own_words(lesson.title, candidate.title) & (mine - theirs)
                or own_words(candidate.title, lesson.title) & (theirs - mine))


def _body_stems(lesson: Lesson) -> frozenset[str]:
    """The content stems of a lesson's text after its title (a text leads with it)."""
    text, title = lesson.text, lesson.title.strip().rstrip(".")
    return analyse(text[len(title):] if text.startswith(title) else text).stems


#: A lesson that says what *was* ("used to", "previously") restates a claim to replace it;
#: so does one that quotes a claim to correct it ("the wiki says …; that is outdated").
_PAST = re.compile(r"\b(?:used to|previously|formerly|originally|until (?:recently|now)|in the past)\b", re.IGNORECASE)
_QUOTED = re.compile(r"\b(?:says|said|claims?|claimed|wrong|incorrect|outdated|out of date|not true|actually)\b",
                     re.IGNORECASE)
#: A clause opening with one of these is about the restated claim itself, not an exception.
_ANAPHORA = frozenset({"it", "they", "this", "that", "these", "those", "no"})
_CLAUSE_SPLIT = re.compile(
    r"\s*[;:]\s+|(?<=[.!?])\s+|,?\s+(?=(?:but|except|unless|because|whereas|although|though|so that)\b)"
    r"|,\s+(?=(?:and|so|which|if|when|while|with)\b)"
)


def _restating_clause(text: str, old: Text, slots: frozenset[str]) -> tuple[frozenset[str], bool] | None:
    """If one clause of ``text`` holds the whole ``old`` claim with nothing against it:
    the words the other clauses add that ``old`` lacks, and whether they state an
    exception (a negation: "…; rollbacks do not"). Otherwise None."""
    parts = [p for p in _CLAUSE_SPLIT.split(text) if p and p.strip()]
    if len(parts) < 2 or not old.stems:
        return None
    for i, part in enumerate(parts):
        clause = without(analyse(part), slots)
        # The whole claim, its values too: a title ("ALB idle timeout. The ALB idle
        # timeout is 120 s") names the subject of "… is 60 s" without saying it again.
        says_values = all(any(same_value(q, c) for c in clause.quantities) for q in old.quantities)
        if containment(old.stems, clause.stems) < EXTENDS_COVER or not says_values or _any_conflict(clause, old):
            continue
        others = [analyse(p) for j, p in enumerate(parts) if j != i]
        if any(o.tokens and o.tokens[0].word in _ANAPHORA and _any_conflict(o, old) for o in others):
            return None  # "…; they cannot": the claim itself, turned round
        rest = frozenset().union(*(o.stems for o in others)) - old.stems - clause.stems - slots
        return rest, any(t.word in NEGATIONS for o in others for t in o.tokens)
    return None


def _any_conflict(new: Text, old: Text) -> bool:
    return bool(
        value_changes(new, old) or polarity_flips(new, old) or antonym_flips(new, old)
        or order_flips(new, old) or rejections(new, old) or substitution(new, old) is not None
    )


def _flipped_words(new: Text, old: Text) -> list[tuple[str, ...]]:
    pairs: list[tuple[str, ...]] = [(w,) for w in (new.denied ^ old.denied) & new.stems & old.stems]
    for word in new.stems - old.stems:
        for opposite in opposites(word):
            if opposite in old.stems - new.stems:
                pairs.append((word, opposite))
    return pairs


_PRIORITY = {"contradicts": 3, "duplicate": 2, "extends": 1, "novel": 0}


def classify(lesson: Lesson, candidates: Sequence[Lesson]) -> Verdict:
    """The verdict for ``lesson`` against ``candidates`` (any order; ties break by id)."""
    comparisons = sorted(
        (compare(lesson, c) for c in candidates if c.text.strip()),
        key=lambda c: (-c.alignment, -_PRIORITY[c.relation], c.id),
    )
    if not comparisons:
        return Verdict("novel", None, 1.0, ("nothing in the vault is about the same thing",))
    decided = [c for c in comparisons if c.relation != "novel"]
    if decided:
        best = decided[0]
        # The best-aligned candidate decides; a weaker match never overrides a stronger one.
        if comparisons[0].relation == "novel" and comparisons[0].alignment - best.alignment > 0.15:
            best = comparisons[0]
    else:
        best = comparisons[0]
    if best.relation != "novel":
        return Verdict(
            best.relation, best.id, _confidence(best), _reasons(best), comparisons=tuple(comparisons)
        )
    related = best.id if best.alignment >= RELATED else None
    warn = related is not None and bool(best.conflicts) and not best.apart
    reasons = ("no existing lesson is about the same thing",) if related is None else (
        f"closest is {best.id} (alignment {best.alignment:.2f}), "
        + _APART.get(best.apart, "not close enough to act on"),
        *((f"possible conflict kept as a warning: {c}" for c in best.conflicts) if warn else ()),
    )
    return Verdict("novel", None, _confidence(best), tuple(reasons), related, warn, tuple(comparisons))


_APART = {"series": "another note of the same series (its title names another number, date or letter)",
          "subject": "a note about another subject (its title names something else)"}


def _confidence(c: Comparison) -> float:
    if c.relation == "novel":
        return round(1.0 - c.alignment / 2, 3)
    if c.relation == "contradicts":
        return round(min(1.0, 0.5 * c.alignment + 0.25 * min(len(c.conflicts), 2)), 3)
    return round(min(1.0, c.alignment), 3)


def _reasons(c: Comparison) -> tuple[str, ...]:
    head = f"about the same thing as {c.id} (alignment {c.alignment:.2f}"
    if c.meaning is not None and c.meaning >= SAME_CLAIM:
        head += f", meaning {c.meaning:.2f}"
    head += ", same situation)" if c.situation == "same" else ")"
    if c.relation == "contradicts":
        return (head, *(f"conflict: {x}" for x in c.conflicts))
    if c.relation == "duplicate":
        if c.covers_new < COVERED:
            return (head, f"it says the same in other words (meaning {c.meaning or 0:.2f}); nothing contradicts")
        return (head, f"it holds {c.covers_new:.0%} of the new lesson's words; nothing contradicts")
    return (
        head,
        f"the new lesson restates {c.covers_old:.0%} of it and adds: {', '.join(c.new_words[:8])}",
    )


def lesson_of(item: Engram, meaning: float | None = None) -> Lesson:
    """An item as the classifier compares it."""
    return Lesson(compared_text(item), item.situation, item.id, meaning, item.title)


def compared_text(item: Engram) -> str:
    """What a candidate says: its content, led by its title unless the content opens
    with it (a learned lesson's title is its first sentence)."""
    return text_of(item.title, item.content)


def text_of(title: str, content: str) -> str:
    """:func:`compared_text` of a title and a content."""
    content = content.strip()
    title = title.strip().rstrip(".")
    if not content:
        return title
    if normalize_text(content).startswith(normalize_text(title)):
        return content
    return f"{title}. {content}"
