"""The engram CLI: everyday commands, --json, exit codes and messages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from engram.cli import cli
from engram.demo import SEEDS
from engram.vault import Vault


@pytest.fixture
def run(vault: Vault):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, ["--vault", str(vault.root), *args], input=input, catch_exceptions=False)

    return invoke


def test_add_get_list_update_delete(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    added = run("add", "Use pg_repack, not VACUUM FULL", "-d", "ops/postgres", "-k", "procedure", "-t", "postgres",
                "--body", "VACUUM FULL locks the table.")
    assert added.exit_code == 0
    item_id = added.stdout.strip()
    assert len(item_id) == 26
    shown = run("get", item_id)
    assert shown.exit_code == 0 and shown.stdout.startswith(f"---\nid: {item_id}\n")
    assert "VACUUM FULL locks the table." in shown.stdout
    as_json = json.loads(run("get", "Use pg_repack, not VACUUM FULL", "--json").stdout)
    assert as_json["id"] == item_id and as_json["domainTags"] == ["ops", "postgres"]
    listed = run("list", "--domain", "ops")
    assert item_id in listed.stdout and "ops/postgres/use-pg_repack-not-vacuum-full.md" in listed.stdout
    updated = run("update", item_id, "--version", "1", "--add-tag", "runbook", "--importance", "0.9")
    assert updated.exit_code == 0 and "version 2" in updated.stdout
    assert vault.get(item_id).tags == ("postgres", "runbook")
    stale = run("update", item_id, "--version", "1", "--title", "x")
    assert stale.exit_code == 4 and "is at version 2, not 1" in stale.stderr and "pass version 2" in stale.stderr
    deleted = run("delete", item_id, "--yes")
    assert deleted.exit_code == 0 and "deleted" in deleted.stdout
    assert run("get", item_id).exit_code == 3


def test_body_from_stdin_and_dedup_messages(run) -> None:  # type: ignore[no-untyped-def]
    first = run("add", "Client timeouts below the load balancer's", "-d", "ops", input="ALB idle timeout is 60 s; use 55 s.\n")
    item_id = first.stdout.strip()
    dup = run("add", "Client timeouts below the load balancer's", "-d", "ops", input="ALB idle timeout is 60 s; use 55 s.\n")
    assert dup.stdout.strip() == item_id and "duplicate of" in dup.stderr
    data = json.loads(run("add", "Client timeouts below the load balancer's", "--json", "--body", "ALB idle timeout is 60 s; use 55 seconds.").stdout)
    # A near match is a learn decision, never an instruction to overwrite: 55 s = 55 seconds.
    assert data["outcome"] == "DUPLICATE" and data["id"] == item_id and "reinforced" in data["note"]


def test_link_unlink_and_synapses(run) -> None:  # type: ignore[no-untyped-def]
    a = run("add", "Prefer immutable values", "--body", "frozen").stdout.strip()
    b = run("add", "Copy with dataclasses.replace", "--body", "replace()").stdout.strip()
    linked = run("link", b, "extends", a, "--weight", "0.8", "--evidence", "same idea")
    assert linked.exit_code == 0 and linked.stdout.startswith("syn-")
    listing = json.loads(run("synapses", a, "--json").stdout)["synapses"]
    assert [(s["from"], s["kind"], s["to"]) for s in listing] == [(b, "extends", a)]
    shown = run("synapses", a).stdout
    assert f"Copy with dataclasses.replace ({b}) --extends--> Prefer immutable values ({a})  weight 0.8" in shown
    assert f"{a}  observation Prefer immutable values  (prefer-immutable-values.md)" in run("list").stdout
    assert run("unlink", b, "extends", a).exit_code == 0
    assert json.loads(run("synapses", a, "--json").stdout) == {"synapses": [], "wikilinks": []}


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["add", "x" * 10_000, "--body", "b"], 2, "the limit is 300"),
        (["add", "ok", "-d", "../../etc", "--body", "b"], 2, "not a folder name"),
        (["add", "ok", "-k", "insight", "--body", "b"], 2, "Invalid value for '--kind'"),
        (["link", "Existing", "relates_to", "Existing"], 2, "unknown synapse kind 'relates_to'. Use one of: extends"),
        (["get", "nothing"], 3, "no item matches"),
        (["update", "nothing", "--title", "t"], 3, "no item matches"),
        (["delete", "nothing", "--yes"], 3, "no item matches"),
    ],
)
def test_errors_have_exit_codes_and_say_what_to_do(run, vault: Vault, args: list[str], code: int, message: str) -> None:  # type: ignore[no-untyped-def]
    vault.create("Existing", "here")
    result = run(*args)
    assert result.exit_code == code
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_link_to_a_missing_item_is_a_clear_error(run) -> None:  # type: ignore[no-untyped-def]
    a = run("add", "Exists", "--body", "x").stdout.strip()
    result = run("link", a, "extends", "01MISSING0000000000000000X")
    assert result.exit_code == 3 and "no item matches '01MISSING0000000000000000X'" in result.stderr


def test_json_errors_are_json(run) -> None:  # type: ignore[no-untyped-def]
    result = run("get", "nothing", "--json")
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "not_found" and "engram list" in error["hint"]


def test_delete_without_a_tty_needs_yes(run) -> None:  # type: ignore[no-untyped-def]
    item_id = run("add", "Keep me", "--body", "x").stdout.strip()
    result = run("delete", item_id)
    assert result.exit_code == 2 and "Pass --yes" in result.stderr


def test_list_reports_broken_files_without_failing(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    vault.create("Good", "fine")
    (vault.root / "broken.md").write_bytes(b"---\nid: 01X\ntitle: \xff\n---\n")
    result = run("list")
    assert result.exit_code == 0 and "Good" not in result.stderr and "could not be read" in result.stderr
    assert json.loads(run("list", "--json").stdout)["broken"][0]["path"] == "broken.md"


def test_doctor_exit_code_and_fix(run, vault: Vault) -> None:  # type: ignore[no-untyped-def]
    item = vault.create("Alpha", "alpha").item
    assert item.path
    path = vault.root / item.path
    path.write_text(path.read_text().replace("alpha\n", "edited\n"))
    # An edit made outside engram is not a problem: the next write records it.
    result = run("doctor")
    assert result.exit_code == 0 and "1 item(s) edited outside engram" in result.stdout
    beta = vault.create("Beta", "beta").item
    vault.link(item.id, "extends", beta.id)
    (vault.root / str(beta.path)).unlink()  # deleted by hand: the edge now dangles
    assert run("doctor").exit_code == 1
    assert run("doctor", "--fix").exit_code == 0
    assert json.loads(run("doctor", "--json").stdout)["ok"] is True


# ---------------------------------------------------------------------- real processes


def engram_exe() -> str:
    exe = shutil.which("engram", path=str(Path(sys.executable).parent))
    assert exe, "the engram console script is not installed in this environment"
    return exe


def test_console_script_end_to_end(tmp_path: Path) -> None:
    env = dict(os.environ)
    root = tmp_path / "mem"
    subprocess.run([engram_exe(), "init", str(root)], env=env, check=True, capture_output=True)
    env["ENGRAM_VAULT"] = str(root)
    out = subprocess.run([engram_exe(), "add", "Piped body", "-d", "notes"], input="from stdin\n", env=env,
                         capture_output=True, text=True, check=True)
    item_id = out.stdout.strip()
    shown = subprocess.run([engram_exe(), "get", item_id], env=env, capture_output=True, text=True, check=True)
    assert "from stdin" in shown.stdout
    bad = subprocess.run([engram_exe(), "get", "nope"], env=env, capture_output=True, text=True, check=False)
    assert bad.returncode == 3 and bad.stderr.startswith("error: no item matches 'nope'")


def test_outside_a_vault_the_error_says_how_to_make_one(tmp_path: Path) -> None:
    env = dict(os.environ)
    proc = subprocess.run([engram_exe(), "list"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 3 and "engram init" in proc.stderr and "Traceback" not in proc.stderr


def test_demo_builds_and_rebuilds(tmp_path: Path) -> None:
    env = dict(os.environ)
    target = tmp_path / "demo"
    first = subprocess.run([engram_exe(), "demo", str(target)], env=env, capture_output=True, text=True, check=True)
    assert "DUPLICATE" in first.stdout and "is at version" in first.stdout
    assert "(reached through a link)" in first.stdout  # graph expansion at work
    assert "0 problems" in first.stdout
    again = subprocess.run([engram_exe(), "demo", str(target)], env=env, capture_output=True, text=True, check=True)
    assert again.returncode == 0
    assert len(Vault.open(target).list()) == len(SEEDS)


def test_version_names_the_distribution_engram_is_published_as() -> None:
    """`engram-vault` on PyPI is another project: the distribution is engram-team-memory,
    named once (engram.DISTRIBUTION) and matching pyproject.toml."""
    import importlib.metadata
    import tomllib

    from engram import DISTRIBUTION
    from tests.conftest import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "engram-team-memory"
    assert project["scripts"]["engram"] == "engram.cli:main"
    out = CliRunner().invoke(cli, ["--version"])
    assert out.exit_code == 0 and out.stdout.strip() == f"engram, version {importlib.metadata.version(DISTRIBUTION)}"


def test_init_honours_global_vault_option(tmp_path: Path) -> None:
    """`engram --vault X init` makes X a vault and leaves the working directory alone."""
    here = tmp_path / "here"
    here.mkdir()
    target = tmp_path / "qv"
    proc = subprocess.run([engram_exe(), "--vault", str(target), "init"], cwd=here,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (target / "engram.yaml").is_file()
    assert list(here.iterdir()) == []
    # PATH, when given, wins over --vault
    other = tmp_path / "other"
    proc = subprocess.run([engram_exe(), "--vault", str(target), "init", str(other)], cwd=here,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (other / "engram.yaml").is_file()
