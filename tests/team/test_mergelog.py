"""Merge records: stats and anomalies, and the merge / merge-driver / sync commands."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.team import gitstore, mergelog
from engram.vault import Vault
from mergedriver.codec import format_time
from mergedriver.merge import merge_file
from mergedriver.records import append_records
from tests.merge_helpers import engram

ALICE = {"updatedBy": "alice", "updatedAt": "2026-06-22T09:00:00.000Z", "version": 2}
BOB = {"updatedBy": "bob", "updatedAt": "2026-06-22T10:00:00.000Z", "version": 2}


def record_merges(state: Path) -> None:
    """Real merge results: 2 clean, 3 kept conflicts on one path, 1 unparseable side."""
    base = engram("x\n", retrievalCount=1)
    clean = merge_file(base, engram("x\n", retrievalCount=2, **ALICE), engram("x\n", retrievalCount=3, **BOB), "a.md")
    kept = merge_file(base, engram("y\n", **ALICE), engram("z\n", **BOB), "hot.md")
    broken = merge_file(base, engram("y\n", **ALICE), b"---\nid: [\n---\n", "bad.md")
    records = [clean.record("a.md"), clean.record("b.md")] + [kept.record("hot.md")] * 3 + [broken.record("bad.md")]
    assert append_records(state, records, via="driver")


def test_stats_count_merges_resolve_rate_kept_conflicts_and_strategies(tmp_path: Path) -> None:
    record_merges(tmp_path)
    stats = mergelog.stats(tmp_path)
    assert (stats.merges, stats.clean, stats.kept, stats.failed) == (6, 2, 3, 1)
    assert stats.resolve_rate == 5 / 6
    assert stats.conflicts_kept == 3
    assert (stats.by_strategy["add"], stats.by_strategy["lines:conflict-kept"]) == (5, 3)
    assert stats.by_kind == {"engram": 5, "fallback": 1}


def test_stats_honour_the_window_and_skip_garbage_lines(tmp_path: Path) -> None:
    old = format_time(datetime.now(UTC) - timedelta(days=40))
    (tmp_path / "merges.jsonl").write_text(
        json.dumps({"at": old, "path": "old.md", "ok": True, "clean": True}) + "\nnot json\n{}\n"
    )
    record_merges(tmp_path)
    assert mergelog.stats(tmp_path).merges == 7
    assert mergelog.stats(tmp_path, days=30).merges == 6
    assert mergelog.stats(tmp_path / "nowhere").merges == 0


def test_anomalies_name_hot_paths_and_bad_input(tmp_path: Path) -> None:
    record_merges(tmp_path)
    found = [(a.code, a.path, a.count) for a in mergelog.anomalies(tmp_path)]
    assert found == [("conflicts_often", "hot.md", 3), ("unparseable", "bad.md", 1)]


def test_merge_commands_print_stats_and_anomalies(vault: Vault) -> None:
    record_merges(vault.state.state_dir)
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(vault.root), "merge", "stats"])
    assert out.exit_code == 0
    assert "6 merge(s), all time: 2 clean, 3 kept a conflict (3 note(s)), 1 needed a person" in out.output
    data = json.loads(runner.invoke(cli, ["--vault", str(vault.root), "merge", "stats", "--days", "7", "--json"]).output)
    assert data["merges"] == 6 and data["resolveRate"] == 5 / 6
    out = runner.invoke(cli, ["--vault", str(vault.root), "merge", "anomalies", "--json"])
    assert [a["code"] for a in json.loads(out.output)] == ["conflicts_often", "unparseable"]
    out = runner.invoke(cli, ["--vault", str(vault.root), "merge", "stats", "--days", "0"])
    assert out.exit_code == 2


def test_merge_driver_commands_work_for_a_vault_in_a_path_with_spaces(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "my team memory")
    runner = CliRunner()
    base = ["--vault", str(vault.root), "merge-driver"]
    out = runner.invoke(cli, [*base, "uninstall"])
    assert "merge driver: not installed" in out.output
    out = runner.invoke(cli, [*base, "install", "--json"])
    data = json.loads(out.output)
    assert data["installed"] and data["current"] and data["routed"]
    assert gitstore.merge_driver_status(vault.root).command == gitstore.driver_command()
    out = runner.invoke(cli, [*base, "status"])
    assert out.exit_code == 0 and "merge driver: installed" in out.output


def test_the_sync_command_reports_what_it_did(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "solo")
    vault.create("Something", "body")
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(vault.root), "sync"])
    assert out.exit_code == 0
    assert "committed" in out.output and "no remote configured" in out.output
    data = json.loads(runner.invoke(cli, ["--vault", str(vault.root), "sync", "--json"]).output)
    assert data["committed"] == 0 and data["remote"] is None
    out = runner.invoke(cli, ["--vault", str(vault.root), "sync", "--remote", "nope"])
    assert out.exit_code == 8 and "there is no remote named 'nope'" in out.output
