"""What the CLI prints cannot drive the terminal it is printed on (issue 29, item 18).

A title written over MCP (or pulled from a teammate, or typed into a note) may hold
escape sequences: ``engram list`` printed them raw, so stored text could clear a
person's screen, retitle the window or recolour what follows. Every write to the CLI's
output streams escapes control characters and bidirectional overrides as ``\\uXXXX``;
``--json`` output stays valid JSON and decodes to the exact stored text.

``CliRunner(...).invoke(..., color=True)`` keeps click from stripping colour codes, as a
terminal would.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from engram.cli import cli
from engram.vault import Vault

HOSTILE = "Deploy\x1b]0;pwned\x07\x1b[2J\x1b[31m notes\x9b31m \u202eevil\u2066\x7f\x08"


def _run(vault: Vault, *args: str, code: int = 0) -> tuple[str, str]:
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), *args], color=True)
    assert out.exit_code == code, out.output
    return out.stdout, out.stderr


def _clean(text: str) -> None:
    bad = [ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F
           or ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
    assert bad == [], text


def test_a_title_with_escape_sequences_is_printed_escaped(vault: Vault) -> None:
    item = vault.create(HOSTILE, "Body with \x1b[2J a clear-screen.").item
    assert item.title == HOSTILE  # stored as written: the output is what is made safe
    for args in (("list",), ("get", item.id), ("search", "deploy notes"), ("paths",)):
        stdout, stderr = _run(vault, *args)
        _clean(stdout)
        _clean(stderr)
    listed, _ = _run(vault, "list")
    assert "Deploy\\u001b]0;pwned\\u0007\\u001b[2J\\u001b[31m notes\\u009b31m \\u202eevil\\u2066\\u007f\\u0008" in listed


def test_json_output_stays_valid_and_exact(vault: Vault) -> None:
    item = vault.create(HOSTILE, "x").item
    stdout, _ = _run(vault, "get", item.id, "--json")
    _clean(stdout)
    assert json.loads(stdout)["title"] == HOSTILE


def test_a_refusal_that_names_stored_text_is_escaped(vault: Vault) -> None:
    vault.create(HOSTILE, "one")
    vault.create(HOSTILE, "two", dedupe=False)
    _, stderr = _run(vault, "get", HOSTILE, code=2)  # two items have that title: both are named
    assert "matches 2 items" in stderr or "2 items match" in stderr, stderr
    _clean(stderr)
