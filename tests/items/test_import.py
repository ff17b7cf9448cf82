"""Bulk import from JSON / JSON Lines: validated as a whole, deduplicated, with provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import InvalidInput
from engram.items.importer import parse_records
from engram.vault import Vault
from tests.conftest import snapshot

RECORDS = [
    {"title": "Adopt pg_repack", "content": "Online rebuilds instead of VACUUM FULL.", "domain": "ops/postgres",
     "kind": "decision", "tags": ["postgres"], "ticket": "OPS-7"},
    {"title": "Retry with jitter", "body": "Full jitter avoids retry storms.", "domainTags": ["eng"], "importance": 0.8},
    {"title": "Adopt pg_repack", "content": "Online rebuilds instead of VACUUM FULL.", "domain": "ops/postgres"},
]


def test_jsonl_import_creates_dedups_and_records_provenance(vault: Vault) -> None:
    text = "\n".join(json.dumps(r) for r in RECORDS) + "\n"
    report = vault.import_records(parse_records(text), origin="decisions.jsonl")
    assert report.counts == {"NEW": 2, "DUPLICATE": 1, "UPDATE": 0}
    repack = vault.get("Adopt pg_repack")
    assert repack.source == {"file": "decisions.jsonl", "line": 1}
    assert repack.extra["ticket"] == "OPS-7" and repack.source_type == "imported"
    assert repack.reinforcement_score == 1.0  # the third record reinforced it
    assert vault.get("Retry with jitter").domain == "eng"


def test_json_list_import_and_default_domain(vault: Vault) -> None:
    text = json.dumps([{"title": "No domain here", "content": "x"}])
    vault.import_records(parse_records(text), origin="a.json", default_domain=["inbox"])
    assert vault.get("No domain here").path == "inbox/no-domain-here.md"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"title": "ok"}\n{"content": "no title"}\n', "line 2: has no title"),
        ('{"title": "ok"}\n{"title": "x", "kind": "insight"}\n', "line 2: unknown kind 'insight'"),
        ('{"title": "ok"}\n{"title": "x", "domain": "../../etc"}\n', "line 2: domain tag '..'"),
        ('{"title": "ok"}\nnot json\n', "line 2: not valid JSON"),
        ('[{"title": "ok"}, 3]', "line 2: a record must be an object"),
        ('{"a": 1}', "has no title"),
    ],
)
def test_one_bad_record_refuses_the_whole_file(vault: Vault, text: str, message: str) -> None:
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match=message):
        vault.import_records(parse_records(text), origin="bad.jsonl")
    assert snapshot(vault) == before


def test_cli_import_dry_run_and_json(vault: Vault, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS))
    runner = CliRunner()
    dry = runner.invoke(cli, ["--vault", str(vault.root), "import", str(path), "--dry-run"])
    assert dry.exit_code == 0 and "nothing was written" in dry.stdout and vault.list() == []
    done = runner.invoke(cli, ["--vault", str(vault.root), "import", str(path), "--json"])
    data = json.loads(done.stdout)
    assert data["counts"] == {"NEW": 2, "DUPLICATE": 1, "UPDATE": 0}
    assert [r["line"] for r in data["results"]] == [1, 2, 3]
    bad = runner.invoke(cli, ["--vault", str(vault.root), "import", "-"], input='{"title": "x", "importance": 7}\n')
    assert bad.exit_code == 2 and "line 1: importance must be from 0 to 1" in bad.stderr


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ('[{"title": "sixteen"}]'.encode("utf-16-le"),
         "error: the file looks like UTF-16LE without a byte-order mark; engram imports UTF-8. "
         "Convert it: iconv -f UTF-16LE -t UTF-8 FILE > FILE.utf8\n"),
        ('[{"title": "sixteen"}]'.encode("utf-16-be"),
         "error: the file looks like UTF-16BE without a byte-order mark; engram imports UTF-8. "
         "Convert it: iconv -f UTF-16BE -t UTF-8 FILE > FILE.utf8\n"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
         "error: the file is binary (it has NUL bytes), not JSON text. Pass a JSON list or JSON Lines file in UTF-8.\n"),
        ('{"title": "caf\u00e9"}\n'.encode("latin-1"),
         "error: the file is not UTF-8 (byte 14, on line 1, is 0xe9). Re-save it as UTF-8 (for a Latin-1 "
         "file: iconv -f LATIN1 -t UTF-8 FILE > FILE.utf8).\n"),
        (b"\xff\xfe[\x00{\x00\x00\xd8",
         "error: the file starts with a UTF-16 byte-order mark but is not valid UTF-16. Re-save it as UTF-8.\n"),
    ],
)
def test_import_names_the_encoding_problem(vault: Vault, tmp_path: Path, data: bytes, error: str) -> None:
    path = tmp_path / "records.json"
    path.write_bytes(data)
    before = snapshot(vault)
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "import", str(path)])
    assert (result.exit_code, result.stderr) == (2, error)
    assert snapshot(vault) == before


def test_import_reads_files_marked_with_a_byte_order_mark(vault: Vault, tmp_path: Path) -> None:
    for n, (encoding, bom) in enumerate((("utf-16-le", "\ufeff"), ("utf-16-be", "\ufeff"), ("utf-8", "\ufeff"))):
        path = tmp_path / f"records-{n}.jsonl"
        path.write_bytes((bom + json.dumps({"title": f"Marked {encoding} {n}"}) + "\n").encode(encoding))
        result = CliRunner().invoke(cli, ["--vault", str(vault.root), "import", str(path)])
        assert result.exit_code == 0, result.stderr
    assert sorted(i.title for i in vault.list()) == ["Marked utf-16-be 1", "Marked utf-16-le 0", "Marked utf-8 2"]
