"""A small, fast slice of the retrieval eval: ranking must keep beating plain BM25.

The full harness (``python -m benchmarks run quality``) is not part of the test run; this
slice — one LoCoMo conversation at session granularity — guards the ranking against
regressions in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DATASETS, shared

LOCOMO = DATASETS / "locomo-dev" / "locomo-dev.json"


def test_one_locomo_conversation_beats_the_plain_baseline(tmp_path: Path) -> None:
    from benchmarks.quality import (
        build_locomo,
        eval_locomo_baseline,
        eval_locomo_engram,
        locomo_questions,
    )
    from engram.vault import Vault

    data = json.loads(shared(LOCOMO).read_text(encoding="utf-8"))[:1]
    questions, _ = locomo_questions(data)
    where = build_locomo(tmp_path / "locomo", data, "session")
    vault = Vault.open(tmp_path / "locomo")
    try:
        ours = eval_locomo_engram(vault, where, questions, expand=True)["overall"]
    finally:
        vault.close()
    base = eval_locomo_baseline(data, questions, "session")["overall"]
    assert ours["recall@5"] >= base["recall@5"] and ours["mrr"] >= base["mrr"]
    assert ours["recall@5"] >= 0.85 and ours["mrr"] >= 0.75
