"""Shared fixtures: a hermetic environment for git and engram, and real vaults.

Every test runs with the ``GIT_*`` variables scrubbed, ``HOME`` in a temp folder and git
reading only ``tests/gitconfig`` (as dulwich does), so neither the developer's config
nor a CI machine's can change what git does. ``ENGRAM_FSYNC=0`` skips fsync: tests check
correctness, not durability against power loss.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from engram.vault import Vault

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared"
COMPAT = SHARED / "compat" / "co-engram"
DATASETS = SHARED / "datasets"
VAULTS = DATASETS / "vaults"


def shared(path: Path) -> Path:
    """``path`` under ``../shared``, or a test failure that says what is missing.

    Never a skip: CI always has ``../shared`` beside the repository, so a missing file is
    a broken checkout or CI setup, and a skip would let the suite pass without testing.
    """
    if not path.exists():
        pytest.fail(
            f"shared test data missing: {path}. The tests read third-party data from"
            f" ../shared beside the repository ({SHARED}); check out the shared folder"
            " there (CI always has it).",
            pytrace=False,
        )
    return path

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def hermetic_environ(home: Path) -> dict[str, str]:
    """A copy of os.environ fit for running git and engram in tests."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "ENGRAM_")) and k not in ("EMAIL", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(TESTS / "gitconfig"),
        GIT_TERMINAL_PROMPT="0",
        ENGRAM_ACTOR="tester",
        ENGRAM_FSYNC="0",
        LC_ALL="C.UTF-8",
    )
    return env


@pytest.fixture(autouse=True)
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    env = hermetic_environ(home)
    for key in list(os.environ):
        if key not in env:
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return home


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Vault]:
    v = Vault.init(tmp_path / "vault")
    yield v
    v.close()


@pytest.fixture
def fresh_model() -> Iterator[None]:
    """The sentence encoder as the environment a test sets gives it: forgotten before
    and after (it is loaded once per process, and a failure is remembered)."""
    from engram.recall import encoder

    encoder.forget()
    yield
    encoder.forget()


@pytest.fixture
def compat_vault(tmp_path: Path) -> Iterator[Vault]:
    """A copy of the Co-Engram fixture repository, opened as a vault."""
    target = tmp_path / "co-engram"
    shutil.copytree(shared(COMPAT), target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    v = Vault.open(target)
    yield v
    v.close()


def snapshot(vault: Vault) -> dict[str, bytes]:
    """Every file of the vault except derived/local state and git internals."""
    return {
        p.relative_to(vault.root).as_posix(): p.read_bytes()
        for p in sorted(vault.root.rglob("*"))
        if p.is_file() and not ({".git", ".engram"} & set(p.relative_to(vault.root).parts))
    }


def words_only(vault: Vault) -> Vault:
    """``vault`` opened again with recall by meaning off (``recall.meaning: 0``), for the
    tests of the word-matching rules: they assert which items the words find, and an item
    found by its meaning would join them (tests/recall/test_meaning.py covers meaning).
    The caller closes what this returns."""
    import yaml

    path = vault.root / "engram.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data.setdefault("recall", {})["meaning"] = 0
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return Vault.open(vault.root)

