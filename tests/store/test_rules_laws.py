"""Validation rules: every refusal names its field and says what is accepted; what passes
is stored exactly as a reader of the file will see it.

The pure rules of :mod:`engram.store.rules` are checked directly (other modules build on
them), and the refusals that matter most to users also through ``Vault.create`` /
``Vault.update`` with a snapshot of the vault, which must not change.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput, UnknownKind
from engram.store import rules
from engram.store.format import render_engram
from engram.store.model import Engram
from engram.store.notes import read_note
from engram.vault import Vault
from mergedriver import codec
from tests.conftest import snapshot

# ---------------------------------------------------------------------- text


@pytest.mark.parametrize("bad", ["a\x00b", "lone \ud800 surrogate"])
@pytest.mark.parametrize(
    "field", ["title", "content", "summary", "tags", "extra"]
)
def test_nul_and_lone_surrogates_are_refused_everywhere_and_change_nothing(vault: Vault, field: str, bad: str) -> None:
    vault.create("Existing", "body")
    before = snapshot(vault)
    args: dict[str, Any] = {"title": "Fine", "content": "fine body"}
    if field in ("title", "content", "summary"):
        args[field] = bad
    elif field == "tags":
        args["tags"] = ["ok", bad]
    else:
        args["extra"] = {"note": ["nested", {"deep": bad}]}
    with pytest.raises(InvalidInput) as err:
        vault.create(**args)
    assert err.value.hint and err.value.exit_code == 2
    assert snapshot(vault) == before


def test_a_domain_drops_what_no_folder_name_may_hold() -> None:
    assert rules.domain_tags(["ops", "a\x00b"]) == ("ops", "a-b")
    assert rules.domain_tags(["lone \ud800 surrogate"]) == ("lone-surrogate",)


def test_text_limits_count_characters_and_strip_edges() -> None:
    assert rules.text("title", "  padded  ", 10) == "padded"
    assert rules.text("title", "é" * 10, 10) == "é" * 10
    with pytest.raises(InvalidInput, match="11 characters; the limit is 10") as err:
        rules.text("title", "é" * 11, 10)
    assert err.value.field == "title" and "body" in (err.value.hint or "")
    with pytest.raises(InvalidInput, match="is empty"):
        rules.text("title", " \t\n ", 10, required=True)
    with pytest.raises(InvalidInput, match="one line"):
        rules.text("title", "two\rlines", 50, single_line=True)
    with pytest.raises(InvalidInput, match="must be text, not int"):
        rules.text("summary", 5, 50)


def test_content_is_limited_in_utf8_bytes_and_stored_canonically() -> None:
    assert rules.content_text("a\r\nb") == "a\nb\n"
    assert rules.content_text("") == ""
    limit = rules.MAX_CONTENT_BYTES
    rules.content_text("x" * limit)
    with pytest.raises(InvalidInput, match="bytes; the limit") as err:
        rules.content_text("é" * (limit // 2 + 1))  # fewer characters than the limit, more bytes
    assert err.value.field == "content" and "part_of" in (err.value.hint or "")


# ---------------------------------------------------------------------- numbers, choices


@pytest.mark.parametrize("value", [0, 1, 0.5, "0.25", " 0.75 ", 1e-7])
def test_units_accept_numbers_and_numeric_text_from_zero_to_one(value: Any) -> None:
    assert 0.0 <= rules.unit("importance", value) <= 1.0


@pytest.mark.parametrize("value", [-0.01, 1.0001, "high", None, float("nan"), float("inf"), [0.5], True, False])
def test_units_refuse_anything_else(value: Any) -> None:
    with pytest.raises(InvalidInput) as err:
        rules.unit("importance", value)
    assert err.value.field == "importance" and err.value.hint == "e.g. 0.7"


def test_units_are_rounded_to_six_places() -> None:
    assert rules.unit("confidence", 0.123456789) == 0.123457


def test_a_bad_kind_is_unknown_kind_listing_the_kinds_other_choices_invalid_input() -> None:
    with pytest.raises(UnknownKind) as err:
        rules.choice("kind", "opinion", ("fact", "pattern"))
    assert err.value.kind == "opinion" and "fact, pattern" in (err.value.hint or "")
    with pytest.raises(InvalidInput) as plain:
        rules.choice("status", "gone", ("active", "draft"))
    assert type(plain.value) is InvalidInput and plain.value.field == "status"
    assert "active, draft" in str(plain.value)


@pytest.mark.parametrize("name", ["retrievalCount", "failedUses"])
@pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
def test_counts_are_whole_numbers(name: str, value: Any) -> None:
    changes = {name: value}
    with pytest.raises(InvalidInput, match="whole number"):
        rules.normalize_changes(changes)


# ---------------------------------------------------------------------- tags and domains


def test_tags_are_normalised_deduplicated_and_bounded() -> None:
    assert rules.tag_list(["#Gotcha", "gotcha", "  Load  Balancer ", "", "#"]) == ("gotcha", "load-balancer")
    assert rules.tag_list("single") == ("single",)
    with pytest.raises(InvalidInput, match="longer than 64"):
        rules.tag_list(["x" * 65])
    rules.tag_list(["x" * 64])
    with pytest.raises(InvalidInput, match="65 tags; at most 64"):
        rules.tag_list([f"t{i}" for i in range(65)])
    assert len(rules.tag_list([f"t{i % 64}" for i in range(500)])) == 64  # repeats do not count
    with pytest.raises(InvalidInput, match="not text"):
        rules.tag_list(["ok", 3])
    with pytest.raises(InvalidInput, match="list of words"):
        rules.tag_list(7)


def test_domains_from_text_or_lists_are_the_same_folders() -> None:
    assert rules.domain_tags("Ops/Postgres") == rules.domain_tags(["ops", "postgres"]) == ("ops", "postgres")
    assert rules.domain_tags("ops\\windows") == ("ops", "windows")
    assert rules.domain_tags("") == ()
    with pytest.raises(InvalidInput, match="not text"):
        rules.domain_tags(["ops", 3])


# ---------------------------------------------------------------------- extras: stored as read


extra_keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=20
).map(str.strip).filter(lambda k: bool(k) and k not in {key for key, _ in codec.ENGRAM_KEYS})
extra_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
    st.sampled_from(["1e3", "0x1F", "yes", "no", "null", "~", "2026-01-01", "12:30", "[[Link]]", "- a", "a: b", "#x", "'", '"']),
)
extra_values = st.recursive(
    extra_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abcxyz", min_size=1, max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150)
@given(st.dictionaries(extra_keys, extra_values, max_size=4))
def test_an_extra_is_stored_exactly_as_the_file_will_read_it_back(extra: dict[str, Any]) -> None:
    try:
        stored = rules.extra_values(extra)
    except InvalidInput as exc:
        assert exc.field == "extra"
        return
    at = "2026-01-02T03:04:05.000Z"
    item = Engram(id="01JABCDEFGHJKMNPQRSTVWXYZ0", title="T", created_at=at, updated_at=at, extra=MappingProxyType(stored))
    back = read_note(render_engram(item), "t.md").item
    assert dict(back.extra) == stored


@pytest.mark.parametrize("key", ["", " padded", "padded ", "two\nlines", "tab\there", "x" * 65, "title", "domainTags", 3])
def test_extra_keys_must_be_property_names(key: Any) -> None:
    with pytest.raises(InvalidInput) as err:
        rules.extra_values({key: "v"})
    assert err.value.field == "extra"


def test_property_names_as_obsidian_shows_them_are_accepted() -> None:
    names = ["Due date", "obsidian.status", "Ångström", "x" * 64, "a"]
    assert list(rules.extra_values(dict.fromkeys(names, 1))) == names


def test_a_structure_that_contains_itself_is_refused_not_a_crash() -> None:
    loop: list[Any] = ["a"]
    loop.append(loop)
    with pytest.raises(InvalidInput, match="cannot be stored"):
        rules.extra_values({"loop": loop})
    with pytest.raises(InvalidInput, match="cannot be stored"):
        rules.extra_values({"thing": object()})


# ---------------------------------------------------------------------- updates


def test_normalize_changes_accepts_both_spellings_and_sorts_extras() -> None:
    out = rules.normalize_changes({"verificationStatus": "verified", "last_verified_at": "2026-01-02T03:04:05Z", "Due date": "soon", "old": None})
    assert out["verification_status"] == "verified"
    assert out["last_verified_at"] == "2026-01-02T03:04:05.000Z"
    assert out["extra"] == ({"Due date": "soon"}, {"old"})


@pytest.mark.parametrize("key", [*sorted(rules.IMMUTABLE), "createdAt", "contentHash", "updatedBy"])
def test_bookkeeping_fields_cannot_be_set_by_an_update(key: str) -> None:
    with pytest.raises(InvalidInput, match="cannot be changed by an update") as err:
        rules.normalize_changes({key: "x"})
    assert err.value.field == key


def test_only_optional_fields_can_be_cleared() -> None:
    assert rules.normalize_changes({"supersededBy": None, "steps": None}) == {"superseded_by": None, "steps": None}
    for key in ("title", "importance", "kind", "tags"):
        with pytest.raises(InvalidInput, match="cannot be empty"):
            rules.normalize_changes({key: None})
    with pytest.raises(InvalidInput, match="mapping of field to value"):
        rules.normalize_changes([("title", "x")])  # type: ignore[arg-type]


def test_apply_changes_moves_the_slug_with_the_title_and_the_hash_with_the_content() -> None:
    item = Engram(id="01JABCDEFGHJKMNPQRSTVWXYZ0", title="Old title", slug="old-title", content="a\n",
                  content_hash=codec.content_hash("a\n"), content_size=2, extra=MappingProxyType({"keep": 1, "drop": 2}))
    new = rules.apply_changes(item, rules.normalize_changes({"title": "New Title!", "content": "héllo", "drop": None, "add": "x"}))
    assert (new.slug, new.content) == ("new-title", "héllo\n")
    assert new.content_hash == codec.content_hash("héllo\n") and new.content_size == len("héllo\n".encode())
    assert dict(new.extra) == {"keep": 1, "add": "x"}
    same = rules.apply_changes(item, rules.normalize_changes({"title": "Old title"}))
    assert same.slug == "old-title"  # a title set to itself keeps the slug
    assert rules.changed_fields(item, new) == ("title", "drop", "add", "content")
    assert rules.changed_fields(item, item.with_changes(version=9, updated_at="2030-01-01T00:00:00.000Z")) == ()


def test_an_invalid_update_changes_nothing_on_disk(vault: Vault) -> None:
    item = vault.create("Stable", "stable body").item
    before = snapshot(vault)
    for changes in ({"importance": 3}, {"kind": "opinion"}, {"id": "X"}, {"title": "a\nb"}, {"extra key ": 1}):
        with pytest.raises(InvalidInput):
            vault.update(item.id, changes)
    assert snapshot(vault) == before
    assert vault.get(item.id).version == 1


# ---------------------------------------------------------------------- imports keep identity


def test_preserved_keeps_identity_and_history_and_validates_each_key() -> None:
    base = Engram(id="01JABCDEFGHJKMNPQRSTVWXYZ0", title="T", version=1)
    kept = rules.preserved(base, {"id": "note-abc", "version": 7, "createdAt": "2020-01-01", "title": "ignored", "slug": "My Slug!"})
    assert (kept.id, kept.version, kept.created_at, kept.title, kept.slug) == ("note-abc", 7, "2020-01-01T00:00:00.000Z", "T", "my-slug")
    assert rules.preserved(base, {"version": 0}).version == 1
    assert rules.preserved(base, {"id": None}) is base
    for bad in ({"id": "has space"}, {"id": "X1\n"}, {"version": -2}, {"createdAt": "yesterday"}, {"createdBy": ""}):
        with pytest.raises(InvalidInput):
            rules.preserved(base, bad)


# ---------------------------------------------------------------------- filters over the real index


@pytest.fixture
def filed(vault: Vault) -> Vault:
    vault.create("In ops_x", "body one", domain=["ops_x", "sub"], tags=["a", "b"], importance=0.9)
    vault.create("In opsyx", "body two", domain=["opsyx", "sub"], tags=["a"], importance=0.2)
    vault.create("In ops", "body three", domain=["ops"], tags=["b"])
    vault.create("In opsx", "body four", domain=["opsx"])
    vault.create("Frozen one", "body five", domain=["ops"], status="frozen")
    return vault


def titles(vault: Vault, filters: rules.Filters) -> set[str]:
    where, params = filters.sql()
    return {i.title for i in vault.state.index.items(where, params)}


def test_a_domain_filter_is_a_folder_prefix_with_like_wildcards_escaped(filed: Vault) -> None:
    assert titles(filed, rules.Filters.of(domain="ops_x")) == {"In ops_x"}
    assert titles(filed, rules.Filters.of(domain="ops")) == {"In ops"}  # not opsx, not frozen
    assert titles(filed, rules.Filters.of(domain=["ops_x", "sub"])) == {"In ops_x"}


def test_tags_must_all_be_held_and_hidden_statuses_need_asking(filed: Vault) -> None:
    assert titles(filed, rules.Filters.of(tags=["a", "b"])) == {"In ops_x"}
    assert titles(filed, rules.Filters.of(tags=["#A"])) == {"In ops_x", "In opsyx"}
    assert titles(filed, rules.Filters.of(min_importance=0.6)) == {"In ops_x"}
    assert "Frozen one" in titles(filed, rules.Filters.of(include_hidden=True))
    assert titles(filed, rules.Filters.of(statuses=["frozen"])) == {"Frozen one"}
    assert len(titles(filed, rules.Filters.of())) == 4


def test_bad_filters_are_refused_before_any_query() -> None:
    with pytest.raises(UnknownKind):
        rules.Filters.of(kinds=["opinion"])
    with pytest.raises(InvalidInput, match="status"):
        rules.Filters.of(statuses=["gone"])
    with pytest.raises(InvalidInput, match="from 0 to 1"):
        rules.Filters.of(min_importance=2)
    with pytest.raises(InvalidInput, match="reserved"):
        rules.Filters.of(domain="private/x")


def test_candidate_words_are_the_longest_distinct_words() -> None:
    words = rules.candidate_words("Vacuum FULL locks", "Autovacuum vacuum tables with bloat " * 50, limit=3)
    assert words == ["autovacuum", "tables", "vacuum"]  # by length, then a-z
    assert rules.candidate_words("a bb ccc", "dddd") == []
