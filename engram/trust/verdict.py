"""The screen's verdict: the rules that matched a write (:class:`Finding`) and what they
add up to (:class:`Screening`). A write is quarantined when the distinct rules it matches
weigh :data:`THRESHOLD` or more (see :mod:`engram.trust.screen`). The meaning stage
(:mod:`engram.trust.likeness`) adds at most one finding of its own, ``screen.meaning``,
whose note names the attack class it is like and the cosines; :attr:`Screening.meaning`
says whether that stage ran (``on``), could not (``unavailable``) or was not asked
(``off``)."""

from __future__ import annotations

from dataclasses import dataclass

#: A text is quarantined when the distinct rules it matches weigh at least this much.
THRESHOLD = 1.0


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule that matched: what, where (field and line), and the matched words."""

    rule: str
    category: str
    weight: float
    field: str
    line: int
    excerpt: str
    #: Why, beyond the rule's name: the meaning stage's nearest class and cosines.
    note: str = ""

    def where(self, body_line: int | None = None) -> str:
        """``in content line 3``; given ``body_line``, the lines of the item's file above its
        content (:func:`engram.store.notes.body_offset`), ``on line 23`` of the file, the
        line a person opens (findings in other fields keep their field's line)."""
        if body_line is not None and self.field == "content":
            return f"on line {self.line + body_line}"
        return f"in {self.field} line {self.line}"

    def describe(self, body_line: int | None = None) -> str:
        note = f" [{self.note}]" if self.note else ""
        return f"{self.rule} ({self.category}) {self.where(body_line)}: {self.excerpt!r}{note}"


@dataclass(frozen=True, slots=True)
class Screening:
    """The screen's verdict over the fields of one write."""

    findings: tuple[Finding, ...] = ()
    #: The meaning stage: ``on``, ``unavailable`` (rules alone; ``problem`` says why) or ``off``.
    meaning: str = "off"
    problem: str = ""

    @property
    def score(self) -> float:
        best: dict[str, float] = {}
        for f in self.findings:
            best[f.rule] = max(best.get(f.rule, 0.0), f.weight)
        return round(sum(best.values()), 4)

    @property
    def quarantine(self) -> bool:
        return self.score >= THRESHOLD

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.category for f in sorted(self.findings, key=lambda f: -f.weight)))

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.rule for f in self.findings))

    def reason(self, body_line: int | None = None) -> str:
        """One sentence for the audit log and the writer: the classes and the strongest
        matches (where: :meth:`Finding.where`, by the file's line given ``body_line``)."""
        if not self.findings:
            return ""
        top = sorted(self.findings, key=lambda f: (-f.weight, f.field, f.line))[:3]
        alone = "; meaning unavailable, rules alone" if self.meaning == "unavailable" else ""
        return (
            f"instruction-shaped text ({', '.join(self.categories)}; score {self.score:g}{alone}): "
            + "; ".join(f"{f.where(body_line).removeprefix('in ')} {f.excerpt!r} [{f.rule}{': ' + f.note if f.note else ''}]"
                        for f in top)
        )

    def without(self, earlier: Screening) -> Screening:
        """The findings not already present in ``earlier`` (same rule, same words)."""
        seen = {(f.rule, f.excerpt) for f in earlier.findings}
        kept = tuple(f for f in self.findings if (f.rule, f.excerpt) not in seen)
        return Screening(kept, self.meaning, self.problem)

    def with_meaning(self, findings: tuple[Finding, ...], status: str, problem: str = "") -> Screening:
        """These findings with the meaning stage's added, and its status."""
        return Screening(self.findings + findings, status, problem)
