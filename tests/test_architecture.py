"""The shape of the code: layered subpackages under thin adapters; a lean merge driver.

The core is a stack of units, each of which may import only the units below it (the
standard library and third-party packages aside). Imports inside ``if TYPE_CHECKING:``
are exempt: they name types, they do not run. Imports inside functions count: a lazy
import is still a dependency. So do :class:`engram.vault.Vault`'s delegations
(``delegate(engram.items.reading.get)``): each imports its module when the method is
first called.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import networkx as nx

from tests.conftest import ROOT

#: The core, bottom-up. Each unit may import the units before it, never one after it.
LAYERS = (
    "engram.errors",
    "engram.store",
    "engram.trust",
    "engram.index",
    "engram.items",
    "engram.recall",
    "engram.lifecycle",
    "engram.adopt",
    "engram.team",
    "engram.scopes",
    "engram.quality",
    "engram.doctor",
    "engram.vault",
    "engram.demo",
)
#: engram.loopback and engram.httpserve hold what the two HTTP adapters share (checks, timed serving).
ADAPTERS = ("engram.cli", "engram.mcp", "engram.viewer", "engram.loopback", "engram.httpserve")
ADAPTER_LIBS = ("click", "mcp", "starlette", "uvicorn", "pydantic", "anyio")
PACKAGE = ROOT / "engram"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path) -> set[str]:
    """Modules ``path`` imports when it runs (``from engram import x`` names engram.x)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found | delegated_modules(tree)


def delegated_modules(tree: ast.Module) -> set[str]:
    """The modules ``delegate(engram.a.b.fn)`` names: imported when the method is first called."""
    return {
        ast.unparse(node.args[0]).rpartition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "delegate"
        and node.args and ast.unparse(node.args[0]).startswith("engram.")
    }


def unit_of(module: str) -> str | None:
    """The layer or adapter a module belongs to (None outside engram's units)."""
    for unit in (*ADAPTERS, *LAYERS):
        if module == unit or module.startswith(unit + "."):
            return unit
    return None


def engram_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def test_every_module_belongs_to_a_layer_or_an_adapter() -> None:
    stray = sorted(m for m in engram_modules() if m != "engram" and unit_of(m) is None)
    assert stray == [], "add new subpackages to LAYERS (or ADAPTERS) in this test"


def test_each_layer_imports_only_the_layers_below_it() -> None:
    rank = {unit: i for i, unit in enumerate(LAYERS)}
    offenders = []
    for module, path in engram_modules().items():
        mine = unit_of(module)
        if mine is None or mine in ADAPTERS:
            continue
        for imported in runtime_imports(path):
            theirs = unit_of(imported)
            if theirs is None or theirs == mine:
                continue
            if theirs in ADAPTERS or rank[theirs] > rank[mine]:
                offenders.append(f"{module} ({mine}) imports {imported} ({theirs})")
    assert offenders == []


def test_the_core_never_loads_an_adapter_library() -> None:
    offenders = [
        f"{module} imports {imported}"
        for module, path in engram_modules().items()
        if unit_of(module) in LAYERS
        for imported in runtime_imports(path)
        if imported.split(".")[0] in ADAPTER_LIBS
    ]
    assert offenders == []


def test_the_import_graph_of_the_core_has_no_cycles() -> None:
    modules = engram_modules()
    graph = nx.DiGraph()
    for module, path in modules.items():
        if unit_of(module) not in LAYERS:
            continue
        graph.add_node(module)
        for imported in runtime_imports(path):
            if imported in modules and imported != module and unit_of(imported) in LAYERS:
                graph.add_edge(module, imported)
    assert list(nx.simple_cycles(graph)) == []


def test_every_subpackage_says_what_it_owns_and_may_import() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 20, f"{init.relative_to(ROOT)} needs a docstring"
        if unit_of(module_name(init)) in LAYERS:
            assert "import" in doc.lower(), f"{init.relative_to(ROOT)}: say what it may import"


def test_merge_driver_imports_only_stdlib_and_yaml() -> None:
    allowed = set(sys.stdlib_module_names) | {"yaml", "mergedriver"}
    for path in (ROOT / "mergedriver").rglob("*.py"):
        for module in runtime_imports(path):
            assert module.split(".")[0] in allowed, f"{path.relative_to(ROOT)} imports {module}"


def test_core_modules_stay_small() -> None:
    too_big = {
        name: n
        for name, path in engram_modules().items()
        if unit_of(name) in LAYERS and (n := len(path.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert too_big == {}


def test_vault_is_a_table_of_contents_not_a_mixin_stack() -> None:
    """Vault has no base class and no logic of its own: apart from a handful of lines
    (opening, the root and actor, the context manager) it is one ``name =
    delegate(module.fn)`` line per method, under a comment naming the module, and every
    method is a function of the vault's state in the module that owns it. The API is
    broad (a hundred methods), so the class is a table of contents, not one screen."""
    from engram.items.state import VaultState
    from engram.vault import Vault, delegate

    assert Vault.__bases__ == (object,)
    source, _ = inspect.getsourcelines(Vault)
    other = [
        line for line in source
        if line.strip() and not line.strip().startswith("#") and " = delegate(" not in line
    ]
    assert len(other) <= 30, "Vault holds delegations; put logic in the module that owns it"
    assert all(len(line) <= 110 for line in source if " = delegate(" in line)  # one line each
    delegated = {name: attr for name, attr in vars(Vault).items() if isinstance(attr, delegate)}
    assert len(delegated) >= 25
    for name, attr in delegated.items():
        first = next(iter(inspect.signature(attr.fn).parameters.values()))
        is_method = attr.fn.__qualname__.startswith("VaultState.")
        assert is_method or first.annotation in ("VaultState", VaultState), f"Vault.{name} does not take the state"
        assert attr.fn.__doc__, f"Vault.{name}: {attr.fn.__qualname__} has no docstring"


def test_each_delegation_is_seen_as_an_import_of_the_module_it_names() -> None:
    """The layer check reads the delegations: a method naming a module of a layer above
    the vault (or an adapter) would be an import that breaks the layers, lazy or not."""
    from engram.vault import Vault, delegate

    imports = runtime_imports(PACKAGE / "vault.py")
    for name, attr in vars(Vault).items():
        if isinstance(attr, delegate) and not attr.fn.__qualname__.startswith("VaultState."):
            assert attr.fn.__module__ in imports, f"Vault.{name}: {attr.fn.__module__} not seen by the layer check"
    assert {"engram.scopes.recall", "engram.team.sync", "engram.doctor"} <= imports


def test_a_delegated_method_shows_its_own_signature(tmp_path: Path) -> None:
    from engram.vault import Vault

    with Vault.init(tmp_path / "v") as vault:
        assert list(inspect.signature(vault.create).parameters)[:2] == ["title", "content"]
        assert vault.search.__doc__ == Vault.search.__doc__
        assert vault.get.__self__ is vault.state  # type: ignore[attr-defined]


def test_the_cli_starts_without_heavy_imports() -> None:
    """`engram add` runs once per shell command: the MCP SDK, GitPython and networkx
    must load only in the commands that use them."""
    code = "import sys, engram.cli; print(','.join(sorted(m for m in ('mcp', 'git', 'networkx', 'pydantic') if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_package_exports_vault_and_every_error_type() -> None:
    import engram
    from engram import errors

    tree = {
        name for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, errors.EngramError)
    }
    assert {"Vault", "CreateResult", *tree} <= set(engram.__all__)
    assert all(getattr(engram, name) is getattr(errors, name) for name in tree)
