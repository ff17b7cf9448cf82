"""The scale benchmark's own measurements: what it reports is the build's, not the harness's."""

from __future__ import annotations

from pathlib import Path

from benchmarks.scale import cold_index
from benchmarks.synth import generate


def test_a_cold_build_reports_its_own_peak_memory_not_the_harness_s(tmp_path: Path) -> None:
    made = generate(60, seed=5, root=tmp_path / "v")
    # The harness holds 400 MB when it starts the child (as it does after generating a
    # 100k vault); Linux's ru_maxrss would hand that peak to the child across exec.
    ballast = bytearray(400 << 20)
    for at in range(0, len(ballast), 4096):
        ballast[at] = 1
    got = cold_index(made.root)
    del ballast
    assert got["items"] == made.items
    assert 0 < got["maxrss_self_mb"] < 300
