"""The learning and lifecycle commands: happy paths with --json, bad input, exit codes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from engram.cli import cli
from engram.vault import Vault


@pytest.fixture
def run(vault: Vault):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, ["--vault", str(vault.root), *args], input=input, catch_exceptions=False)

    return invoke


def js(result: Result) -> dict:  # type: ignore[type-arg]
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_learn_feedback_lineage_and_history(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    first = js(run("learn", "The staging database listens on port 5432.", "-d", "ops", "--json"))
    assert first["action"] == "inserted" and first["item"]["path"].startswith("ops/")
    dry = js(run("learn", "The staging database listens on port 6432.", "--dry-run", "--json"))
    assert dry["action"] == "none" and dry["verdict"]["relation"] == "contradicts"
    fixed = run("learn", "The staging database listens on port 6432.")
    assert fixed.exit_code == 0 and fixed.stdout.startswith("superseded: ")
    new_id = vault.get(first["item"]["id"]).superseded_by
    assert new_id
    line = js(run("lineage", first["item"]["id"], "--json"))
    assert line["current"] == new_id
    fb = js(run("feedback", new_id, "--helped", "--confidence", "0.5", "--note", "worked", "--json"))
    assert fb["changes"][0]["importanceDelta"] == pytest.approx(0.025) and fb["pending"]
    flushed = js(run("flush", "--json"))
    assert flushed["feedback"]["entries"] == 1
    hist = js(run("history", new_id, "--json"))
    assert [e["action"] for e in hist["audit"]][:2] == ["create", "update"] and "commits" in hist
    nothing = run("feedback", new_id)
    assert nothing.exit_code == 2 and "--helped or --failed" in nothing.output
    missing = run("feedback", "no-such-item", "--failed")
    assert missing.exit_code == 3


def test_verify_stale_resolve(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    a = vault.create("Cron runs in UTC", "Cron jobs run in UTC.").item
    b = vault.create("Cron runs locally", "Cron jobs run in local time.").item
    up = js(run("verify", a.id, "--evidence", "checked", "--json"))
    assert up["verificationStatus"] == "plausible"
    done = js(run("verify", a.id, "--note", "still", "--valid-while", "on the scheduler", "--json"))
    assert done["verificationStatus"] == "verified" and done["lastVerifiedAt"]
    assert js(run("stale", "--all", "--json"))["checked"] == 2
    settled = js(run("resolve", a.id, b.id, "--keep", "old", "--json"))
    assert settled["resolution"] == "keep_old" and vault.get(b.id).status == "frozen"
    bad = run("resolve", a.id, b.id, "--keep", "both")
    assert bad.exit_code == 2


def test_maintain_proposals_accept_dismiss_archive_forget_restore_purge(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    item = vault.create("Flaky step", "Restart by hand.").item
    for _ in range(3):
        run("feedback", item.id, "--failed")
    assert js(run("maintain", "light", "--json"))["folded"]["feedback"]["entries"] == 3
    listed = js(run("proposals", "--json"))["proposals"]
    assert [p["kind"] for p in listed] == ["archive"]
    done = js(run("accept", listed[0]["id"][:12], "--note", "ok", "--json"))
    assert done["status"] == "accepted" and vault.get(item.id).status == "frozen"
    assert run("accept", listed[0]["id"]).exit_code == 2  # decided already
    assert js(run("proposals", "--all", "--json"))["proposals"][0]["decidedBy"] == "tester"
    assert run("restore", item.id).exit_code == 0 and vault.get(item.id).status == "active"
    assert run("purge", item.id, "--yes").exit_code == 2  # not forgotten
    assert js(run("forget", item.id, "--json"))["status"] == "forgotten"
    assert run("purge", item.id).exit_code == 2  # no terminal, no --yes
    assert js(run("purge", item.id, "--yes", "--json"))["id"] == item.id
    assert run("get", item.id).exit_code == 3
    assert js(run("archive", vault.create("Other", "x").id, "--json"))["status"] == "frozen"
    assert run("dismiss", "prop-0000").exit_code == 3
    assert js(run("maintain", "rem", "--json"))["stage"] == "rem"


def test_skills(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    made = js(run("add-skill", "Rebuild a bloated table online", "--step", "check disk", "--step", "run pg_repack",
                  "--precondition", "a primary key", "--json"))
    assert made["outcome"] == "NEW"
    listed = js(run("skills", "--json"))["skills"]
    assert listed[0]["steps"] == ["check disk", "run pg_repack"] and listed[0]["successRate"] == 0.5
    found = js(run("skills", "rebuild a bloated table", "--json"))["skills"]
    assert found[0]["id"] == made["id"]
    assert run("add-skill", "No steps").exit_code == 2


def test_verify_refute_records_the_evidence_and_needs_it(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    item = vault.create("Logs are kept 30 days", "Logs are kept 30 days.").item
    done = js(run("verify", item.id, "--refute", "--evidence", "the bucket deletes logs after 7 days", "--json"))
    assert done["verificationStatus"] == "refuted" and done["status"] == "active"
    assert (vault.get(item.id).verifications or ())[-1]["note"] == "the bucket deletes logs after 7 days"
    again = run("verify", item.id, "--evidence", "someone said so")
    assert again.exit_code == 2 and "refuted" in again.output and "engram verify" in again.output
    bare = run("verify", item.id, "--refute")
    assert bare.exit_code == 2 and "--refute needs --evidence" in bare.output
    assert vault.get(item.id).verification_status == "refuted"
    plain = run("verify", item.id, "--note", "raised to 30 days again")
    assert plain.exit_code == 0 and plain.stdout.startswith(f"{item.id} is verified")


def test_add_skill_with_components_and_invoke_skill(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    check = js(run("add-skill", "Check the table", "--step", "check free disk", "--json"))["id"]
    made = js(run("add-skill", "Rebuild a bloated table", "--component", check, "--step", "run pg_repack", "--json"))
    assert vault.get(made["id"]).composed_of == (check,)
    shown = run("invoke-skill", made["id"])
    assert shown.exit_code == 0 and shown.stdout.splitlines()[1:] == [
        f"    1. check free disk  ({check})", "    2. run pg_repack"]
    done = js(run("invoke-skill", made["id"], "--outcome", "failure", "--note", "disk full", "--json"))
    assert done["outcome"] == "failure" and done["skill"]["failures"] == 1 and done["skill"]["successRate"] == 0.3333
    bad = run("invoke-skill", made["id"], "--outcome", "meh")
    assert bad.exit_code == 2
    nothing = run("add-skill", "Empty")
    assert nothing.exit_code == 2 and "step or a component" in nothing.output
