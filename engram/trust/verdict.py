"""The screen's verdict: the rules that matched a write (:class:`Finding`) and what they
add up to (:class:`Screening`). A write is quarantined when the distinct rules it matches
weigh :data:`THRESHOLD` or more (see :mod:`engram.trust.screen`)."""

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

    def describe(self) -> str:
        return f"{self.rule} ({self.category}) in {self.field} line {self.line}: {self.excerpt!r}"


@dataclass(frozen=True, slots=True)
class Screening:
    """The screen's verdict over the fields of one write."""

    findings: tuple[Finding, ...] = ()

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

    def reason(self) -> str:
        """One sentence for the audit log and the writer: the classes and the strongest matches."""
        if not self.findings:
            return ""
        top = sorted(self.findings, key=lambda f: (-f.weight, f.field, f.line))[:3]
        return (
            f"instruction-shaped text ({', '.join(self.categories)}; score {self.score:g}): "
            + "; ".join(f"{f.field} line {f.line} {f.excerpt!r} [{f.rule}]" for f in top)
        )

    def without(self, earlier: Screening) -> Screening:
        """The findings not already present in ``earlier`` (same rule, same words)."""
        seen = {(f.rule, f.excerpt) for f in earlier.findings}
        return Screening(tuple(f for f in self.findings if (f.rule, f.excerpt) not in seen))
