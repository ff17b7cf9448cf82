"""The ``recall`` section of ``engram.yaml``: ranking weights, expansion, abstention, tiers.

Committed with the vault, so every machine ranks alike. Read once per opened vault
(:meth:`engram.store.settings.Settings.section` caches the parse); docs/recall.md
explains each key. ``recall.freshness`` shares the section but belongs to the index
(:class:`engram.index.catalog.FreshnessSettings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from engram.errors import InvalidInput
from engram.items.state import VaultState
from engram.recall.models import AUTO, check

DEFAULT_EDGE_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "extends": 0.9,
        "part_of": 0.8,
        "consolidates": 0.8,
        "depends_on": 0.7,
        "derives_from": 0.7,
        "exemplifies": 0.7,
        "similar_to": 0.6,
        "causes": 0.6,
        "follows": 0.5,
        "contextualizes": 0.5,
        "links_to": 0.5,  # a wikilink typed in a note (engram.index.wikilinks)
        "contradicts": 0.0,  # reported as warnings, never spread
        "supersedes": 0.0,  # handled by succession, never spread
    }
)


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """The ``recall`` section of ``engram.yaml`` (camelCase keys there); see docs/recall.md."""

    title_weight: float = 5.0
    tags_weight: float = 3.0
    summary_weight: float = 2.0
    body_weight: float = 1.0
    relevance: float = 1.0
    coverage: float = 0.0
    recency: float = 0.05
    importance: float = 0.1
    reinforcement: float = 0.05
    heat: float = 0.02
    complete: float = 0.5
    time: float = 0.3
    #: Off (0) by default: the model is an optional extra (engram.recall.semantic).
    semantic: float = 0.0
    #: The sentence encoder (engram.recall.encoder, engram.recall.models): which model
    #: (auto: the best this machine has), the weight of a hit's closeness in meaning, and
    #: the cosine at which closeness alone makes an answer confident (None: the model's own).
    model: str = AUTO
    meaning: float = 2.0
    min_similarity: float | None = None
    #: Items a search finds by meaning alone, beside those it finds by words.
    meaning_candidates: int = 20
    #: A search embeds the items with no vector yet itself when there are at most this many
    #: (a new or small vault); beyond, long-lived processes and `reindex --embed` do it.
    embed_on_search: int = 64
    graph: float = 0.6
    recency_half_life_days: float = 180.0
    heat_half_life_days: float = 14.0
    min_relevance: float = 0.25
    candidates: int = 20
    candidate_postings: int = 1000
    expansion_seeds: int = 5
    max_hops: int = 2
    hop_decay: float = 0.6
    min_activation: float = 0.05
    fan_limit: int = 4
    edge_weights: Mapping[str, float] = field(default_factory=lambda: DEFAULT_EDGE_WEIGHTS)
    limit: int = 10
    token_budget: int = 2000

    def __post_init__(self) -> None:
        check(self.model)  # an unknown model is refused when the settings are read
        m = self.min_similarity
        if m is not None and (isinstance(m, bool) or not isinstance(m, (int, float)) or not -1.0 <= m <= 1.0):
            raise InvalidInput(
                f"engram.yaml: recall.minSimilarity is {m!r}, expected a cosine between -1 and 1.",
                field="recall.minSimilarity", hint="Fix the settings file, or remove the key for the model's own value.",
            )


def recall_settings(state: VaultState) -> RecallSettings:
    """The vault's ``recall`` settings (parsed once per opened vault)."""
    return state.settings.section("recall", RecallSettings)
