"""Slugs and domain folders are safe everywhere; nothing resolves outside the vault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.store.paths import (
    MAX_SEGMENT_BYTES,
    MAX_SLUG_CHARS,
    domain_segment,
    normalize_domain,
    resolve_inside,
    slugify,
    split_domain,
)

WINDOWS_FORBIDDEN = set('<>:"/\\|?*')
WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}


def assert_safe_segment(segment: str) -> None:
    assert segment
    assert segment not in (".", "..")
    assert not segment.startswith(".")
    assert not segment.endswith((".", " "))
    assert not (set(segment) & WINDOWS_FORBIDDEN)
    assert all(ord(ch) >= 32 for ch in segment)
    assert segment.lower() not in WINDOWS_RESERVED
    assert len(segment) <= MAX_SLUG_CHARS
    assert len(segment.encode("utf-8")) <= MAX_SEGMENT_BYTES


@given(st.text(max_size=400))
def test_any_title_gives_a_safe_slug(title: str) -> None:
    assert_safe_segment(slugify(title))


@given(st.text(max_size=100))
def test_domain_segments_are_safe_or_refused(tag: str) -> None:
    try:
        segment = domain_segment(tag)
    except InvalidInput:
        return
    assert_safe_segment(segment)


def test_slug_keeps_unicode_and_drops_punctuation() -> None:
    assert slugify("Café au lait: ¿por qué?") == "café-au-lait-por-qué"
    assert slugify("数据库 连接池") == "数据库-连接池"
    assert slugify("The load balancer's timeout") == "the-load-balancers-timeout"
    assert slugify("CON") == "con-note"
    assert slugify("🚀🚀") == "untitled"
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert len(slugify("x" * 10_000)) == MAX_SLUG_CHARS
    assert len(slugify("é" * 500).encode()) <= MAX_SEGMENT_BYTES


@pytest.mark.parametrize("tag", ["..", ".", "../../etc", "a/b", "a\\b", ".hidden", "", "   ", "!!!"])
def test_bad_domain_tags_are_refused(tag: str) -> None:
    with pytest.raises(InvalidInput):
        normalize_domain([tag])


def test_domain_is_normalised_and_reserved_tops_refused() -> None:
    assert normalize_domain(["Data Science", "ML"]) == ("data-science", "ml")
    with pytest.raises(InvalidInput, match="reserved"):
        normalize_domain(["synapses"])
    with pytest.raises(InvalidInput, match="levels"):
        normalize_domain([f"l{i}" for i in range(20)])
    assert split_domain("/ops/postgres/") == ("ops", "postgres")
    assert split_domain("") == ()


def test_resolve_inside_refuses_escapes(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "a").mkdir(parents=True)
    assert resolve_inside(root, "a/b.md") == root / "a" / "b.md"
    for bad in ("../x.md", "/etc/passwd", "a/../../x.md", "C:/x.md"):
        with pytest.raises(InvalidInput):
            resolve_inside(root, bad)
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(InvalidInput, match="outside"):
        resolve_inside(root, "link/escape.md")
    (root / "a" / "real.md").write_bytes(b"x")
    os.symlink(root / "a" / "real.md", root / "a" / "alias.md")  # a link to a file inside
    os.symlink(root / "a" / "gone.md", root / "a" / "dangling.md")
    for linked in ("a/alias.md", "a/dangling.md"):
        with pytest.raises(InvalidInput, match="symbolic link"):
            resolve_inside(root, linked)
    assert resolve_inside(root, "a/missing/deeper.md") == root / "a" / "missing" / "deeper.md"
