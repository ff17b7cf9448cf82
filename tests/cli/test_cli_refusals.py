"""Bad input at the command line: the documented exit code, one line on stderr that says
what was wrong and what to do, no traceback, nothing on stdout — and nothing changed on
disk (the vault, its local state under .engram/, and git), checked with a snapshot of
every file before and after.

With ``--json`` the same refusal is one JSON document on stderr
(``{"error": {"code", "message", "hint"}}``). Click's own usage errors exit 2 and name
the option. An unexpected exception is reported as a bug (exit 70) without a traceback
unless ``ENGRAM_DEBUG=1``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from engram.cli import cli
from engram.vault import Vault
from tests.adapter_helpers import Seeded, changed, git_state, seed, tree

#: The exit code of each error code (docs/cli.md "Exit codes").
EXIT = {"invalid_input": 2, "unknown_kind": 2, "not_eligible": 2, "not_general": 2, "not_found": 3,
        "vault_not_found": 3, "conflict": 4, "version_conflict": 4, "already_exists": 4, "git_error": 8}

Run = Callable[..., Result]


@pytest.fixture
def seeded(vault: Vault) -> Seeded:
    return seed(vault)


@pytest.fixture
def run(vault: Vault) -> Iterator[Run]:
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, ["--vault", str(vault.root), *args], input=input, prog_name="engram",
                             catch_exceptions=False)

    yield invoke


def refused_alone(result: Result, code: int, fragment: str) -> str:
    """One ``error: …`` line with a fix after the problem; nothing else anywhere."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: ") and fragment in line, line
    assert "Traceback" not in line
    _, _, fix = line.partition(". ")
    assert fix.strip(), f"says what is wrong but not what to do: {line}"
    return line


Case = tuple[list[str], int, str]
#: (arguments with @REPACK/@WINDOW/… placeholders, exit code, fragment of the message)
REFUSALS: list[Case] = [
    (["add", "Title", "--importance", "7", "--body", "x"], 2, "importance must be from 0 to 1, not 7.0"),
    (["add", "Title", "--confidence", "-1", "--body", "x"], 2, "confidence must be from 0 to 1"),
    (["add", "Title", "-d", "a/../../b", "--body", "x"], 2, "is not a folder name"),
    (["add", "Title", "--set", "id=mine", "--body", "x"], 2, "'id' is a built-in field"),
    (["add", "two\nlines", "--body", "x"], 2, "title must be one line"),
    (["add", "", "--body", "x"], 2, "title"),
    (["get", "no-such-item"], 3, "no item matches 'no-such-item'"),
    (["get", "../../etc/passwd"], 2, ""),
    (["update", "@REPACK", "--version", "9", "--title", "New"], 4, "is at version 1, not 9"),
    (["update", "@REPACK"], 2, "nothing to change"),
    (["update", "@REPACK", "--set", "version=3"], 2, "'version' cannot be changed by an update"),
    (["update", "@REPACK", "--importance", "2"], 2, "importance must be from 0 to 1"),
    (["update", "no-such-item", "--title", "x"], 3, "no item matches"),
    (["delete", "@REPACK", "--version", "5", "--yes"], 4, "is at version 1, not 5"),
    (["delete", "no-such-item", "--yes"], 3, "no item matches"),
    (["delete", "@REPACK"], 2, "refusing to delete ops/postgres/"),
    (["link", "@REPACK", "loves", "@WINDOW"], 2, "unknown synapse kind 'loves'"),
    (["link", "@REPACK", "extends", "@REPACK"], 2, "an item cannot link to itself"),
    (["link", "@REPACK", "extends", "@WINDOW", "--weight", "3"], 2, "weight must be from 0 to 1"),
    (["link", "@REPACK", "extends", "no-such-item"], 3, "no item matches 'no-such-item'"),
    (["unlink", "@WINDOW", "causes", "@REPACK"], 3, "there is no causes edge"),
    (["synapses", "no-such-item"], 3, "no item matches"),
    (["history", "no-such-item"], 3, "no item matches"),
    (["search", "?! ..."], 2, "the query has no words to search for"),
    (["search", "vacuum", "--as-of", "yesterday"], 2, "not a timestamp: 'yesterday'"),
    (["learn", "   "], 2, "the lesson is empty"),
    (["feedback", "@REPACK", "--helped", "--confidence", "5"], 2, "confidence must be from 0 to 1"),
    (["feedback", "no-such-item", "--failed"], 3, "no item matches"),
    (["lineage", "no-such-item"], 3, "no item matches"),
    (["verify", "@REPACK", "--evidence", " "], 2, "evidence is empty"),
    (["verify", "no-such-item"], 3, "no item matches"),
    (["resolve", "@REPACK", "@REPACK", "--keep", "new"], 2, "old and new are the same item"),
    (["accept", "prop-0000000000000000"], 3, "no proposal 'prop-0000000000000000'"),
    (["dismiss", "no-such-proposal"], 3, "no proposal"),
    (["restore", "@REPACK"], 2, "is active, not frozen or forgotten: nothing to restore"),
    (["purge", "@REPACK", "--yes"], 2, "only forgotten items can be purged"),
    (["archive", "@REPACK", "--version", "3"], 4, "is at version 1, not 3"),
    (["forget", "no-such-item"], 3, "no item matches"),
    (["add-skill", "Empty steps", "--step", " "], 2, "steps"),
    (["conflicts", "--resolve", "@REPACK"], 2, "is not flagged for review"),
    (["conflicts", "--resolve", "@FLAGGED"], 4, "still holds 1 conflict block(s)"),
    (["trash", "purge", "--older-than", "soon"], 2, "'soon' is not an age"),
    (["trash", "purge", "--older-than", "0s"], 2, "refusing to purge 1 item(s) without confirmation"),
    (["import", "missing-source.jsonl"], 2, "there is nothing at missing-source.jsonl"),
    (["import", "@BADJSON"], 2, "not valid JSON"),
    (["import", "@BADJSON", "--from", "obsidian"], 2, "is a file; --from obsidian reads a folder"),
    (["import", "@VAULT"], 2, "is the vault itself"),
    (["adopt", "/"], 2, "is outside the vault"),
    (["sync", "--remote", "nowhere"], 8, "there is no remote named 'nowhere'"),
    (["endorse", "no-such-item"], 3, "no item matches"),
    (["promote", "@REPACK", "--to", "org"], 2, "no org vault is configured"),
    (["promote", "--org-content", "a", "--org-content-file", "@BADJSON"], 2, "not both"),
    (["generalize", "@REPACK"], 2, "no org vault is configured"),
    (["need", " "], 2, "the need is empty"),
    (["scopes", "setup", "--agentsync", "/no/such/folder"], 2, "does not exist"),
    (["distill", "--agentsync", "/no/such/folder"], 2, "does not exist"),
]


def fill(args: list[str], s: Seeded, vault: Vault, tmp: Path) -> list[str]:
    bad = tmp / "bad.json"
    if not bad.exists():
        bad.write_text("[{broken\n", encoding="utf-8")
    names = {"@REPACK": s.repack, "@WINDOW": s.window, "@FLAGGED": s.flagged, "@BADJSON": str(bad),
             "@VAULT": str(vault.root)}
    return [names.get(a, a) for a in args]


def test_a_refusal_is_one_line_with_a_fix_and_changes_nothing(
    run: Run, vault: Vault, seeded: Seeded, tmp_path: Path
) -> None:
    # One seeded vault for every case (seeding is the slow part): each case must leave it
    # exactly as it was, so the next starts from the same vault.
    for args, code, fragment in REFUSALS:
        argv = fill(args, seeded, vault, tmp_path)
        before, head = tree(vault.root), git_state(vault.root)
        try:
            refused_alone(run(*argv), code, fragment)
        except AssertionError as exc:
            raise AssertionError(f"engram {' '.join(argv)}: {exc}") from exc
        assert changed(before, tree(vault.root)) == [], argv
        assert git_state(vault.root) == head, argv


def test_with_json_every_refusal_is_a_json_document_with_code_message_and_hint(
    run: Run, vault: Vault, seeded: Seeded, tmp_path: Path
) -> None:
    before = tree(vault.root)
    for args, code, fragment in REFUSALS:
        argv = fill(args, seeded, vault, tmp_path)
        if argv[0] in ("export", "trash") and argv[1:2] != ["list"] and argv[1:2] != ["purge"]:
            continue
        result = run(*argv, "--json")
        assert result.exit_code == code and result.stdout == "", argv
        payload = json.loads(result.stderr)
        assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message", "hint"}
        err = payload["error"]
        assert EXIT[err["code"]] == code, (argv, err)
        assert fragment in f"{err['message']} {err['hint'] or ''}", (argv, err)
        assert err["hint"], f"{argv}: no hint says what to do"
    assert changed(before, tree(vault.root)) == []


def test_every_command_that_writes_takes_json_for_its_errors_too(run: Run, seeded: Seeded) -> None:
    # --json given before the failing argument is parsed still turns the error into JSON.
    result = run("update", "--json", seeded.repack, "--version", "7", "--title", "x")
    err = json.loads(result.stderr)["error"]
    assert result.exit_code == 4 and err["code"] == "version_conflict"
    assert err["message"].startswith(f"item {seeded.repack} is at version 1, not 7")
    assert "pass version 1" in err["hint"]


# ---------------------------------------------------------------------- usage errors


USAGE: list[tuple[list[str], str]] = [
    (["add"], "Missing argument 'TITLE'"),
    (["add", "t", "--kind", "insight"], "Invalid value for '--kind' / '-k': 'insight' is not one of"),
    (["add", "t", "--set", "noequals"], "Invalid value for --set: 'noequals' is not key=value."),
    (["add", "t", "--importance", "high"], "'high' is not a valid float"),
    (["update", "@REPACK", "--version", "x", "--title", "t"], "'x' is not a valid integer"),
    (["update", "@REPACK", "--status", "lost"], "Invalid value for '--status'"),
    (["list", "--limit", "0"], "0 is not in the range x>=1"),
    (["list", "--visibility", "public"], "Invalid value for '--visibility'"),
    (["search", "x", "--limit", "500"], "500 is not in the range 1<=x<=200"),
    (["search", "x", "--tier", "all"], "Invalid value for '--tier'"),
    (["search", "x", "--budget", "0"], "0 is not in the range x>=1"),
    (["paths", "--depth", "0"], "0 is not in the range x>=1"),
    (["synapses", "--direction", "sideways"], "Invalid value for '--direction'"),
    (["feedback", "@REPACK"], "say --helped or --failed."),
    (["resolve", "@REPACK", "@WINDOW", "--keep", "both"], "Invalid value for '--keep'"),
    (["resolve", "@REPACK", "@WINDOW"], "Missing option '--keep'. Choose from:"),
    (["maintain", "nap"], "'nap' is not one of 'light', 'deep', 'rem'"),
    (["proposals", "--kind", "rumor"], "Invalid value for '--kind'"),
    (["accept", "x", "--resolution", "both"], "Invalid value for '--resolution'"),
    (["purge", "@REPACK"], "purge deletes the item for good: pass --yes."),
    (["add-skill", "No steps"], "a skill needs at least one step or a component: --step TEXT or --component ID."),
    (["stale", "--limit", "0"], "0 is not in the range x>=1"),
    (["skills", "--limit", "0"], "0 is not in the range x>=1"),
    (["export", "--format", "xml"], "'xml' is not one of 'markdown', 'jsonl'"),
    (["import", "x", "--from", "notion"], "Invalid value for '--from'"),
    (["trash", "purge"], "Missing option '--older-than'"),
    (["merge", "stats", "--days", "0"], "0 is not in the range x>=1"),
    (["merge", "anomalies", "--days", "x"], "'x' is not a valid integer range"),
    (["promote", "--to", "world"], "Invalid value for '--to'"),
    (["promote", "--org-content-file", "/no/such/file"], "'/no/such/file' does not exist"),
    (["serve", "--profile", "huge"], "Invalid value for '--profile'"),
    (["serve", "--port", "70000"], "70000 is not in the range 0<=x<=65535"),
    (["serve", "--token", "t"], "--token only applies to --http."),
    (["serve", "--http", "--request-timeout", "0"], "0 is not in the range x>0"),
    (["viewer", "--port", "-1"], "-1 is not in the range 0<=x<=65535"),
    (["no-such-command"], "No such command 'no-such-command'"),
    (["remote", "add"], "Missing argument 'URL'"),
    (["hooks", "reinstall"], "No such command 'reinstall'"),
]


def test_usage_errors_exit_2_name_the_problem_and_change_nothing(
    run: Run, vault: Vault, seeded: Seeded, tmp_path: Path
) -> None:
    before = tree(vault.root)
    for args, fragment in USAGE:
        argv = fill(args, seeded, vault, tmp_path)
        result = run(*argv)
        assert result.exit_code == 2 and result.stdout == "", (argv, result.stderr)
        assert fragment in result.stderr and "Traceback" not in result.stderr, (argv, result.stderr)
        assert "\nError: " in result.stderr, (argv, result.stderr)
        assert "--help' for help" in result.stderr, argv  # where to read how to call it
        assert changed(before, tree(vault.root)) == [], argv


# ---------------------------------------------------------------------- which vault


def test_a_vault_that_is_not_there_is_named_with_how_to_make_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    missing = tmp_path / "no-such-vault"
    for argv in (["--vault", str(missing), "list"], ["list", "--vault", str(missing)]):
        result = runner.invoke(cli, argv, prog_name="engram")
        line = refused_alone(result, 3, f"no folder at {missing}")
        assert "engram init PATH" in line
    monkeypatch.setenv("ENGRAM_VAULT", str(missing))
    refused_alone(runner.invoke(cli, ["list"], prog_name="engram"), 3, f"no folder at {missing}")
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.delenv("ENGRAM_VAULT")
    monkeypatch.chdir(plain)
    line = refused_alone(runner.invoke(cli, ["get", "x"], prog_name="engram"), 3, "")
    assert "engram init" in line and "--vault" in line
    assert not missing.exists() and list(plain.iterdir()) == []


def test_a_broken_settings_file_is_named_and_nothing_is_written(run: Run, vault: Vault, seeded: Seeded) -> None:
    settings = vault.root / "engram.yaml"
    settings.write_text("recall: [unclosed\n", encoding="utf-8")
    before = tree(vault.root)
    result = run("add", "Something new", "--body", "text")
    assert result.exit_code != 0 and result.stdout == ""
    assert "engram.yaml" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert changed(before, tree(vault.root)) == []


# ---------------------------------------------------------------------- bugs


def test_an_unexpected_exception_is_a_bug_report_without_a_traceback(
    run: Run, vault: Vault, seeded: Seeded, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Vault, "list", boom)
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("ENGRAM_TRACEBACK_FILE", str(trace))
    result = run("list")
    assert result.exit_code == 70 and result.stdout == ""
    assert result.stderr.startswith("internal error: RuntimeError: disk on fire\n")
    assert "ENGRAM_DEBUG=1" in result.stderr and "Traceback" not in result.stderr
    assert "Traceback" in trace.read_text(encoding="utf-8") and "disk on fire" in trace.read_text(encoding="utf-8")
    monkeypatch.setenv("ENGRAM_DEBUG", "1")
    with pytest.raises(RuntimeError, match="disk on fire"):
        run("list")
