"""Who a write is attributed to: --actor, then ENGRAM_ACTOR, then `git config user.name`
of the vault's repository, then the login name — in items, the audit log, sync commits
and MCP ``status``."""

from __future__ import annotations

import getpass
import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from engram.cli import cli
from engram.mcp import build_server
from engram.vault import Vault
from tests.mcp_helpers import ok


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def added_by(root: Path, *args: str) -> str:
    out = CliRunner().invoke(cli, ["--vault", str(root), *args, "add", "A note", "--body", "x", "--no-dedupe"])
    assert out.exit_code == 0, out.output
    with Vault.open(root) as vault:
        item = vault.get(out.stdout.strip())
        assert vault.history(item.id)[-1].actor == item.created_by
        return item.created_by


def test_the_four_sources_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Vault.init(tmp_path / "v").root
    git(root, "config", "user.name", "Dana Ortiz")  # the vault repository's own identity
    assert added_by(root, "--actor", "ci-bot") == "ci-bot"
    assert added_by(root) == "tester"  # ENGRAM_ACTOR, set by the test environment
    monkeypatch.delenv("ENGRAM_ACTOR")
    assert added_by(root) == "Dana Ortiz"  # not the user's global "Test User"
    git(root, "config", "--unset", "user.name")
    assert added_by(root) == "Test User"  # what git itself would use in this repository
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "empty-gitconfig"))
    assert added_by(root) == getpass.getuser()


def test_sync_commits_carry_the_git_identity_not_the_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_ACTOR")
    root = Vault.init(tmp_path / "v").root
    git(root, "config", "user.name", "Dana Ortiz")
    with Vault.open(root) as vault:
        vault.create("Something learned", "body")
        vault.sync()
        assert "by Dana Ortiz on" in git(vault.root, "log", "-1", "--format=%s")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_status_says_where_the_agent_id_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    root = Vault.init(tmp_path / "v").root
    config = tmp_path / "mcp.yaml"
    async with Client(build_server(root, config_file=config)) as client:
        status = ok(await client.call_tool("status", {}))
    assert (status["agent_id"], status["agent_id_source"]) == ("tester", "ENGRAM_ACTOR")
    assert "agent_id" not in {g["setting"] for g in status["gaps"]}
    async with Client(build_server(root, actor="claude@laptop", config_file=config)) as client:
        status = ok(await client.call_tool("status", {}))
    assert (status["agent_id"], status["agent_id_source"]) == ("claude@laptop", "--actor")
    monkeypatch.delenv("ENGRAM_ACTOR")
    git(root, "config", "user.name", "Dana Ortiz")
    async with Client(build_server(root, config_file=config)) as client:
        status = ok(await client.call_tool("status", {}))
        created = ok(await client.call_tool("engram_create", {"title": "From the agent", "content": "x"}))
    assert status["agent_id"] == "Dana Ortiz"
    assert status["agent_id_source"] == "git config user.name of the vault's repository"
    gap = next(g for g in status["gaps"] if g["setting"] == "agent_id")
    assert "'Dana Ortiz' (from git config user.name" in gap["problem"]
    with Vault.open(root) as vault:
        assert vault.get(created["id"]).created_by == "Dana Ortiz"


def test_cli_json_has_no_actor_surprises(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v").root
    out = CliRunner().invoke(cli, ["--vault", str(root), "add", "X", "--json", "--actor", "late-actor"])
    assert out.exit_code == 0
    with Vault.open(root) as vault:
        assert vault.get(json.loads(out.stdout)["id"]).created_by == "late-actor"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(
    "name", ["Dana Ortiz", "  María\tJosé  de la Peña ", "x" * 150, "Ünïcode Nåme", "agent@lab"]
)
async def test_first_contact_suggests_an_id_setup_accepts_and_says_where_the_name_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend: str, name: str
) -> None:
    """Issue 28: with no vault and only git's user.name (with a space in it), the
    suggested agent id had a space and was said to come from "the vault's repository"."""
    from engram.mcp.context import check_agent_id

    monkeypatch.delenv("ENGRAM_ACTOR")
    config = tmp_path / "user.gitconfig"
    config.write_text(f"[user]\n\tname = {name}\n\temail = dana@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.chdir(tmp_path)  # no vault at or above the working folder
    async with Client(build_server(None, config_file=tmp_path / "mcp.yaml")) as client:
        status = ok(await client.call_tool("status", {}))
        refused = await client.call_tool("engram_list", {})
    assert status["configured"] is False and status["agent_id"].split() == name.split()
    assert status["agent_id_source"] == "git config user.name in the server's working folder (there is no vault yet)"
    fix = next(g for g in status["gaps"] if g["setting"] == "agent_id")["fix"]
    suggested = fix.split("agent_id='", 1)[1].split("'", 1)[0]
    assert check_agent_id(suggested) == suggested  # what setup accepts
    assert re.fullmatch(r"[\w.-]+-agent@[\w.-]+", suggested), suggested  # no quoting needed anywhere
    assert suggested.startswith(("dana-ortiz-", "maría-josé-de-la-peña-", "xxx", "ünïcode-nåme-", "agent-lab-"))
    message = refused.content[0].text  # type: ignore[union-attr]
    assert f"agent_id='{suggested}'" in message and "vault's repository" not in message
    async with Client(build_server(None, config_file=tmp_path / "mcp.yaml")) as client:
        done = ok(await client.call_tool("setup", {"vault_path": str(tmp_path / "v"), "agent_id": suggested}))
    assert done["agent_id"] == suggested and done["agent_id_source"] == "setup"
