"""Free-text relation types of other tools (``works_at``, ``requires``, ``relates_to``) as
engram's twelve synapse kinds.

A type that names a kind (``depends_on``, ``part-of``, ``Part Of``) is that kind; a
common synonym maps to the kind that means the same (``requires`` → ``depends_on``,
``replaces`` → ``supersedes``); anything else becomes ``contextualizes`` — "this is
context for that", the weakest claim — and the original type is kept in the edge's
evidence, so nothing the source said is lost and nothing is claimed that it did not say.
"""

from __future__ import annotations

import re

from engram.store.model import SYNAPSE_KINDS

FALLBACK = "contextualizes"

SYNONYMS: dict[str, str] = {
    # structural
    "implements": "extends", "specializes": "extends", "refines": "extends", "builds_on": "extends",
    "belongs_to": "part_of", "member_of": "part_of", "component_of": "part_of", "child_of": "part_of",
    "alternative_to": "similar_to", "like": "similar_to", "same_as": "similar_to", "related_to": "similar_to",
    # causal
    "requires": "depends_on", "needs": "depends_on", "uses": "depends_on", "built_with": "depends_on",
    "leads_to": "causes", "results_in": "causes", "triggers": "causes",
    "comes_after": "follows", "next_after": "follows",
    # evidential
    "based_on": "derives_from", "inspired_by": "derives_from", "cites": "derives_from",
    "learned_from": "derives_from", "conflicts_with": "contradicts", "refutes": "contradicts",
    "example_of": "exemplifies", "instance_of": "exemplifies", "illustrates": "exemplifies",
    # temporal
    "replaces": "supersedes", "obsoletes": "supersedes", "summarizes": "consolidates",
}


def normalize(relation: str) -> str:
    """``Part Of`` / ``part-of`` / ``partOf`` → ``part_of``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", relation.strip())
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")


def kind_for(relation: str) -> tuple[str, bool]:
    """(synapse kind, exact): exact is False when the type was mapped or fell back, and
    the caller should keep the original type in the evidence."""
    name = normalize(relation)
    if name in SYNAPSE_KINDS:
        return name, True
    return SYNONYMS.get(name, FALLBACK), False
