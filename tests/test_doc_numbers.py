"""Numbers the user docs state about what the code defines are the code's (issue 28).

docs/mcp.md said 42 tools in one place and 49 in its catalog: a count typed into prose
goes stale the day a tool is added. Each count below is read from the docs and
compared with the code that defines it; a tool count anywhere in the user docs must be
one of these checked forms. (docs/benchmarks.md is a dated record of measurements, each
next to the code it measured, and is left out.) The token costs in docs/mcp.md are
checked by ``tests/mcp/test_cost.py``, which measures them.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from engram.mcp.catalog import declared_tools
from engram.mcp.profiles import PROFILES, includes
from engram.store.model import SYNAPSE_FAMILIES, SYNAPSE_KINDS
from engram.trust.screen import CATEGORIES
from tests.conftest import ROOT

DOCS = ROOT / "docs"
USER_DOCS = [*sorted(p for p in DOCS.glob("*.md") if p.name != "benchmarks.md"), ROOT / "README.md"]
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen")
WORDS = {w: n for n, w in enumerate(NUMBER_WORDS)}


def number(text: str) -> int:
    return int(text) if text.isdigit() else WORDS[text.lower()]


#: (doc, a pattern whose groups are the counts, what each count is in the code)
CLAIMS = (
    ("format.md", r"One of the (\w+) kinds below", (len(SYNAPSE_KINDS),)),
    ("format.md", r"The (\w+) kinds, in (\w+) families", (len(SYNAPSE_KINDS), len(SYNAPSE_FAMILIES))),
    ("import.md", r"engram has (\w+) kinds", (len(SYNAPSE_KINDS),)),
    ("trust.md", r"looks for (\w+) kinds of instruction-shaped text", (len(CATEGORIES),)),
)


@pytest.mark.parametrize(("doc", "pattern", "counts"), CLAIMS, ids=[f"{c[0]}:{c[1][:30]}" for c in CLAIMS])
def test_counts_of_kinds_families_and_classes_are_the_codes(doc: str, pattern: str, counts: tuple[int, ...]) -> None:
    found = re.findall(pattern, (DOCS / doc).read_text(encoding="utf-8"))
    assert found, f"{doc} no longer says {pattern!r}: update CLAIMS with what it says now"
    for groups in found:
        said = tuple(number(g) for g in ((groups,) if isinstance(groups, str) else groups))
        assert said == counts, f"{doc}: {pattern!r} says {said}, the code defines {counts}"


def test_every_tool_count_in_the_docs_is_a_profiles_count() -> None:
    smallest = Counter(info.profile for info in declared_tools())
    counts = {p: sum(n for q, n in smallest.items() if includes(p, q)) for p in PROFILES}
    checked = 0
    for path in USER_DOCS:
        text = path.read_text(encoding="utf-8")
        said = re.findall(r"`(\w+)` \((\d+) tools\)", text)
        for profile, n in said:
            assert profile in counts and int(n) == counts[profile], (
                f"{path.name}: `{profile}` ({n} tools), but the server gives it {counts.get(profile)}"
            )
        # Any other way of counting tools would go unchecked: write it as `profile` (N tools).
        assert len(re.findall(r"\b\d+ (?:MCP )?tools\b", text)) == len(said), (
            f"{path.name} counts tools outside the checked form `profile` (N tools)"
        )
        checked += len(said)
    assert checked >= len(PROFILES) + 2  # the catalog's line, and the prose of docs/mcp.md
