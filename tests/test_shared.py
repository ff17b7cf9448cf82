"""Tests that need ../shared fail loudly when it is missing; they never skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED, VAULTS, shared


def test_missing_shared_data_fails_the_test_and_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"shared test data missing: .*nothing-here.*check out the shared folder"):
        shared(tmp_path / "nothing-here")


def test_the_shared_folder_is_beside_the_repository() -> None:
    assert shared(VAULTS / "kepano-obsidian").is_dir() and SHARED.name == "shared"


def test_no_test_skips_for_missing_shared_data() -> None:
    offenders = [
        path.name
        for path in Path(__file__).parent.rglob("*.py")
        if path.name != "test_shared.py"
        and any(marker in path.read_text(encoding="utf-8") for marker in ("shared fixture missing", "shared dataset missing"))
    ]
    assert offenders == []
