"""Content and identity limits of the write API: a clear error, nothing written.

(Alias bombs, size caps before parsing, symlinks, NUL bytes and non-UTF-8 files are the
hostile-file checks of tests/store and tests/index.)"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from engram.adopt.records import parse
from engram.errors import InvalidInput
from engram.store.rules import MAX_FRONTMATTER_BYTES, MAX_VALUE_DEPTH
from engram.vault import Vault


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


CASES = [
    ({"extra": {"nest": nested(MAX_VALUE_DEPTH + 1)}}, "nests more than 16 levels deep"),
    ({"extra": {"nest": nested(100_000)}}, "nests more than 16 levels deep"),
    ({"source": nested(50)}, "source nests more than"),
    ({"extra": {"blob": "x" * (MAX_FRONTMATTER_BYTES + 1)}}, "larger than 64,000 bytes"),
    ({"source": {"log": "y" * 2_000_000}}, "source is larger than 64,000 bytes"),
    ({"extra": {f"k{i}": "z" * 9_000 for i in range(8)}}, "the extra keys together are larger"),
    ({"title": "t" * 301}, "title is 301 characters; the limit is 300"),
    ({"tags": [f"t{i}" for i in range(65)]}, "65 tags; at most 64"),
]


@pytest.mark.parametrize(("kwargs", "message"), CASES)
def test_oversize_and_deeply_nested_input_is_refused(vault: Vault, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        vault.create(**{"title": "Limits", "content": "body", **kwargs})
    assert vault.list(include_hidden=True) == []
    item = vault.create("Limits", "body").item
    (key, value), = kwargs.items()
    changes = dict(value) if key == "extra" else {key: value}  # update takes extra keys directly
    with pytest.raises(InvalidInput, match=message.split(" 16 ")[0].replace("the extra keys together", "")):
        vault.update(item.id, changes)
    assert vault.get(item.id).version == 1


def test_a_shallow_structured_extra_is_fine(vault: Vault) -> None:
    item = vault.create("Limits", "body", extra={"owner": {"team": "db", "on_call": ["a", "b"]}}).item
    assert vault.get(item.id).extra["owner"] == {"team": "db", "on_call": ["a", "b"]}


def test_an_import_record_with_an_existing_items_id_changes_nothing(vault: Vault) -> None:
    existing = vault.create("Pool sizes", "Keep pools at 20.").item
    batch = parse(json.dumps([{"title": "Other", "id": existing.id, "content": "overwrite?"}]), "r.json")
    (result,) = vault.run_import(batch).results
    assert (result.outcome, result.id) == ("SKIPPED", existing.id)
    assert [(i.id, i.title) for i in vault.list()] == [(existing.id, "Pool sizes")]
    assert vault.get(existing.id).content == "Keep pools at 20.\n"


def test_a_copied_file_with_a_colliding_id_is_a_doctor_finding_and_a_clear_error(vault: Vault) -> None:
    item = vault.create("Pool sizes", "Keep pools at 20.").item
    shutil.copy(vault.abspath(item.path or ""), vault.abspath("copy-of-pool-sizes.md"))
    vault.refresh()  # as the next command (a new process) sees the folder
    with pytest.raises(InvalidInput, match="2 items match") as err:
        vault.update(item.id, {"tags": ["db"]})
    assert "doctor --fix" in (err.value.hint or "")
    (problem,) = [p for p in vault.doctor().problems if p.code == "duplicate-id"]
    # The copy gets the new id, though its path sorts first (engram wrote the original: issue 28).
    assert problem.path == "copy-of-pool-sizes.md" and problem.fixable
    assert "audit log" in problem.message
    vault.doctor(fix=True)
    assert len({i.id for i in vault.list()}) == 2
