"""Titles that name two subjects (engram.lifecycle.subjects): the rule, its laws, and
what it keeps from happening — a note about another subject superseding one whose
title it shares most of — without hiding a changed value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.lifecycle.subjects import apart, subject
from engram.vault import Vault


@pytest.mark.parametrize(("title", "other"), [
    ("Smoke detector batteries — hallway", "Smoke detector batteries — kitchen"),  # a word swapped
    ("Cell culture: HEK293 passage limit", "Cell culture: HeLa passage limit"),
    ("SSH access to staging", "SSH access to production"),  # "to" before a word is no value
    ("Monstera watering", "Monstera watering in winter"),  # a qualifier added
    ("Checkout: Redis cache TTL for carts", "Checkout: Redis cache TTL for tax tables"),
    ("Kubernetes version (prod cluster)", "Kubernetes version (staging cluster)"),
    ("Pro plan price", "Pro plan price (annual billing)"),
])
def test_titles_that_name_two_subjects(title: str, other: str) -> None:
    assert apart(title, other)


@pytest.mark.parametrize(("title", "other"), [
    ("Parental leave", "Parental leave policy"),  # a word added, not swapped
    ("Billing service owner", "Owner of the billing service"),
    ("Design review is on Thursdays at 14:00", "Design review is on Tuesdays at 14:00"),  # a value
    ("Gym membership renews on 14 March", "Gym membership renews on 1 April"),
    ("Postgres primary lives on db-prod-03", "Postgres primary now on db-prod-07"),
    ("Use Sentry for errors", "Use Rollbar for errors"),
    ("Banana bread (Grandma's)", "Grandma's banana bread"),  # the same words, moved
    ("Pin every dependency to an exact version in the lock file",
     "Pin all dependencies to exact versions in the lock file"),  # "every" before a word
    ("", "Anything"),
])
def test_titles_of_one_subject(title: str, other: str) -> None:
    assert not apart(title, other)


def test_a_title_splits_into_subject_qualifiers_and_values() -> None:
    parts = subject("Design review (mobile squad) is on Thursdays")
    assert parts.words == {"design", "review"} and parts.qualifiers == {"mobil", "squad"}
    assert parts.values == {"thursday"}


_titles = st.lists(st.sampled_from(["pool", "size", "is", "in", "winter", "for", "carts", "(", ")", "20", "on", "x"]),
                   max_size=7).map(" ".join)


@given(_titles, _titles)
def test_apart_is_symmetric_and_never_a_title_with_itself(title: str, other: str) -> None:
    assert apart(title, other) == apart(other, title)
    assert not apart(title, title)


def test_a_lesson_about_another_subject_supersedes_nothing(vault: Vault) -> None:
    """"… for tax tables" read as a changed TTL of "… for carts": the carts' item was
    superseded by a lesson about something else."""
    carts = vault.learn("Cart contents are cached in Redis with a 10-minute TTL.",
                        title="Checkout: Redis cache TTL for carts").item
    assert carts is not None
    learned = vault.learn("Tax-rate tables are cached in Redis with a 24-hour TTL.",
                          title="Checkout: Redis cache TTL for tax tables")
    assert learned.action != "superseded" and vault.get(carts.id).status == "active"
    assert "another subject" in " ".join(learned.verdict.reasons)
    changed = vault.learn("Cart contents are cached in Redis with a 30-minute TTL.",
                          title="Checkout: Redis cache TTL for carts")
    assert changed.action == "superseded" and changed.target is not None and changed.target.id == carts.id


def test_one_text_under_two_titles_is_one_subject_and_one_template_for_two_is_two(vault: Vault) -> None:
    """Titles alone would part "Jury duty leave" from "Jury service — pay" over the same
    text, and join nothing; the texts decide: the same words throughout are one piece of
    knowledge, one template naming "HEK293" and "HeLa" in its text is two."""
    text = "Employees on jury duty receive full pay for up to 10 working days. Give HR a copy of the summons."
    jury = vault.learn(text, title="Jury duty leave").item
    again = vault.learn(text, title="Jury service — pay")
    assert again.action == "reinforced" and again.target is not None and jury is not None
    assert again.target.id == jury.id
    hek = vault.learn("Discard HEK293 cultures after passage 30; thaw a fresh vial from the working bank.",
                      title="Cell culture: HEK293 passage limit").item
    hela = vault.learn("Discard HeLa cultures after passage 20; thaw a fresh vial from the working bank.",
                       title="Cell culture: HeLa passage limit")
    assert hek is not None and hela.action != "superseded" and vault.get(hek.id).status == "active"
