"""Knowledge climbing scopes across real repositories: an org vault, two team vaults.

The acceptance path: an item recalled by two agents on two days (on two clones of one
team) becomes eligible, is endorsed and promoted, lands in the org repository and is
recalled from another team's clone; a project-specific body is refused at org.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine

from engram.errors import InvalidInput, NotEligible, NotFound, NotGeneral
from engram.vault import Vault
from tests.git_helpers import git
from tests.scopes.helpers import org_files, publish_org, team

DAY1 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
DAY2 = datetime(2026, 3, 3, 15, 0, tzinfo=UTC)
GENERAL = (
    "Retrying a request that is not idempotent can apply it twice. Make the operation "
    "idempotent with a client-chosen key before adding retries, and back off with jitter."
)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, object]:
    org = publish_org(tmp_path)
    alice, bob = team(tmp_path, "payments", org, "alice-agent", "bob-agent")
    (carol,) = team(tmp_path, "search", org, "carol-agent")
    yield {"org": org, "alice": alice, "bob": bob, "carol": carol}
    for v in (alice, bob, carol):
        v.close()


def test_recalled_by_two_agents_on_two_days_endorsed_promoted_and_recalled_by_another_team(world) -> None:
    org, alice, bob, carol = world["org"], world["alice"], world["bob"], world["carol"]
    item = alice.create("Retries need idempotency keys", GENERAL, domain=["engineering", "http"], kind="pattern")
    alice.sync()
    with time_machine.travel(DAY1, tick=False):
        assert alice.search("idempotent retries jitter").hits[0].id == item.id
    alice.sync()
    bob.sync()
    with time_machine.travel(DAY2, tick=False):
        hit = bob.search("retry idempotency key").hits[0]
        assert (hit.id, hit.scope) == (item.id, "team")
    bob.sync()
    alice.sync()

    standing = alice.standing(alice.get(item.id))
    assert standing.recalled_by == ("alice-agent", "bob-agent")
    assert standing.recall_days == ("2026-03-02", "2026-03-03")
    assert standing.eligible and standing.target == "org"
    assert standing.needs == ("an endorsement (org requires one)",)
    review = alice.review_promotions()
    assert [s.id for s in review.eligible] == [item.id]

    with pytest.raises(NotEligible, match="needs an endorsement"):
        alice.promote(item.id, to="org")

    endorsed, scope = alice.endorse(item.id, "Hit this twice in production; the key fixed it.")
    assert scope == "team" and endorsed.endorsements[0]["by"] == "alice-agent"
    (step,) = alice.promote(item.id, to="org")
    assert step.status == "promoted" and step.pushed, step

    files = org_files(org)
    path = next(p for p, text in files.items() if item.id in text and p.endswith(".md"))
    assert path == "engineering/http/retries-need-idempotency-keys.md"
    text = files[path]
    assert "visibility: org" in text and "alice-agent" in text and "promotions:" in text
    assert "team: payments" in text
    assert alice.get(item.id).visibility == "org"  # the team copy knows it is published

    report, _ = carol.sync_scopes()
    assert report.fetched or report.fast_forward or report.pushed
    hits = carol.search("idempotent retries").hits
    assert [(h.id, h.scope) for h in hits] == [(item.id, "org")]
    read, scope = carol.get_any(item.id)
    assert (read.id, scope) == (item.id, "org")
    with pytest.raises(NotFound):
        carol.get(item.id)  # not in the search team's own vault

    # The promoting team sees its own copy once, labelled org.
    alice.sync_scopes()
    assert [(h.id, h.scope) for h in alice.search("idempotent retries").hits] == [(item.id, "org")]
    assert alice.promote(item.id, to="org")[0].status == "already"


def test_a_project_specific_body_is_refused_at_org_with_its_tells(world) -> None:
    alice, org = world["alice"], world["org"]
    body = (
        "In payments, append the new regime to dashboard.py and rerun test_refund_twice; "
        "see PAY-231 and dec-014 for why."
    )
    item = alice.create("Regime boundaries need annotating", body, domain=["analytics"])
    alice.endorse(item.id, "Annotate a regime boundary whenever a metric's computation changes.")
    with pytest.raises(NotGeneral) as refused:
        alice.promote(item.id, to="org")
    tells = refused.value.tells
    assert tells == (
        "names its own project ('payments')",
        "names a file ('dashboard.py')",
        "names a test ('test_refund_twice')",
        "cites a ticket ('PAY-231')",
        "cites a decision-log id ('dec-014')",
    )
    assert refused.value.suggestion == "Annotate a regime boundary whenever a metric's computation changes."
    assert item.id not in "".join(org_files(org).values())

    restated = "Annotate a regime boundary whenever the way a metric is computed changes."
    (step,) = alice.promote(item.id, to="org", org_content=restated)
    assert step.status == "promoted"
    text = next(t for t in org_files(org).values() if item.id in t)
    assert restated in text and "example: " in text and "dashboard.py" in text.split("example:")[1]
    assert alice.get(item.id).content.strip() == body  # the team keeps its concrete body


def test_the_org_copy_keeps_its_author_and_records_who_promoted_it(world) -> None:
    """The author stays the author across scopes; the promoter is recorded as such, in
    the org copy's promotions record (as the team copy's), not as createdBy."""
    alice, bob, carol = world["alice"], world["bob"], world["carol"]
    item = alice.create("Retries need idempotency keys", GENERAL, domain=["engineering"]).item
    alice.sync()
    bob.sync()
    bob.endorse(item.id, "Hit this twice in production.")
    (step,) = bob.promote(item.id, to="org")  # no roles configured: bob, a person, may
    assert step.status == "promoted"
    carol.sync_scopes()
    copy, scope = carol.get_any(item.id)
    assert scope == "org"
    assert (copy.created_by, copy.created_at) == (item.created_by, item.created_at) == ("alice-agent", item.created_at)
    assert copy.updated_by == "bob-agent"
    (record,) = copy.promotions or ()
    assert (record["from"], record["to"], record["by"]) == ("team", "org", "bob-agent")
    assert [r["by"] for r in bob.get(item.id).promotions or ()] == ["bob-agent"]


def test_force_promotes_as_is_and_is_audited(world) -> None:
    alice = world["alice"]
    item = alice.create("Ledger rebuild", "Run tools/rebuild_ledger.sh after PAY-9.", domain=["ops"])
    (step,) = alice.promote(item.id, to="org", force=True)
    assert step.status == "promoted"
    forced = [e for e in alice.activity() if e.action == "promote-forced"]
    assert forced and forced[0].id == item.id
    record = alice.get(item.id).promotions[-1]
    assert record["forced"] is True and "cites a ticket ('PAY-9')" in record["tells"]
    review = alice.review_promotions()
    assert [s.id for s in review.needs_generalization] == [item.id]
    fixed = alice.generalize(item.id, "Rebuild derived ledgers after a correction lands.")
    assert fixed.status == "promoted" and fixed.pushed
    assert alice.review_promotions().needs_generalization == ()
    text = next(t for t in org_files(world["org"]).values() if item.id in t)
    assert "Rebuild derived ledgers" in text and "example:" in text


def test_private_items_climb_to_team_when_eligible(world) -> None:
    alice, bob = world["alice"], world["bob"]
    mine = alice.create("My scratch note on flaky DNS", "Resolver timeouts come from the VPN split tunnel.",
                        domain=["ops"], visibility="private")
    assert mine.item.path.startswith("private/")
    with pytest.raises(NotEligible, match="has not earned team scope"):
        alice.promote(mine.id)
    assert alice.promote() == []  # nothing eligible yet
    alice.endorse(mine.id, "confirmed on two laptops")
    (step,) = alice.promote()
    assert (step.id, step.to, step.status) == (mine.id, "team", "promoted")
    moved = alice.get(mine.id)
    assert moved.visibility == "team" and not moved.path.startswith("private/")
    alice.sync()
    bob.sync()
    assert bob.get(mine.id).title == "My scratch note on flaky DNS"


def test_review_mode_pushes_a_branch_and_prints_the_git_commands(tmp_path: Path) -> None:
    org = publish_org(tmp_path, review=True)
    (alice,) = team(tmp_path, "payments", org, "alice-agent")
    item = alice.create("Pin the TLS minimum version", "Set the minimum to TLS 1.2 on every client.", domain=["sec"])
    alice.endorse(item.id, "policy")
    (step,) = alice.promote(item.id, to="org")
    assert step.status == "pending_review" and step.pushed and step.pr_url is None
    assert step.branch == f"engram/promote-{item.id.lower()}"
    assert item.id not in "".join(org_files(org).values())
    assert item.id in "".join(org_files(org, step.branch).values())
    assert [p.id for p in alice.review_promotions().pending] == [item.id]
    # A reviewer lands it with exactly the printed commands (on a clone of the org repo).
    reviewer = tmp_path / "reviewer"
    git(tmp_path, "clone", "--quiet", str(org), str(reviewer))
    for command in step.commands[1:]:
        command = command.replace(str(alice.state.state_dir / "scopes" / "org"), str(reviewer))
        git(reviewer, "config", "user.name", "reviewer")
        for part in command.split(" && "):
            args = part.split()[3:]  # drop "git -C <dir>"
            git(reviewer, *args)
    assert item.id in "".join(org_files(org).values())
    _, settled = alice.sync_scopes()
    assert settled == [item.id] and alice.get(item.id).visibility == "org"
    assert alice.review_promotions().pending == ()
    alice.close()


def test_promotion_refusals_change_nothing(world, tmp_path: Path) -> None:
    alice = world["alice"]
    item = alice.create("Something", "General enough text about caching with expiry.", domain=["x"])
    with pytest.raises(InvalidInput, match="to must be team or org"):
        alice.promote(item.id, to="galaxy")
    with pytest.raises(InvalidInput, match="already team"):
        alice.promote(item.id, to="team")
    with pytest.raises(NotFound):
        alice.promote("no-such-item")
    with pytest.raises(NotFound):
        alice.endorse("no-such-item")
    with pytest.raises(InvalidInput, match="note must be text"):
        alice.endorse(item.id, "x" * 5000)
    lone = Vault.init(tmp_path / "lone")
    other = lone.create("Alone", "Nobody shares this vault.", domain=["x"])
    lone.endorse(other.id)
    with pytest.raises(InvalidInput, match="no org vault is configured"):
        lone.promote(other.id, to="org")
    lone.close()
    assert alice.get(item.id).version == 1


def test_two_teams_changing_one_org_item_at_once_converge_through_the_merge(tmp_path: Path) -> None:
    org = publish_org(tmp_path)
    (alice,) = team(tmp_path, "payments", org, "alice-agent")
    (carol,) = team(tmp_path, "search", org, "carol-agent")
    (erin,) = team(tmp_path, "infra", org, "erin-agent")
    item = alice.create("Pin dependency versions in deploys", "Deploy from a lock file so a rebuild is the same "
                        "build.", domain=["eng"])
    alice.endorse(item.id, "payments")
    alice.promote(item.id, to="org")
    carol.sync_scopes()
    erin.sync_scopes()
    # Both vouch for it from clones that have not seen each other's change.
    assert carol.endorse(item.id, "search relies on it")[1] == "org"
    _, scope = erin.endorse(item.id, "infra too")
    assert scope == "org"
    text = next(t for t in org_files(org).values() if item.id in t)
    for note in ("payments", "search relies on it", "infra too"):
        assert note in text
    assert "mergeConflicts" not in text  # a set merge, nothing for a person to resolve
    for vault in (alice, carol, erin):
        vault.close()


def test_an_interrupted_review_promotion_is_finished_on_its_branch_never_on_main(tmp_path: Path) -> None:
    """Killed after the org copy was written on the review branch but before sync
    committed it: the next scope sync commits and pushes it there, and main stays as
    the reviewers left it."""
    org = publish_org(tmp_path, review=True)
    (alice,) = team(tmp_path, "payments", org, "alice-agent")
    alice.sync_scopes()
    clone = alice.state.state_dir / "scopes" / "org"
    branch = "engram/promote-01interrupted"
    git(clone, "switch", "--quiet", "-C", branch, "origin/main")
    half = Vault.open(clone, actor="alice-agent")
    written = half.create("Rotate signing keys yearly", "Rotate every signing key at least once a year.",
                          domain=["sec"]).item
    half.close()  # the process dies here: nothing committed, nothing pushed
    alice.sync_scopes()
    assert written.id not in "".join(org_files(org).values())
    assert written.id in "".join(org_files(org, branch).values())
    assert git(clone, "branch", "--show-current").stdout.strip() == "main"
    assert git(clone, "status", "--porcelain").stdout == ""
    alice.close()


def test_any_writer_on_the_team_settles_a_landed_review_promotion(tmp_path: Path) -> None:
    """The author promotes for review; the org lands it; a teammate who did not write the
    item runs `engram scopes sync` and marks the team copy org. Nobody's sync or doctor
    reports that as an unauthorized change, and the teammate still cannot mark it org by
    hand."""
    from engram.errors import Forbidden
    from tests.trust.settings import add_settings

    org = publish_org(tmp_path, review=True)
    alice, bob = team(tmp_path, "payments", org, "alice-agent", "bob-agent")
    add_settings(alice.root, 'roles:\n  carol: curator\n  "*": writer\n')
    assert alice.sync().pushed
    bob.sync()
    alice, bob = Vault.open(alice.root, actor="alice-agent"), Vault.open(bob.root, actor="bob-agent")
    item = alice.create("Pin the TLS minimum version", "Set the minimum to TLS 1.2 on every client.", domain=["sec"]).item
    alice.endorse(item.id, "policy")
    (step,) = alice.promote(item.id, to="org")
    assert step.status == "pending_review"
    alice.sync()
    bob.sync()
    assert bob.sync_scopes()[1] == []  # not landed yet: nothing to settle
    reviewer = tmp_path / "reviewer"
    git(tmp_path, "clone", "--quiet", str(org), str(reviewer))
    git(reviewer, "config", "user.name", "reviewer")
    git(reviewer, "fetch", "--quiet", "origin", str(step.branch))
    git(reviewer, "merge", "--quiet", "--no-ff", "-m", "land", f"origin/{step.branch}")
    git(reviewer, "push", "--quiet", "origin", "main")
    with pytest.raises(Forbidden, match="alice-agent created"):
        bob.update(item.id, {"visibility": "org"})  # by hand, another's item stays the author's
    _, settled = bob.sync_scopes()
    assert settled == [item.id] and bob.get(item.id).visibility == "org"
    assert bob.sync().pushed
    report = alice.sync()
    assert report.unauthorized == [] and alice.get(item.id).visibility == "org"
    assert [p for p in alice.doctor().problems if p.code == "unauthorized-change"] == []
    assert alice.review_promotions().pending == ()
    alice.close()
    bob.close()
