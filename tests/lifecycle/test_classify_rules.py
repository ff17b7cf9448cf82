"""One test per general rule of the offline classifier, each with a lookalike it must
not change: the rule's reason in words, and the proof it does not over-reach.

Rules were added for classes of misses found by a set written before the classifier was
read (``benchmarks/data/learn-holdout2.yaml``; docs/benchmarks.md, "Learning").
"""

from __future__ import annotations

from engram.lifecycle.classify import Lesson, classify


def verdict(old: str, new: str) -> str:
    return classify(Lesson(new), [Lesson(old, id="a")]).relation


def test_irregular_past_forms_are_their_verb() -> None:
    old = "Backups of the billing database are kept for 30 days."
    assert verdict(old, "We keep billing database backups for 30 days.") == "duplicate"
    assert verdict("Do not write PII to application logs.", "PII must never be written to application logs.") == "duplicate"
    # the lookalike: the same verb with another value still contradicts
    assert verdict(old, "We keep billing database backups for 90 days.") == "contradicts"


def test_prepositions_and_indefinite_pronouns_are_no_content() -> None:
    old = "Never run terraform apply from a laptop; applies go through the Atlantis pipeline."
    new = "Terraform applies must go through Atlantis and are never run from someone's laptop."
    assert verdict(old, new) == "duplicate"
    # the lookalike: another tool in the same frame is not the same lesson
    assert verdict("Run reporting queries against the read replica.",
                   "Run reporting queries against the primary database.") != "duplicate"
