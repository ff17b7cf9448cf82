"""What `engram search` prints for a person (issue 28): a digest of each hit — title,
id, path, relevance and a line or two of text around the match — not whole bodies
(one question printed about 100 lines). Bodies on request (`--full`, or a `--tier`);
`--json` is what it always was."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from engram.cli import cli
from engram.vault import Vault

FILLER = [f"Line {n} of the runbook says nothing about the subject at hand." for n in range(60)]
MATCH = "When the replica lags, the WAL sender stalls: raise wal_sender_timeout before failing over."
BODY = "\n".join([*FILLER[:30], MATCH, *FILLER[30:]])


def _run(vault: Vault, *args: str) -> str:
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), "search", *args])
    assert out.exit_code == 0, out.output
    return out.stdout


def _without_timing(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "elapsedMs"}


def test_default_output_is_a_digest_with_the_text_around_the_match(vault: Vault) -> None:
    lag = vault.create("Replica lag runbook", BODY, domain=["ops"], summary="What to do when replicas fall behind").item
    linked = vault.create("Failover checklist", "\n".join(FILLER), domain=["ops"]).item
    vault.link(lag.id, "depends_on", linked.id)
    # --json first: searching records usage, which moves later scores.
    expected = vault.search("wal sender stalls", record=False).to_json()
    assert _without_timing(json.loads(_run(vault, "wal sender stalls", "--json"))) == _without_timing(expected)
    assert json.loads(_run(vault, "wal sender stalls", "--json"))["hits"][0]["content"].rstrip("\n") == BODY

    shown = _run(vault, "wal sender stalls")
    lines = shown.rstrip("\n").splitlines()
    assert len(lines) <= 2 * 4 + 1, shown  # two hits of at most four lines, and the footer
    assert lines[0] == " 1. Replica lag runbook"
    assert lines[1].split() == [lag.id, "observation", lag.path, "relevance", "1.00"]
    snippet = " ".join(line.strip() for line in lines[2:] if line.startswith("    ") and not line.startswith("    01"))
    assert "the WAL sender stalls: raise wal_sender_timeout" in snippet, shown
    assert "Line 10 " not in shown and "Line 59 " not in shown  # not the bodies
    assert any(line.startswith(" 2. Failover checklist  (linked)") for line in lines), shown
    assert lines[-1].startswith("-- 2 hit(s)") and "--full" in lines[-1]

    full = _run(vault, "wal sender stalls", "--full")
    assert all(line in full for line in BODY.splitlines())  # every line of the body
    catalog = _run(vault, "wal sender stalls", "--tier", "catalog")  # a tier asked for: as before
    assert "Line " not in catalog and "wal_sender_timeout" not in catalog


def test_the_snippet_finds_a_word_in_another_form_and_falls_back_to_the_summary(vault: Vault) -> None:
    vault.create("Backoff", "\n".join([*FILLER[:20], "Every retry sleeps a random time.", *FILLER[20:]]), domain=["eng"])
    shown = _run(vault, "retries")
    assert "Every retry sleeps a random time." in shown and "Line 0 " not in shown
    vault.create("Pool sizing", "\n".join(FILLER), domain=["ops"], summary="Size pools from p99 latency")
    titled = _run(vault, "pool sizing")  # only the title matches: the summary is the digest
    assert "Size pools from p99 latency" in titled and "Line 3 " not in titled
