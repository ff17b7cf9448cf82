"""``engram.yaml`` sections: defaults for what is absent, a named error for what is wrong.

:class:`engram.store.settings.Settings` reads camelCase keys into frozen dataclasses;
unknown keys are ignored (a newer engram's settings must not break an older one), a
value of the wrong type is InvalidInput naming the file and the key, and a section is
parsed once per loaded file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from engram.errors import InvalidInput
from engram.store.dedup import DedupSettings
from engram.store.settings import SETTINGS_FILE, Settings
from engram.vault import Vault
from tests.conftest import snapshot


@dataclass(frozen=True, slots=True)
class Sample:
    enabled: bool = True
    ratio: float = 0.5
    count: int = 8
    label: str = "x"
    weights: MappingProxyType[str, float] = field(default_factory=lambda: MappingProxyType({"title": 2.0, "body": 1.0}))
    names: tuple[str, ...] = ("a",)
    anything: Any = None


def load(tmp_path: Path, text: str | bytes) -> Settings:
    path = tmp_path / SETTINGS_FILE
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return Settings.load(tmp_path)


def test_no_file_means_every_default(tmp_path: Path) -> None:
    settings = Settings.load(tmp_path)
    assert settings.path is None and settings.problem is None
    assert settings.section("sample", Sample) == Sample()
    settings.check()


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "sample:\n", "sample: null\n", "\ufeffsample: {}\n"])
def test_empty_files_and_sections_mean_defaults(tmp_path: Path, text: str) -> None:
    assert load(tmp_path, text).section("sample", Sample) == Sample()


def test_camel_case_keys_fill_snake_case_fields_and_unknown_keys_are_ignored(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        "sample:\n  enabled: false\n  ratio: 1\n  count: 3\n  label: y\n  names: [p, q]\n"
        "  anything: {free: form}\n  fromTheFuture: 42\n  weights: {body: 3}\n"
        "other:\n  count: zzz\n",  # another concern's section, never read here
    )
    got = settings.section("sample", Sample)
    assert got.enabled is False and got.label == "y" and got.names == ("p", "q")
    assert got.ratio == 1.0 and isinstance(got.ratio, float)
    assert got.count == 3 and got.anything == {"free": "form"}
    assert dict(got.weights) == {"title": 2.0, "body": 3.0}  # merged over the defaults
    assert isinstance(got.weights["body"], float)


@pytest.mark.parametrize(
    ("yaml_text", "key", "expected"),
    [
        ("sample:\n  enabled: yes please\n", "sample.enabled", "expected a bool"),
        ("sample:\n  enabled: 1\n", "sample.enabled", "expected a bool"),
        ("sample:\n  ratio: true\n", "sample.ratio", "expected a float"),
        ("sample:\n  ratio: high\n", "sample.ratio", "expected a float"),
        ("sample:\n  count: 2.5\n", "sample.count", "expected a whole number"),
        ("sample:\n  count: false\n", "sample.count", "expected a whole number"),
        ("sample:\n  label: 3\n", "sample.label", "expected a str"),
        ("sample:\n  names: a\n", "sample.names", "expected a tuple"),
        ("sample:\n  weights: [1, 2]\n", "sample.weights", "expected a mappingproxy"),
        ("sample:\n  weights: {title: big}\n", "sample.weights.title", "expected a float"),
    ],
)
def test_a_wrong_value_names_the_file_and_the_key(tmp_path: Path, yaml_text: str, key: str, expected: str) -> None:
    settings = load(tmp_path, yaml_text)
    with pytest.raises(InvalidInput) as err:
        settings.section("sample", Sample)
    assert err.value.field == key
    assert str(err.value).startswith(f"engram.yaml: {key} is ") and expected in str(err.value)
    assert err.value.hint


def test_a_whole_float_is_a_count(tmp_path: Path) -> None:
    got = load(tmp_path, "sample:\n  count: 4.0\n").section("sample", Sample)
    assert got.count == 4 and type(got.count) is int


def test_a_section_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="'sample' must be a mapping"):
        load(tmp_path, "sample: [1, 2]\n").section("sample", Sample)


def test_a_section_is_parsed_once_per_loaded_file(tmp_path: Path) -> None:
    settings = load(tmp_path, "sample:\n  count: 3\n")
    first = settings.section("sample", Sample)
    assert settings.section("sample", Sample) is first
    (tmp_path / SETTINGS_FILE).write_text("sample:\n  count: 9\n")
    assert settings.section("sample", Sample).count == 3  # the loaded file, not the new one
    assert Settings.load(tmp_path).section("sample", Sample).count == 9


def test_a_refused_file_refuses_every_section_but_loads(tmp_path: Path) -> None:
    settings = load(tmp_path, "sample: [unclosed\n")
    assert settings.problem is not None and settings.problem.startswith("is not valid YAML")
    with pytest.raises(InvalidInput) as err:
        settings.section("other", Sample)
    assert err.value.field == SETTINGS_FILE
    assert str(tmp_path / SETTINGS_FILE) in (err.value.hint or "") and "engram doctor" in (err.value.hint or "")


def test_a_wrong_dedup_count_is_a_settings_error_not_an_index_failure(vault: Vault) -> None:
    vault.create("Vacuum bloat in postgres", "Autovacuum leaves bloat behind on hot tables quickly")
    with (vault.root / SETTINGS_FILE).open("a") as fh:
        fh.write("\nrecall:\n  minRelevance: 0.3\n")
    text = (vault.root / SETTINGS_FILE).read_text().replace("  nearThreshold: 0.9\n", "  nearThreshold: 0.9\n  candidates: 2.5\n")
    (vault.root / SETTINGS_FILE).write_text(text)
    reopened = Vault.open(vault.root)
    try:
        before = snapshot(reopened)
        with pytest.raises(InvalidInput, match=r"dedup\.candidates is 2\.5, expected a whole number"):
            reopened.create("Vacuum bloat in postgres tables", "Autovacuum leaves bloat behind on hot tables quickly!")
        assert snapshot(reopened) == before
    finally:
        reopened.close()


def test_the_dedup_section_reads_its_documented_keys(tmp_path: Path) -> None:
    got = load(tmp_path, "dedup:\n  enabled: false\n  nearThreshold: 0.8\n  candidates: 4\n  maxPostings: 100\n").section("dedup", DedupSettings)
    assert got == DedupSettings(enabled=False, near_threshold=0.8, candidates=4, max_postings=100)
