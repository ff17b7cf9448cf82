"""Synapses: hash-named files, evidence merging, symmetry, derived sections, privacy."""

from __future__ import annotations

import hashlib

import pytest

from engram.errors import InvalidInput, NotFound, UnknownKind
from engram.store.format import read_engram, read_synapse
from engram.store.model import SYNAPSE_KINDS
from engram.vault import Vault
from tests.conftest import snapshot


@pytest.fixture
def pair(vault: Vault) -> tuple[str, str]:
    a = vault.create("Prefer immutable value objects", "Frozen dataclasses.", domain=["eng", "python"]).id
    b = vault.create("Copy a frozen dataclass with replace", "dataclasses.replace", domain=["eng", "python"]).id
    return a, b


def derived_of(vault: Vault, ref: str) -> str:
    item = vault.get(ref)
    assert item.path is not None
    return read_engram(vault.root / item.path, item.path)[1]


def test_link_writes_a_hash_named_file(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    syn = vault.link(b, "extends", a, weight=0.8, evidence="replace() modifies immutables", confidence=0.9)
    expected = "syn-" + hashlib.sha256(f"{b}|{a}|extends".encode()).hexdigest()[:16]
    assert syn.id == expected and syn.source == b and syn.target == a
    on_disk = read_synapse(vault.root / f"synapses/extends/{expected}.yaml", "x")
    assert on_disk.weight == 0.8 and on_disk.evidence[0].description == "replace() modifies immutables"
    assert on_disk.evidence[0].added_by == "tester" and on_disk.evidence[0].confidence == 0.9


def test_relinking_merges_evidence_instead_of_duplicating(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    vault.link(a, "part_of", b, evidence="first reason")
    vault.link(a, "part_of", b, evidence="first reason")  # same author + text: a set
    syn = vault.link(a, "part_of", b, evidence="second reason", weight=0.9)
    assert [e.description for e in syn.evidence] == ["first reason", "second reason"]
    assert syn.weight == 0.9
    assert len(list((vault.root / "synapses/part_of").iterdir())) == 1
    assert len(vault.synapses(a)) == 1


def test_symmetric_kinds_ignore_direction(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    one = vault.link(a, "similar_to", b, evidence="x")
    two = vault.link(b, "similar_to", a, evidence="y")
    assert one.id == two.id and (two.source, two.target) == tuple(sorted((a, b)))
    assert "→" in derived_of(vault, a) and "→" in derived_of(vault, b)
    vault.unlink(b, "similar_to", a)
    assert vault.synapses(a) == []


def test_directional_kinds_differ_by_direction(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    assert vault.link(a, "depends_on", b).id != vault.link(b, "depends_on", a).id


def test_every_write_regenerates_both_derived_sections(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    vault.link(b, "extends", a)
    item_b, item_a = vault.get(b), vault.get(a)
    assert derived_of(vault, b) == f"- → [[{item_a.path[:-3]}|Prefer immutable value objects · extends]]"  # type: ignore[index]
    assert derived_of(vault, a) == f"- ← [[{item_b.path[:-3]}|Copy a frozen dataclass with replace · extends]]"  # type: ignore[index]
    # Renaming the target updates the link text in the source.
    vault.update(a, {"title": "Immutable values everywhere"})
    assert "immutable-values-everywhere|Immutable values everywhere · extends" in derived_of(vault, b)
    # Derived sections do not count as content and do not bump versions.
    assert vault.get(b).version == 1 and vault.get(b).content_hash == item_b.content_hash
    vault.unlink(b, "extends", a)
    assert derived_of(vault, a) == derived_of(vault, b) == ""


def test_list_by_endpoint_kind_and_direction(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    c = vault.create("Value objects in caches", "Share them freely.").id
    vault.link(b, "extends", a)
    vault.link(c, "depends_on", a)
    vault.link(a, "causes", c)
    assert len(vault.synapses(a)) == 3
    assert [s.kind for s in vault.synapses(a, direction="out")] == ["causes"]
    assert sorted(s.kind for s in vault.synapses(a, direction="in")) == ["depends_on", "extends"]
    assert [s.source for s in vault.synapses(kind="extends")] == [b]
    found = vault.synapse(vault.synapses(a, direction="out")[0].id)
    assert found.target == c


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda v, a, b: v.link(a, "relates_to", b), UnknownKind, "unknown synapse kind 'relates_to'"),
        (lambda v, a, b: v.link(a, "extends", "01MISSINGITEM000000000000"), NotFound, "no item matches"),
        (lambda v, a, b: v.link(a, "extends", a), InvalidInput, "cannot link to itself"),
        (lambda v, a, b: v.link(a, "extends", b, weight=2), InvalidInput, "from 0 to 1"),
        (lambda v, a, b: v.unlink(a, "extends", b), NotFound, "there is no extends edge"),
        (lambda v, a, b: v.synapse("syn-0000000000000000"), NotFound, "no synapse"),
    ],
)
def test_bad_synapse_requests_change_nothing(vault: Vault, pair: tuple[str, str], call, error, message) -> None:  # type: ignore[no-untyped-def]
    a, b = pair
    before = snapshot(vault)
    with pytest.raises(error, match=message):
        call(vault, a, b)
    assert snapshot(vault) == before


def test_all_twelve_kinds_are_accepted(vault: Vault, pair: tuple[str, str]) -> None:
    a, b = pair
    for kind in SYNAPSE_KINDS:
        vault.link(a, kind, b)
    assert len(SYNAPSE_KINDS) == 12
    assert sorted(s.kind for s in vault.synapses(a)) == sorted(SYNAPSE_KINDS)


def test_edges_touching_private_items_stay_private(vault: Vault, pair: tuple[str, str]) -> None:
    a, _ = pair
    secret = vault.create("Our vendor's discount", "12% off until March.", visibility="private").item
    assert secret.path == "private/our-vendors-discount.md"
    syn = vault.link(secret.id, "contextualizes", a, evidence="pricing context")
    assert (vault.root / "private" / syn.path).is_file() and not (vault.root / syn.path).exists()
    assert derived_of(vault, a) == ""  # the shared file never names the private item
    assert "Prefer immutable value objects" in derived_of(vault, secret.id)
    # Publishing the item moves it and its edge into the shared tree.
    vault.update(secret.id, {"visibility": "team"})
    assert (vault.root / syn.path).is_file() and not (vault.root / "private" / syn.path).exists()
    assert derived_of(vault, a) == "- ← [[our-vendors-discount|Our vendor's discount · contextualizes]]"
