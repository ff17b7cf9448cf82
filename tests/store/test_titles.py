"""Titles that name two notes of one series (engram.store.titles): the rule, its
laws, and what it keeps from happening in a vault — templated notes superseding each
other — without hiding a changed value."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.store.titles import series
from engram.vault import Vault


@pytest.mark.parametrize(("title", "other"), [
    ("Sprint 12 retro", "Sprint 13 retro"),
    ("Standup 2026-12-01", "Standup 2026-12-02"),
    ("2026-11-30", "2026-12-01"),
    ("30 November 2026", "1 December 2026"),  # dates in any spelling are one token
    ("Q3 OKRs", "Q4 OKRs"),
    ("INC-4411 postmortem", "INC-4412 postmortem"),
    ("Release 4.2 checklist", "Release 4.3 checklist"),
    ("1:1 with Dana 2026-11-03", "1:1 with Dana 2026-11-10"),
    ("Cohort A — enrollment", "Cohort B — enrollment"),  # a letter labels like a number
    ("Week 48 report, team 2", "Week 49 report, team 3"),  # several naming numbers
])
def test_numbers_and_dates_that_name_a_note(title: str, other: str) -> None:
    assert series(title, other)


@pytest.mark.parametrize(("title", "other"), [
    ("Pool size is 20", "Pool size is 30"),  # after a copula: a value
    ("Retention: 30 days", "Retention: 90 days"),  # a unit
    ("Idle timeout 60s", "Idle timeout 120s"),  # a unit written on the number
    ("Deadline moved to 2026-03-01", "Deadline moved to 2026-04-01"),  # after "to"
    ("Max connections = 100", "Max connections = 200"),
    ("ALB idle timeout", "ALB idle timeout"),  # the same title
    ("Sprint 12 retro", "Sprint 13 review"),  # a word differs too
    ("Sprint 12 retro", "Sprint retro"),
    ("Sprint twelve retro", "Sprint thirteen retro"),  # words, not numbers
    ("", ""),
])
def test_values_and_other_titles_are_no_series(title: str, other: str) -> None:
    assert not series(title, other)


_titles = st.text(alphabet=st.sampled_from("ab 12:-.s"), max_size=12)


@given(_titles, _titles)
def test_series_is_symmetric_and_never_a_title_with_itself(title: str, other: str) -> None:
    assert series(title, other) == series(other, title)
    assert not series(title, title)


TEMPLATE = ("{name} retrospective. What went well: deploys were smooth and the on-call load was light."
            " What to improve: flaky integration tests slowed merges.")


def test_templated_notes_of_a_series_each_stay_active_and_linked(vault: Vault) -> None:
    """The notes differ only by the number that names them: each was superseding the
    one before it, so the vault kept one retro of five."""
    made = [vault.create(f"Sprint {n} retro", TEMPLATE.format(name=f"Sprint {n}"), domain=["retros"])
            for n in range(12, 17)]
    assert [m.outcome for m in made] == ["NEW"] * 5
    assert all(vault.get(m.id).status == "active" for m in made)
    assert not any(m.related for m in made)  # no near match: nothing to decide about
    verdict = vault.learn(TEMPLATE.format(name="Sprint 17"), title="Sprint 17 retro", dry_run=True).verdict
    assert verdict.relation == "novel" and "series" in " ".join(verdict.reasons)


def test_a_changed_value_under_the_same_title_still_supersedes(vault: Vault) -> None:
    """The title clause ("ALB idle timeout.") named the subject without its value and
    was read as a restatement of the old item: the new value was dropped as a
    DUPLICATE. The values must be said again for a clause to restate an item."""
    old = vault.create("ALB idle timeout", "The ALB idle timeout is 60 seconds.", domain=["ops"]).item
    made = vault.create("ALB idle timeout", "The ALB idle timeout is 120 seconds.", domain=["ops"])
    assert made.outcome == "SUPERSEDED" and made.related == old.id
    assert vault.get(old.id).superseded_by == made.id
    assert "120 seconds" in vault.get(made.id).content


def test_a_value_the_title_asserts_is_no_series(vault: Vault) -> None:
    old = vault.learn("Keep the connection pool at 20 per app instance.", title="Pool size is 20").item
    assert old is not None
    learned = vault.learn("Keep the connection pool at 30 per app instance.", title="Pool size is 30")
    assert learned.action == "superseded" and learned.target is not None and learned.target.id == old.id


def test_maintenance_never_groups_the_notes_of_a_series_as_duplicates(vault: Vault) -> None:
    for d in range(1, 6):
        vault.create(f"Standup 2026-12-0{d}", f"Daily standup 2026-12-0{d}. Attendees: Ana, Bo, Chen. Blockers: none.",
                     domain=["daily"], dedupe=False)
    assert vault.maintain("deep").duplicates == ()


def test_a_reimport_writes_the_next_note_of_a_series(vault: Vault, tmp_path: Path) -> None:
    """The next retro, added to the folder after the first import, was left unwritten as
    a near duplicate of the last one."""
    source = tmp_path / "notes"
    source.mkdir()
    for n in (12, 13):
        (source / f"Sprint {n} retro.md").write_text(TEMPLATE.format(name=f"Sprint {n}") + "\n", encoding="utf-8")
    vault.run_import(vault.read_import(source))
    (source / "Sprint 14 retro.md").write_text(TEMPLATE.format(name="Sprint 14") + "\n", encoding="utf-8")
    report = vault.run_import(vault.read_import(source))
    assert [i.title for i in vault.list(limit=10) if i.title.startswith("Sprint 14")] == ["Sprint 14 retro"], report
