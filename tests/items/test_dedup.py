"""Near-duplicates: template-filled pages are not duplicates of each other; real copies are;
the check reads only short posting lists whatever the vault's size."""

from __future__ import annotations

import random

from engram.adopt.records import from_objects
from engram.items import writing
from engram.store.dedup import boilerplate, candidate_match, prepare, similarity
from engram.vault import Vault

TEMPLATE = """## About

Use this page to keep track of who this person is, what they work on and how to work
well with them. Update it after every meeting; link meetings with the person's name.

## Working together

- Preferred channel:
- Time zone:
- Best time to reach them:

## Notes

{fill}

## Meetings

![[Meetings.base#Person]]
"""
FIRST = ["Ada", "Ben", "Chen", "Dana", "Emil", "Femi", "Grace", "Hana", "Ivan", "Jae", "Kofi", "Lena", "Maya", "Noor", "Omar", "Priya", "Rosa", "Sami", "Uma", "Wei"]
LAST = ["Abara", "Berg", "Costa", "Dubois", "Haddad", "Ito", "Jensen", "Kim", "Mehta", "Novak", "Okafor", "Rossi", "Santos", "Tanaka", "Weber"]
ROLES = ("staff engineer", "designer", "SRE", "product manager", "data scientist")
TEAMS = ("Payments", "Search", "Platform", "Growth")


def person_pages(n: int, *, fills: bool, seed: int = 3) -> list[dict[str, object]]:
    rng = random.Random(seed)
    names = [f"{a} {b}" for a in FIRST for b in LAST]
    rng.shuffle(names)
    pages = []
    for name in names[:n]:
        fill = (f"{name.split()[0]} is a {rng.choice(ROLES)} on {rng.choice(TEAMS)} and asked about "
                f"{rng.choice(['the launch', 'on-call', 'the migration', 'hiring'])}.") if fills else ""
        pages.append({"title": name, "content": TEMPLATE.format(fill=fill), "domain": "people"})
    return pages


def test_fifty_template_pages_imported_at_once_all_survive(vault: Vault) -> None:
    pages = person_pages(50, fills=False)  # nothing filled in but the name: the hardest case
    report = vault.run_import(from_objects([(i, p, None) for i, p in enumerate(pages, 1)], "people.json"))
    assert report.counts["NEW"] == 50 and len(vault.list()) == 50


def test_fifty_template_pages_added_one_by_one_all_survive(vault: Vault) -> None:
    for page in person_pages(50, fills=True):
        result = vault.create(str(page["title"]), str(page["content"]), domain=["people"])
        assert result.outcome == "NEW", (page["title"], result.item.title, result.similarity)
    assert len(vault.list()) == 50


def test_a_copy_of_a_template_page_is_still_a_near_duplicate(vault: Vault) -> None:
    pages = person_pages(20, fills=True)
    for page in pages:
        vault.create(str(page["title"]), str(page["content"]))
    copy = str(pages[7]["content"]).replace(" and asked about", " and recently asked about")
    result = writing.create(vault.state, str(pages[7]["title"]), copy)  # the check itself, before learn decides
    assert result.outcome == "UPDATE" and result.item.title == pages[7]["title"]


def test_edited_copy_among_distinct_notes_is_found(vault: Vault) -> None:
    body = " ".join(f"Sentence {i} about replication lag and failover drills in region {i % 7}." for i in range(30))
    original = vault.create("Failover drill notes", body)
    vault.create("Unrelated", "Kafka consumer groups rebalance when a member leaves the group.")
    edited = writing.create(vault.state, "Failover drill notes (copy)", body.replace("region 3", "region three"))
    assert edited.outcome == "UPDATE" and edited.id == original.id and (edited.similarity or 0) >= 0.9


def test_boilerplate_lines_do_not_count() -> None:
    a, b = TEMPLATE.format(fill="Ada likes Rust."), TEMPLATE.format(fill="Ben plays chess on Sundays.")
    others = [prepare(TEMPLATE.format(fill=f"note {i}")) for i in range(3)]
    shared = boilerplate(prepare(a), others)
    assert similarity("Person", a, "Person", b) > 0.8  # the template alone makes them look alike
    assert similarity("Person", a, "Person", b, boilerplate=shared) < 0.3
    # different subjects: near-identical text is not enough when each names its own
    assert similarity("Ada Kim", "Ada is an SRE on Payments.", "Ben Ito", "Ben is an SRE on Payments.", 0.9) < 0.9
    same = "Autovacuum falls behind after the nightly retention job; lower the scale factor to 0.01 " * 3
    assert similarity("Tune autovacuum", same, "Vacuum settings for orders", same, 0.9) == 1.0


def test_candidate_words_held_by_too_many_items_are_not_used() -> None:
    df = {"payments": 5000, "jitter": 3, "backoff": 40, "retry": 9000}
    query = candidate_match(["payments", "jitter", "backoff", "retry"], df, max_postings=256)
    assert query == '("jitter" AND "backoff")'
    assert candidate_match(["payments", "retry"], df, max_postings=256) is None
