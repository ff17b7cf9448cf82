"""A Co-Engram repository (English on-disk format) opens unchanged and works."""

from __future__ import annotations

from engram.store.format import read_engram
from engram.vault import Vault
from mergedriver import codec
from tests.conftest import COMPAT, snapshot

FROZEN = "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"
IMMUTABLE = "01J8ZQ7TRY9F8G7H6J5K4L3M2N"


def test_opening_and_reading_changes_no_file(compat_vault: Vault) -> None:
    before = snapshot(compat_vault)
    items = compat_vault.list()
    assert {i.id for i in items} == {FROZEN, IMMUTABLE}
    assert compat_vault.get("engineering/python/frozen-dataclass-copy.md").id == FROZEN
    assert compat_vault.get("Prefer immutable value objects").id == IMMUTABLE
    [syn] = compat_vault.synapses(IMMUTABLE)
    assert (syn.source, syn.target, syn.kind, syn.weight) == (IMMUTABLE, FROZEN, "extends", 0.8)
    assert syn.evidence[0].added_by == "claude-code"
    assert snapshot(compat_vault) == before


def test_every_key_is_read(compat_vault: Vault) -> None:
    for path in COMPAT.rglob("*.md"):
        raw = codec.load_yaml(path.read_text().split("---\n")[1])
        rel = path.relative_to(COMPAT).as_posix()
        item, _ = read_engram(compat_vault.root / rel, rel)
        meta = item.to_meta()
        for key, value in raw.items():
            expected = codec.format_time(value) if key.endswith("At") else value
            assert meta[key] == expected, (rel, key)


def test_an_update_keeps_every_key(compat_vault: Vault) -> None:
    before = read_engram(compat_vault.root / "engineering/python/frozen-dataclass-copy.md", "x")[0].to_meta()
    updated = compat_vault.update(FROZEN, {"tags": ["gotcha", "dataclasses"]}, expected_version=3)
    after = updated.to_meta()
    assert set(before) <= set(after)
    assert after["version"] == 4 and after["tags"] == ["gotcha", "dataclasses"]
    assert after["retrievalCount"] == 12 and after["createdBy"] == "Dana Ortiz"
    assert updated.path == "engineering/python/frozen-dataclass-copy.md"  # its slug is kept


def test_link_and_doctor_on_a_co_engram_repository(compat_vault: Vault) -> None:
    # The fixture's hashes are placeholders: content as good as edited outside engram,
    # which is not a problem; the next write that touches an item records it.
    assert compat_vault.doctor().adoption.edited_outside
    syn = compat_vault.link(FROZEN, "derives_from", IMMUTABLE, evidence="copying follows from immutability")
    assert (compat_vault.root / syn.path).is_file()
    report = compat_vault.doctor()
    assert {p.code for p in report.problems} <= {"stale-derived"}
    assert not report.adoption.edited_outside  # the link rewrote both ends
    compat_vault.doctor(fix=True)
    assert compat_vault.doctor().problems == ()
