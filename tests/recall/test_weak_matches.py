"""A word any item may hold is no answer (issue 28: the demo's showcase search).

`engram demo` searched "charge a customer twice" and listed "Use pg_repack instead of
VACUUM FULL" second: its body says "twice" once, 0.28 of the query against a 0.25
floor, and its BM25 share outscored the items linked to the answer. An item holding
one word of a question of several now counts only what it holds beyond what the vault's
other items hold by chance, and such a hit below the floor is listed after the items
the confident hits reach through links (never dropped: `limit` N still returns N).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from engram.demo import build_demo
from engram.vault import Vault
from tests.cli.test_cli import engram_exe

FLOOR = 0.25


def test_the_demo_showcase_lists_what_the_answer_links_to_before_a_one_word_match(tmp_path: Path) -> None:
    demo = build_demo(tmp_path / "demo")
    found = demo.search("charge a customer twice", tier="catalog", limit=4, record=False)  # as `engram demo`
    titles = [h.title for h in found.hits]
    assert titles[:3] == [
        "Send an Idempotency-Key with every payment request",
        "Retry idempotent HTTP calls with jittered backoff",
        "Client timeouts must be shorter than the load balancer's",
    ], titles
    weak = next(h for h in found.hits if h.title.startswith("Use pg_repack"))
    assert weak.relevance is not None and weak.relevance < FLOOR and weak.explanation.matched_terms == ("twice",)
    demo.close()
    shown = subprocess.run([engram_exe(), "demo", str(tmp_path / "cli")], env=dict(os.environ),
                           capture_output=True, text=True, check=True).stdout
    assert "  2. Retry idempotent HTTP calls with jittered backoff  (reached through a link)" in shown, shown


def _vault_of(vault: Vault, notes: dict[str, str]) -> dict[str, str]:
    return {title: vault.create(title, body, domain=["notes"], dedupe=False).item.id for title, body in notes.items()}


def test_a_word_of_a_longer_question_that_other_items_share_is_below_the_floor(vault: Vault) -> None:
    ids = _vault_of(vault, {
        "Rotate signing keys": "Rotate the JWT signing keys every quarter; publish the new key first.",
        "Key publication": "Clients fetch the JWKS document hourly.",
        "Disk quotas": "Quarterly, archive logs older than a year to cold storage.",
        "Office plants": "Water the plants every Friday, once a quarter repot them.",
        **{f"Filler {n}": f"Unrelated text number {n} about lunch menus." for n in range(8)},
    })
    vault.link(ids["Rotate signing keys"], "depends_on", ids["Key publication"])
    found = vault.search("rotate jwt quarter", record=False)
    order = [h.title for h in found.hits]
    assert order[:2] == ["Rotate signing keys", "Key publication"], order
    plants = next(h for h in found.hits if h.title == "Office plants")
    assert plants.relevance is not None and plants.relevance < FLOOR  # "quarter" alone
    assert order.index("Office plants") > order.index("Key publication")
    assert len(found.hits) == 3  # listed all the same: the floor decides the answer, not the list


def test_in_a_small_vault_the_one_item_holding_a_word_still_answers(vault: Vault) -> None:
    """Chance is what the *other* items hold: in a vault of two, the only item with the
    word is not discounted for holding it."""
    _vault_of(vault, {"Pool sizing": "Size the pool from p99 latency.", "Lunch": "Tacos on Tuesday."})
    found = vault.search("connection pool", record=False)
    assert found.status == "ok" and [h.title for h in found.hits] == ["Pool sizing"]
