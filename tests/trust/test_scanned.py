"""doctor remembers the texts its secret scan found clean (engram.trust.scanned): a second
run scans only what changed and what held a finding, and reports the same."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from engram.trust import scanned, secrets
from engram.trust.secrets import ScanOptions
from engram.vault import Vault

KEY_LINE = "The key is AKIAQ3EGUDWXNJ7ZKL5V for now.\n"


def secrets_found(vault: Vault) -> list[str]:
    return sorted(p.path for p in vault.doctor().problems if p.code == "secret-in-shared-file")


def counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, str]]:
    """The texts doctor's scan reads from now on (the real scan runs)."""
    calls: list[Mapping[str, str]] = []
    real = secrets.scan_fields

    def counted(fields: Mapping[str, str], options: ScanOptions = secrets.DEFAULT_OPTIONS) -> list[secrets.Detection]:
        calls.append(fields)
        return real(fields, options)

    monkeypatch.setattr(secrets, "scan_fields", counted)
    return calls


def test_a_second_run_scans_only_changed_texts_and_findings(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        vault.create(f"Lesson {n}", f"Plain lesson number {n}.\n")
    (vault.root / "deploying.md").write_text("---\ntitle: Deploying\n---\n" + KEY_LINE)
    assert secrets_found(vault) == ["deploying.md"]
    assert (vault.state.state_dir / scanned.FILE).is_file()

    calls = counting_scans(monkeypatch)
    assert secrets_found(vault) == ["deploying.md"]  # a finding is scanned and told again
    assert [c["title"] for c in calls] == ["Deploying"]

    calls.clear()
    (vault.root / "notes.md").write_text("---\ntitle: Notes\n---\nnothing yet\n")
    assert secrets_found(vault) == ["deploying.md"]
    (vault.root / "notes.md").write_text("---\ntitle: Notes\n---\n" + KEY_LINE)  # clean before, not now
    assert secrets_found(vault) == ["deploying.md", "notes.md"]
    assert sorted(c["title"] for c in calls) == ["Deploying", "Deploying", "Notes", "Notes"]


def test_what_the_scan_looked_for_is_part_of_the_verdict(tmp_path: Path) -> None:
    fields = {"title": "T", "content": "text"}
    every = scanned.CleanScans(tmp_path, ScanOptions())
    key = every.key(fields)
    every.found_clean(key)
    every.save()
    assert scanned.CleanScans(tmp_path, ScanOptions()).clean(key)
    for other in (ScanOptions.of(kinds=["secret"]), ScanOptions.of(allow=["AKIA.*"]), ScanOptions.of(phone_region="DE")):
        again = scanned.CleanScans(tmp_path, other)
        assert not again.clean(again.key(fields))
    assert every.key({"content": "text", "title": "T"}) != key  # the fields as named and ordered


@pytest.mark.parametrize("junk", [b"", b"not a cache", b"\0" * 100])
def test_a_foreign_or_broken_file_is_ignored(vault: Vault, junk: bytes) -> None:
    (vault.root / "deploying.md").write_text("---\ntitle: Deploying\n---\n" + KEY_LINE)
    vault.create("A lesson", "Plain text.\n")
    path = vault.state.state_dir / scanned.FILE
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(junk)
    assert secrets_found(vault) == ["deploying.md"]
    assert len(path.read_bytes()) == 32 + 16  # rewritten: this run's salt and the clean lesson
