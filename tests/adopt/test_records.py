"""JSON / JSON Lines records: provenance, bad records skipped and reported, links, and a
second run that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.adopt.records import parse
from engram.cli import cli
from engram.vault import Vault
from tests.conftest import snapshot

RECORDS = [
    {"title": "Adopt pg_repack", "content": "Online rebuilds instead of VACUUM FULL.", "domain": "ops/postgres",
     "kind": "decision", "tags": ["postgres"], "ticket": "OPS-7",
     "links": [{"kind": "depends_on", "to": "Retry with jitter", "evidence": "the rebuild job retries"}]},
    {"title": "Retry with jitter", "body": "Full jitter avoids retry storms.", "domainTags": ["eng"], "importance": 0.8},
    {"title": "Adopt pg_repack", "content": "Online rebuilds instead of VACUUM FULL.", "domain": "ops/postgres"},
]


def jsonl(records: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_jsonl_import_creates_links_and_records_provenance(vault: Vault) -> None:
    report = vault.run_import(parse(jsonl(RECORDS), "decisions.jsonl"))
    assert report.counts == {"NEW": 2, "DUPLICATE": 1, "UPDATE": 0, "SKIPPED": 0, "HELD": 0, "BAD": 0}
    repack = vault.get("Adopt pg_repack")
    assert repack.source["importer"] == "jsonl" and repack.source["from"] == "decisions.jsonl"
    assert repack.extra["ticket"] == "OPS-7" and repack.source_type == "imported"
    assert repack.reinforcement_score == 0.0  # an import reinforces nothing, not even its own repeats
    jitter = vault.get("Retry with jitter")
    assert jitter.domain == "eng"
    [edge] = vault.synapses(repack.id)
    assert (edge.source, edge.kind, edge.target) == (repack.id, "depends_on", jitter.id)
    assert report.links == 1 and report.written == 3


def test_a_second_run_writes_and_reinforces_nothing(vault: Vault) -> None:
    vault.run_import(parse(jsonl(RECORDS), "decisions.jsonl"))
    before = snapshot(vault)
    again = vault.run_import(parse(jsonl(RECORDS), "decisions.jsonl"))
    assert again.written == 0 and again.counts["NEW"] == 0 and again.counts["SKIPPED"] == 3
    assert snapshot(vault) == before
    # the same records under another file name: matched by content, still nothing written
    other = vault.run_import(parse(jsonl(RECORDS), "copy.jsonl"))
    assert other.written == 0 and other.counts["DUPLICATE"] == 3
    assert snapshot(vault) == before


def test_json_list_import_and_default_domain(vault: Vault) -> None:
    text = json.dumps([{"title": "No domain here", "content": "x"}])
    vault.run_import(parse(text, "a.json", default_domain=("inbox",)))
    assert vault.get("No domain here").path == "inbox/no-domain-here.md"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"title": "ok"}\n{"content": "no title"}\n', "line 2", "has no title"),
        ('{"title": "ok"}\n{"title": "x", "kind": "insight"}\n', "line 2", "unknown kind 'insight'"),
        ('{"title": "ok"}\n{"title": "x", "domain": "../../etc"}\n', "line 2", "domain tag '..'"),
        ('{"title": "ok"}\nnot json\n', "line 2", "not valid JSON"),
        ('[{"title": "ok"}, 3]', "line 2", "a record must be an object"),
        ('{"title": "ok"}\n{"title": "x", "links": "y"}\n', "line 2", "links must be a list"),
    ],
)
def test_a_bad_record_is_reported_and_skipped_not_the_batch(vault: Vault, text: str, where: str, message: str) -> None:
    report = vault.run_import(parse(text, "bad.jsonl"))
    assert report.counts["NEW"] == 1 and report.counts["BAD"] == 1
    [bad] = [r for r in report.results if r.outcome == "BAD"]
    assert bad.where == where and message in (bad.message or "")
    assert [i.title for i in vault.list()] == ["ok"]


def test_dry_run_writes_nothing_and_classifies(vault: Vault) -> None:
    vault.create("Retry with jitter", "Full jitter avoids retry storms.")
    before = snapshot(vault)
    report = vault.run_import(parse(jsonl(RECORDS), "decisions.jsonl"), dry_run=True)
    assert snapshot(vault) == before
    assert [r.outcome for r in report.results] == ["NEW", "DUPLICATE", "NEW"]
    assert report.written == 0 and "dry run: nothing was written" in report.summary()


def test_cli_import_summary_json_exit_codes_and_stdin(vault: Vault, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl(RECORDS))
    runner = CliRunner()
    dry = runner.invoke(cli, ["--vault", str(vault.root), "import", str(path), "--dry-run"])
    assert dry.exit_code == 0 and "nothing was written" in dry.stdout and vault.list() == []
    done = runner.invoke(cli, ["--vault", str(vault.root), "import", str(path), "--json"])
    data = json.loads(done.stdout)
    assert data["counts"] == {"NEW": 2, "DUPLICATE": 1, "UPDATE": 0, "SKIPPED": 0, "HELD": 0, "BAD": 0}
    assert [r["where"] for r in data["results"]] == ["line 1", "line 2", "line 3"]
    second = runner.invoke(cli, ["--vault", str(vault.root), "import", str(path)])
    assert second.exit_code == 0
    assert second.stdout.strip().startswith("3 record(s) from in.jsonl: 0 new, 3 already imported, 0 duplicate(s)")
    assert "; 0 link(s) were written" in second.stdout
    bad = runner.invoke(cli, ["--vault", str(vault.root), "import", "-"], input='{"title": "x", "importance": 7}\n')
    assert bad.exit_code == 1
    assert "line 1: bad, skipped: importance must be from 0 to 1" in bad.stderr
    assert "1 bad (skipped)" in bad.stdout


# The encoding checks, from the importer this one replaced (engram.items.importer).


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
