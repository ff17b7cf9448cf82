"""Dates in a query: which periods it names, and items written then rank ahead."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram.recall.when import SLACK_DAYS, dated_in, periods
from engram.vault import Vault


def ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [
        ("who did she meet on May 3, 2023?", ts(2023, 5, 3, 18), ts(2023, 5, 2)),
        ("what happened on 3 May 2023", ts(2023, 5, 10), ts(2023, 6, 1)),
        ("notes from 2023-05-03", ts(2023, 5, 3), ts(2023, 5, 30)),
        ("the outage in December 2023", ts(2023, 12, 31), ts(2023, 11, 30)),
        ("camping in June", ts(2021, 6, 20), ts(2021, 8, 1)),
        ("budget decisions made in 2024", ts(2024, 7, 1), ts(2025, 2, 1)),
    ],
)
def test_periods_and_the_slack_after_them(text: str, inside: float, outside: float) -> None:
    wanted = periods(text)
    assert wanted and dated_in(inside, wanted) and not dated_in(outside, wanted)


def test_no_date_no_period_and_the_slack_is_bounded() -> None:
    assert periods("what may happen to the pool?") == () and periods("version 2023 of the API") == ()
    (feb,) = periods("the 31 February 2023 party")  # no such day: the month it names
    assert dated_in(ts(2023, 2, 10), (feb,)) and not dated_in(ts(2023, 4, 1), (feb,))
    day = periods("on May 3, 2023")
    assert dated_in(ts(2023, 5, 3) + (SLACK_DAYS + 0.5) * 86_400, day) is True
    assert dated_in(ts(2023, 5, 4) + (SLACK_DAYS + 0.5) * 86_400, day) is False
    assert dated_in(None, day) is False and dated_in(ts(2023, 5, 3), ()) is False


def test_an_item_written_in_the_named_period_ranks_ahead(vault: Vault) -> None:
    from mergedriver import codec

    def dated(title: str, when: datetime) -> str:
        item = vault.create(title, "We went camping by the lake with the kids.", domain=["life"], dedupe=False).item
        path = vault.root / str(item.path)
        text = path.read_text(encoding="utf-8")
        stamp = codec.format_time(when)
        path.write_text(text.replace(f"createdAt: {item.created_at}", f"createdAt: {stamp}"), encoding="utf-8")
        return item.id

    july = dated("Weekend notes", datetime(2023, 7, 16, tzinfo=UTC))
    june = dated("Weekend notes", datetime(2023, 6, 11, tzinfo=UTC))
    result = vault.search("camping by the lake in June")
    assert [h.id for h in result.hits] == [june, july]
    assert result.hits[0].explanation.parts["time"] > 0 and result.hits[1].explanation.parts["time"] == 0
    plain = vault.search("camping by the lake")
    assert {h.explanation.parts["time"] for h in plain.hits} == {0.0}


def test_the_words_naming_a_date_are_held_by_the_items_written_then(vault: Vault) -> None:
    from mergedriver import codec

    def dated(title: str, body: str, when: datetime) -> str:
        item = vault.create(title, body, domain=["life"], dedupe=False).item
        path = vault.root / str(item.path)
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(f"createdAt: {item.created_at}", f"createdAt: {codec.format_time(when)}"), encoding="utf-8")
        return item.id

    january = dated("Movie night", "We watched a movie with Joanna, in May 2022 as she wrote.", datetime(2022, 1, 21, tzinfo=UTC))
    may = dated("Evening notes", "Joanna and I watched something funny.", datetime(2022, 5, 2, tzinfo=UTC))
    result = vault.search("What movie did Joanna watch on 1 May, 2022?", record=False)
    by_id = {h.id: h for h in result.hits}
    written_then, before = by_id[may].explanation, by_id[january].explanation
    # Its timestamp answers for "1 May 2022", whatever its text says...
    assert {"1", "may", "2022"} <= set(written_then.matched_terms) and written_then.parts["time"] > 0
    # ...and text naming the date does not stand in for having been written then.
    assert {"1", "may", "2022"} <= set(before.missing_terms) and before.parts["time"] == 0
    # Holding every word but the date is not holding every word.
    assert before.parts["complete"] == 0 and written_then.parts["complete"] == 0
    assert by_id[may].relevance is not None and by_id[may].relevance > 0.5
    # A query that is nothing but a date matches it as text, as any other word.
    only = vault.search("May 2022", record=False)
    assert only.status == "ok" and only.hits[0].id == january
    assert set(only.hits[0].explanation.matched_terms) == {"may", "2022"}


def test_an_item_found_by_meaning_alone_is_dated_like_one_found_by_words(vault: Vault) -> None:
    """The period a question names is answered by the item's time whichever source found
    it: here no word of the question but the date is in either note."""
    from mergedriver import codec

    def dated(when: datetime) -> str:
        item = vault.create("Weekend notes", "We went camping by the lake with the kids.", domain=["life"], dedupe=False).item
        path = vault.root / str(item.path)
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(f"createdAt: {item.created_at}", f"createdAt: {codec.format_time(when)}"), encoding="utf-8")
        return item.id

    july = dated(datetime(2023, 7, 16, tzinfo=UTC))
    june = dated(datetime(2023, 6, 11, tzinfo=UTC))
    result = vault.search("sleeping in a tent beside the water with our children in June", record=False)
    by_id = {h.id: h for h in result.hits}
    assert by_id[june].via == "meaning" and by_id[june].explanation.matched_terms == ()
    assert by_id[june].explanation.parts["time"] > 0 and by_id[july].explanation.parts["time"] == 0
    assert [h.id for h in result.hits][:2] == [june, july]
