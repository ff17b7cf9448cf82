"""Maintenance proposals never carry a private item's text or titles into a shared item.

Accepting a ``merge`` appends the absorbed items' sentences to the kept one, and a
``pattern`` item lists its members' titles; both used to ignore visibility, so a private
note (``private/…``, never committed) could be copied into a team item and pushed.
"""

from __future__ import annotations

import itertools

import pytest

from engram.errors import InvalidInput
from engram.lifecycle import proposals
from engram.vault import Vault
from tests.conftest import snapshot

TEXT = "Cap retries at 3 per request and back off exponentially with jitter between attempts always."


def test_deep_never_groups_a_private_note_with_a_shared_item(vault: Vault) -> None:
    team = vault.create("Retry budgets", TEXT, domain=["eng"]).item
    mine = vault.create("Retry budgets", TEXT + " Token hunter2.", domain=["eng"],
                        visibility="private", dedupe=False).item
    same = vault.create("Retry budgets", TEXT, domain=["eng"], visibility="private", dedupe=False).item
    report = vault.maintain("deep")
    assert report.duplicates == (tuple(sorted((mine.id, same.id))),)  # the two private ones only
    assert team.id not in {t for p in vault.proposals(kind="merge") for t in p.targets}
    assert "hunter2" not in (vault.root / team.path).read_text(encoding="utf-8")  # type: ignore[operator]


def test_a_merge_that_would_copy_private_text_into_a_shared_item_is_refused(vault: Vault) -> None:
    team = vault.create("Retry budgets", TEXT, domain=["eng"]).item
    mine = vault.create("Retry budgets", TEXT + " Token hunter2.", domain=["eng"],
                        visibility="private", dedupe=False).item
    prop, _ = proposals.propose(vault.state, "merge", [team.id, mine.id], title="m", reason="hand-made",
                                payload={"keep": team.id, "absorb": [mine.id]})
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="would copy private item") as err:
        vault.accept(prop.id)
    assert f"engram dismiss {prop.id}" in (err.value.hint or "")
    assert snapshot(vault) == before and vault.get(mine.id).status == "active"


def test_a_private_item_may_absorb_a_shared_one(vault: Vault) -> None:
    team = vault.create("Retry budgets", TEXT + " Budgets reset every minute.", domain=["eng"]).item
    mine = vault.create("Retry budgets", TEXT, domain=["eng"], visibility="private", dedupe=False).item
    prop, _ = proposals.propose(vault.state, "merge", [team.id, mine.id], title="m", reason="hand-made",
                                payload={"keep": mine.id, "absorb": [team.id]})
    vault.accept(prop.id)
    assert "Budgets reset every minute." in vault.get(mine.id).content
    assert vault.get(team.id).superseded_by == mine.id


def test_a_pattern_over_a_private_member_is_private(vault: Vault) -> None:
    members = [vault.create(f"Bloat on table {n}", f"pg_repack fixed bloat on table {n} overnight.",
                            domain=["ops"], dedupe=False).item for n in range(3)]
    secret = vault.create("Bloat on the payroll table", "pg_repack fixed bloat on the payroll table overnight.",
                          domain=["ops"], visibility="private", dedupe=False).item
    group = [*members, secret]
    for a, b in itertools.pairwise(group):
        vault.link(a.id, "similar_to", b.id, weight=0.8)
    vault.maintain("rem")
    pattern = next(p for p in vault.proposals(kind="pattern") if secret.id in p.targets)
    assert pattern.payload["visibility"] == "private"
    vault.accept(pattern.id)
    made = next(i for i in vault.list() if i.kind == "pattern")
    assert made.visibility == "private" and (made.path or "").startswith("private/")
    shared = [p for p, _ in snapshot(vault).items() if p.endswith(".md") and not p.startswith("private/")]
    assert all("payroll" not in (vault.root / p).read_text(encoding="utf-8") for p in shared)


def test_narrowest_orders_private_team_org() -> None:
    assert proposals.narrowest(["org", "team"]) == "team"
    assert proposals.narrowest(["team", "private", "org"]) == "private"
    assert proposals.narrowest(["org"]) == "org" and proposals.narrowest([]) == "team"


def test_resolving_by_merge_never_copies_a_private_item_into_a_shared_one(vault: Vault) -> None:
    team = vault.create("Pool size", "Keep the pool at 20 connections.", domain=["db"]).item
    mine = vault.create("Pool size", "Keep the pool at 40 connections; the password is hunter2.", domain=["db"],
                        visibility="private", dedupe=False).item
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="would copy private item") as err:
        vault.contradiction_resolve(team.id, mine.id, "merge")
    assert "one visibility" in (err.value.hint or "")
    assert snapshot(vault) == before
    # The other way round is fine: shared text may go into a private item.
    done = vault.contradiction_resolve(mine.id, team.id, "merge")
    assert done.kept[0].id == mine.id and vault.get(team.id).superseded_by == mine.id
