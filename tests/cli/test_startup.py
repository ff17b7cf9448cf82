"""Start-up (issue 30): each command imports what it uses, and nothing drifts for it.

The root group imports a command's module only when the command runs, from the table in
:mod:`engram.cli.catalog`; :class:`engram.vault.Vault` imports a layer when a method
that needs it is first called; these tests keep that table equal to what the modules
export and assert the *import set* of cheap commands, of a search and of the git hooks
in a fresh process (never a time: the machines that run this are shared).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import click
from click.testing import CliRunner

import engram
import engram.cli
from engram.cli import catalog
from engram.vault import Vault
from tests.conftest import ROOT, words_only
from tests.git_helpers import commit_all, git

#: What a command that needs no vault must not import: the core's layers and the adapters' libraries.
HEAVY = ("engram.vault", "engram.index", "engram.items.state", "engram.trust.screen", "engram.recall",
         "engram.team.gitstore", "sqlite3", "yaml", "git", "mcp", "networkx", "importlib.metadata")
#: What a search by words needs none of: writing (the screen, the detectors, dedupe), the
#: lifecycle, imports, sync and history, doctor, and the libraries of those and of meaning.
NOT_FOR_SEARCH = ("engram.items.writing", "engram.trust.policy", "engram.trust.screen", "engram.trust.secrets",
                  "engram.trust.detectors", "engram.lifecycle", "engram.adopt", "engram.team.sync",
                  "engram.team.past", "engram.doctor", "engram.quality", "git", "requests", "detect_secrets",
                  "numpy", "onnxruntime", "snowballstemmer", "mcp", "networkx")
#: What requests brings in when it is really imported (engram.trust.detectors defers it).
REQUESTS = ("urllib3", "charset_normalizer", "idna", "certifi", "requests.adapters")


def modules_after(code: str, cwd: Path | None = None) -> set[str]:
    """``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json as _j, sys as _s\nprint(_j.dumps(sorted(_s.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=cwd)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def run_cli(*args: str) -> str:
    return f"from engram.cli import main\ntry:\n    main({list(args)!r})\nexcept SystemExit:\n    pass"


def loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_the_command_table_is_what_the_modules_export() -> None:
    """Derived from the modules, not trusted: a command added, renamed, moved or reworded
    fails here, with the table to paste into engram/cli/catalog.py."""
    exported: dict[str, tuple[str, str]] = {}
    for info in pkgutil.iter_modules(engram.cli.__path__):
        if info.name == "catalog":  # the table itself
            continue
        module = importlib.import_module(f"engram.cli.{info.name}")
        for command in getattr(module, "COMMANDS", ()):
            assert command.name not in exported, f"{command.name} is defined twice"
            exported[command.name] = (info.name, command.get_short_help_str(10_000))
    table = "".join(
        f"    {json.dumps(n)}: ({json.dumps(m)}, {json.dumps(h, ensure_ascii=False)}),\n"
        for n, (m, h) in sorted(exported.items())
    )
    assert exported == catalog.COMMANDS, f"engram/cli/catalog.py should read:\n{table}"


def test_help_lists_each_command_as_click_would_from_the_command_itself() -> None:
    """The summary drawn from the table, shortened to any width, is the command's own."""
    ctx = click.Context(engram.cli.cli)
    for name, (_, summary) in catalog.COMMANDS.items():
        real = engram.cli.cli.get_command(ctx, name)
        assert real is not None and not real.hidden and not real.deprecated, name
        stand_in = click.Command(name, help=summary)
        for limit in range(8, 200, 3):
            assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit), (name, limit)


def test_help_in_a_fresh_process_matches_help_with_every_command_loaded() -> None:
    lazy = subprocess.run([sys.executable, "-c", run_cli("--help")], capture_output=True, text=True, check=True,
                          env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", **_pythonpath()})
    ctx = click.Context(engram.cli.cli)
    for name in engram.cli.cli.list_commands(ctx):
        engram.cli.cli.get_command(ctx, name)  # every module loaded in this process
    eager = CliRunner().invoke(engram.cli.cli, ["--help"], prog_name="engram", terminal_width=78)  # click: COLUMNS - 2
    assert eager.exit_code == 0
    assert "Commands:" in lazy.stdout and lazy.stdout == eager.stdout


def _pythonpath() -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT)}


def test_version_and_help_import_no_layer_and_no_command_module() -> None:
    """Written to fail on the old code, where `engram --version` imported every layer."""
    for args in (("--version",), ("--help",), ("-h",)):
        modules = modules_after(run_cli(*args))
        assert loaded(modules, HEAVY) == [], args
        commands = {f"engram.cli.{m}" for m, _ in catalog.COMMANDS.values()}
        assert sorted(commands & modules) == [], args


def test_a_command_imports_its_own_module_only(tmp_path: Path) -> None:
    modules = modules_after(run_cli("search", "--help"))
    assert "engram.cli.search" in modules
    others = {f"engram.cli.{m}" for m, _ in catalog.COMMANDS.values()} - {"engram.cli.search"}
    assert sorted(others & modules) == []
    assert loaded(modules, ("mcp", "networkx", "git", "engram.viewer", "engram.mcp")) == []


def test_the_pre_commit_hook_imports_no_index_no_vault_and_no_gitpython(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    assert CliRunner().invoke(engram.cli.cli, ["init", str(vault)]).exit_code == 0
    assert "engram.team.precommit" in (vault / ".git" / "hooks" / "pre-commit").read_text(encoding="utf-8")
    (vault / "note.md").write_text("A note.\n", encoding="utf-8")
    git(vault, "add", "note.md")
    code = "from engram.team.precommit import main\nassert main(['--vault', '.']) == 0"
    modules = modules_after(code, cwd=vault)
    assert "engram.trust.secrets" in modules  # it did check the commit ...
    assert "engram.trust.detectors" not in modules  # ... and prose needs no detect-secrets
    assert loaded(modules, ("engram.vault", "engram.index", "engram.items.state", "engram.recall", "sqlite3",
                            "git", "engram.lifecycle", "engram.team.sync", *REQUESTS)) == []


def test_requests_deferred_by_the_detectors_is_the_real_module_once_used() -> None:
    code = (
        "import sys\nfrom engram.trust import secrets\n"
        "assert secrets.scan_text('key AKIAIOSFODNN7EXAMPLF here', 'f')  # the plugins ran\n"
        "assert 'urllib3' not in sys.modules\n"
        "import requests\nassert requests.codes.ok == 200\n"
        "assert type(sys.modules['requests']).__name__ == 'module' and 'urllib3' in sys.modules"
    )
    assert set(REQUESTS) <= modules_after(code)


def test_a_pull_that_moved_nothing_costs_the_hook_its_own_module_only(tmp_path: Path) -> None:
    """git runs the post-merge hook after every pull; one that moved nothing (``ORIG_HEAD``
    = ``HEAD``) imports no layer, no library and not even dataclasses."""
    with Vault.init(tmp_path / "v") as vault:
        vault.create("A note", "Some text.")
        commit_all(vault)
        git(vault.root, "update-ref", "ORIG_HEAD", "HEAD")
    code = "from engram.team.hooks import _main\nassert _main(['post-merge', '--vault', '.']) == 0"
    modules = modules_after(code, cwd=tmp_path / "v")
    assert sorted(m for m in modules if m.startswith("engram")) == [
        "engram", "engram.errors", "engram.team", "engram.team.hooks"]
    assert loaded(modules, ("dataclasses", "sqlite3", "yaml", "git", "mergedriver")) == []


def test_opening_a_vault_imports_only_the_layers_its_calls_need(tmp_path: Path) -> None:
    """Written to fail on the old code, where engram/vault.py imported every layer to
    build its table of methods."""
    Vault.init(tmp_path / "v").close()
    opened = modules_after(f"from engram.vault import Vault\nv = Vault.open({str(tmp_path / 'v')!r})")
    assert loaded(opened, (*NOT_FOR_SEARCH, "engram.scopes", "engram.recall.search", "engram.items.reading")) == []
    listed = modules_after(f"from engram.vault import Vault\nv = Vault.open({str(tmp_path / 'v')!r})\nv.titles([])")
    assert "engram.items.reading" in listed
    assert loaded(listed, NOT_FOR_SEARCH) == []


def test_a_search_by_words_imports_the_index_and_recall_only(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v") as vault:
        vault.create("Use pg_repack, not VACUUM FULL", "VACUUM FULL locks the table.", domain=["ops"])
        words_only(vault).close()
    out = subprocess.run([sys.executable, "-c", run_cli("--vault", str(tmp_path / "v"), "search", "pg_repack")],
                         capture_output=True, text=True, check=True)
    assert "Use pg_repack" in out.stdout  # it did find the item
    modules = modules_after(run_cli("--vault", str(tmp_path / "v"), "search", "pg_repack"))
    assert {"engram.scopes.recall", "engram.recall.search", "engram.index.search"} <= modules
    assert loaded(modules, NOT_FOR_SEARCH) == []


def test_adding_a_new_item_loads_no_classifier_and_no_recall(tmp_path: Path) -> None:
    """`engram add` runs once per shell command: learn's classifier, its stemmer and
    recall are for a near match only (engram.lifecycle.creating)."""
    Vault.init(tmp_path / "v").close()
    body = "The proxy in front of the public API cuts idle sockets after sixty seconds without traffic, so clients must send pings."
    add = run_cli("--vault", str(tmp_path / "v"), "add", "Sockets idle out", "--body", body)
    modules = modules_after(add, cwd=tmp_path)
    assert "engram.lifecycle.creating" in modules and "engram.items.writing" in modules
    assert loaded(modules, ("engram.lifecycle.learning", "engram.lifecycle.classify", "snowballstemmer",
                            "engram.recall.search", "numpy", "onnxruntime", "mcp", "networkx", "git")) == []
    again = modules_after(run_cli("--vault", str(tmp_path / "v"), "add", "Sockets idle out", "--body",
                                  body.replace("without", "without any")), cwd=tmp_path)
    assert "engram.lifecycle.learning" in again  # a near match: learn decides


def test_the_package_names_load_on_first_use() -> None:
    assert loaded(modules_after("import engram"), ("engram.vault", "engram.store.model")) == []
    assert "engram.vault" in modules_after("from engram import Vault")
    from engram.store.model import Engram
    from engram.vault import CreateResult, Vault

    assert (engram.Vault, engram.CreateResult, engram.Engram) == (Vault, CreateResult, Engram)
    assert all(hasattr(engram, name) for name in engram.__all__)


def test_the_version_is_the_projects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == engram.__version__
