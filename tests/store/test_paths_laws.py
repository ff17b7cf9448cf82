"""Paths: slugs are stable under re-slugging and Unicode forms; the vault guard holds.

Complements ``test_paths.py`` (which checks that any slug is safe) with the laws the
rest of engram leans on: a slug of a slug is itself (renames do not drift), composed
and decomposed titles give one file name (macOS writes NFD), Windows' reserved names
never come out with any spelling, and :func:`resolve_inside` accepts exactly the paths
that stay inside the vault.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.store.model import new_id
from engram.store.paths import (
    MAX_DOMAIN_DEPTH,
    domain_segment,
    id_suffix,
    item_relpath,
    normalize_domain,
    resolve_inside,
    slugify,
    split_domain,
)


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_a_slug_of_a_slug_is_itself(title: str) -> None:
    slug = slugify(title)
    assert slugify(slug) == slug


@settings(max_examples=300)
@given(st.text(max_size=120))
def test_composed_and_decomposed_titles_give_one_slug(title: str) -> None:
    assert slugify(unicodedata.normalize("NFD", title)) == slugify(unicodedata.normalize("NFC", title))


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_a_domain_segment_of_a_segment_is_itself(tag: str) -> None:
    try:
        segment = domain_segment(tag)
    except InvalidInput:
        return
    assert domain_segment(segment) == segment
    assert normalize_domain(split_domain(segment)) == (segment,)


@pytest.mark.parametrize(
    "name", ["CON", "con", "Nul", "AUX", "prn", "COM1", "lpt9", "COM¹", "com²", "LPT³", "nul...", " con ", "CON!"]
)
def test_windows_device_names_never_come_out_in_any_spelling(name: str) -> None:
    reserved = {"con", "prn", "aux", "nul"} | {f"{d}{n}" for d in ("com", "lpt") for n in [*"0123456789", "¹", "²", "³"]}
    assert slugify(name) not in reserved
    assert domain_segment(name) not in reserved


def test_slugs_of_different_scripts_and_marks() -> None:
    assert slugify("Ελληνικά και Русский") == "ελληνικά-και-русский"
    assert slugify("हिन्दी शब्द") == "हिन्दी-शब्द"  # combining vowel signs stay on their letters
    assert slugify("👍🏽 thumbs") == "thumbs"  # a skin-tone modifier is not a mark on a letter
    assert slugify("snake_case_name") == "snake_case_name"
    assert slugify("a -- b __ c") == "a-b-__-c"
    assert slugify("___") == "untitled" and slugify("") == "untitled"


def test_an_item_path_is_private_first_then_domain_then_slug_and_suffix() -> None:
    assert item_relpath(("ops", "db"), "vacuum") == "ops/db/vacuum.md"
    assert item_relpath((), "vacuum", private=True) == "private/vacuum.md"
    item = new_id()
    assert item_relpath(("ops",), "vacuum", suffix=id_suffix(item)) == f"ops/vacuum-{item[-6:].lower()}.md"
    suffixes = {id_suffix(new_id()) for _ in range(500)}
    assert len(suffixes) == 500  # random part: two machines do not pick the same


def test_domains_are_bounded_in_depth() -> None:
    assert len(normalize_domain([f"l{i}" for i in range(MAX_DOMAIN_DEPTH)])) == MAX_DOMAIN_DEPTH
    with pytest.raises(InvalidInput) as err:
        normalize_domain([f"l{i}" for i in range(MAX_DOMAIN_DEPTH + 1)])
    assert err.value.field == "domainTags" and err.value.hint
    for top in ("Private", "SYNAPSES", "trash"):
        with pytest.raises(InvalidInput, match="reserved"):
            normalize_domain([top, "x"])
    assert normalize_domain(["ops", "private"]) == ("ops", "private")  # reserved only at the top


segments = st.text(alphabet=st.characters(blacklist_characters="/\\\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)


@settings(max_examples=150)
@given(st.lists(segments, min_size=1, max_size=4), st.sampled_from(["/", "\\"]))
def test_resolve_inside_takes_every_relative_path_without_dotdot(tmp_path_factory: pytest.TempPathFactory, parts: list[str], sep: str) -> None:
    root = tmp_path_factory.mktemp("guard").resolve()
    rel = sep.join(parts)
    if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":" and rel[0].isascii() and rel[0].isalpha()):
        with pytest.raises(InvalidInput):
            resolve_inside(root, rel)
        return
    target = resolve_inside(root, rel)
    assert target == root.joinpath(*[p for p in parts if p != "."])
    assert root in target.parents


@settings(max_examples=100)
@given(st.lists(segments, max_size=3), st.lists(segments, max_size=3))
def test_any_dotdot_is_refused_even_when_it_would_come_back(tmp_path_factory: pytest.TempPathFactory, before: list[str], after: list[str]) -> None:
    root = tmp_path_factory.mktemp("guard").resolve()
    rel = "/".join([*before, "..", *after])
    if rel.startswith("/"):
        rel = rel.lstrip("/")
    with pytest.raises(InvalidInput):
        resolve_inside(root, rel)


def test_a_vault_reached_through_a_symlinked_parent_still_works(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "vault" / "ops").mkdir(parents=True)
    os.symlink(real, tmp_path / "alias")  # as /tmp is a link to /private/tmp on macOS
    root = tmp_path / "alias" / "vault"
    assert resolve_inside(root, "ops/x.md") == root / "ops" / "x.md"
    assert resolve_inside(root, "") == root
    with pytest.raises(InvalidInput, match="leaves the vault"):
        resolve_inside(root, "ops/../../vault/x.md")


def test_a_link_to_a_file_inside_the_vault_is_refused_too(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "real.md").write_text("x")
    os.symlink(root / "real.md", root / "alias.md")
    with pytest.raises(InvalidInput, match="symbolic link") as err:
        resolve_inside(root, "alias.md")
    assert "doctor" in (err.value.hint or "")
