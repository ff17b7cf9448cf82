"""Trust tests add settings to a vault's engram.yaml, keeping what the template put there."""

from __future__ import annotations

from pathlib import Path


def add_settings(root: Path, text: str) -> None:
    with (root / "engram.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\n" + text)
