"""The ``lifecycle`` section of ``engram.yaml``: feedback, failure, freshness, maintenance.

Every key is optional (defaults below); a value of the wrong type is an InvalidInput
naming the key. The team shares these, so every machine moves importance, proposes
archives and ages knowledge the same way::

    lifecycle:
      feedbackStep: 0.1        # the most one piece of feedback moves importance
      hebbianShare: 0.25       # share of that change a neighbour gets, times edge weight
      strongEdge: 0.5          # edges at least this heavy carry the share
      shareFailures: false     # a failure lowers only the item that failed
      archiveAfterFailures: 3  # failures (more than successes) before an archive proposal
      forgetAfterFailures: 5   # failures of a frozen item before a forget proposal
      halfLifeDays: {fact: 90, observation: 60, pattern: 365, ...}
      versionHalfLifeFactor: 0.5   # facts naming versions age twice as fast
      staleBelow: 0.5          # freshness under this is reported by `engram stale`
      candidates: 8            # existing lessons `learn` compares with
      samplingBudgetSeconds: 10
      schedule: {light: 60, deep: 1440, rem: 10080}  # minutes, in `engram serve`; 0 = off
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from engram.errors import InvalidInput
from engram.items.state import VaultState

DEFAULT_HALF_LIVES: Mapping[str, float] = MappingProxyType(
    {
        "observation": 60.0,
        "fact": 90.0,
        "hypothesis": 45.0,
        "need": 90.0,
        "decision": 180.0,
        "procedure": 180.0,
        "skill": 240.0,
        "pattern": 365.0,
    }
)
DEFAULT_SCHEDULE: Mapping[str, float] = MappingProxyType({"light": 0.0, "deep": 0.0, "rem": 0.0})


@dataclass(frozen=True, slots=True)
class LifecycleSettings:
    feedback_step: float = 0.1
    hebbian_share: float = 0.25
    strong_edge: float = 0.5
    share_failures: bool = False
    archive_after_failures: int = 3
    forget_after_failures: int = 5
    half_life_days: Mapping[str, float] = field(default_factory=lambda: DEFAULT_HALF_LIVES)
    version_half_life_factor: float = 0.5
    stale_below: float = 0.5
    candidates: int = 8
    sampling_budget_seconds: float = 10.0
    schedule: Mapping[str, float] = field(default_factory=lambda: DEFAULT_SCHEDULE)

    def validated(self) -> LifecycleSettings:
        for name in ("feedback_step", "hebbian_share", "strong_edge", "version_half_life_factor", "stale_below"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidInput(
                    f"engram.yaml: lifecycle.{_camel(name)} must be from 0 to 1, not {value}.",
                    field=name, hint="Fix the settings file.",
                )
        for name in ("archive_after_failures", "forget_after_failures", "candidates"):
            if getattr(self, name) < 1:
                raise InvalidInput(
                    f"engram.yaml: lifecycle.{_camel(name)} must be at least 1.", field=name,
                    hint="Fix the settings file.",
                )
        for kind, days in self.half_life_days.items():
            if not isinstance(days, (int, float)) or days <= 0:
                raise InvalidInput(
                    f"engram.yaml: lifecycle.halfLifeDays.{kind} must be a positive number of days.",
                    field="half_life_days", hint="e.g. fact: 90",
                )
        return self


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def lifecycle_settings(state: VaultState) -> LifecycleSettings:
    """The vault's lifecycle settings (parsed once per loaded settings file)."""
    return state.settings.section("lifecycle", LifecycleSettings).validated()
