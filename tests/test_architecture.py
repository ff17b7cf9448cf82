"""The shape of the code: a pure core under thin adapters; a lean merge driver."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.conftest import ROOT

ADAPTERS = ("engram.cli", "engram.mcp", "engram.viewer")
ADAPTER_LIBS = ("click", "mcp", "starlette", "uvicorn", "pydantic")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def core_modules() -> list[Path]:
    package = ROOT / "engram"
    return [
        p for p in package.rglob("*.py")
        if not any(p.relative_to(package).as_posix().startswith(a.split(".")[1]) for a in ADAPTERS)
    ]


def test_core_never_imports_an_adapter_or_its_libraries() -> None:
    offenders = []
    for path in core_modules():
        for module in imported_modules(path):
            if module.startswith(ADAPTERS) or module.split(".")[0] in ADAPTER_LIBS:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_merge_driver_imports_only_stdlib_and_yaml() -> None:
    allowed = set(sys.stdlib_module_names) | {"yaml", "mergedriver"}
    for path in (ROOT / "mergedriver").rglob("*.py"):
        for module in imported_modules(path):
            assert module.split(".")[0] in allowed, f"{path.relative_to(ROOT)} imports {module}"


def test_core_modules_stay_small() -> None:
    too_big = {
        p.relative_to(ROOT).as_posix(): n
        for p in core_modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert too_big == {}


def test_the_cli_starts_without_heavy_imports() -> None:
    """`engram add` runs once per shell command: the MCP SDK, GitPython and networkx
    must load only in the commands that use them."""
    import subprocess

    code = "import sys, engram.cli; print(','.join(sorted(m for m in ('mcp', 'git', 'networkx', 'pydantic') if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
