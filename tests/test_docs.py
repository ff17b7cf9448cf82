"""The user docs list what the code defines: commands and options, keys and kinds."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click

from engram.cli import cli
from engram.store.model import ENGRAM_KINDS, STATUSES, SYNAPSE_FAMILIES, VISIBILITIES
from mergedriver import codec
from tests.conftest import ROOT

DOCS = ROOT / "docs"


def commands(group: click.Group, prefix: str = "engram") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)  # the root group loads its commands lazily: ask it, not .commands
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield from commands(command, path)
        else:
            yield path, command


def sections(text: str) -> dict[str, str]:
    """`### `engram x`` heading → the text up to the next heading of that level or above."""
    out: dict[str, str] = {}
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        match = re.match(r"#{2,3} `(engram [^`]+)`", heading)
        if match:
            out[match.group(1)] = body
    return out


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    documented = sections((DOCS / "cli.md").read_text(encoding="utf-8"))
    missing = []
    for path, command in commands(cli):
        body = documented.get(path)
        if body is None:
            missing.append(f"no section for `{path}`")
            continue
        for param in command.params:
            if isinstance(param, click.Option) and not {"--help", "--vault", "--actor"} & set(param.opts):
                longest = max(param.opts, key=len)
                if longest not in body:
                    missing.append(f"`{path}` does not mention {longest}")
    assert missing == []


def test_the_cli_reference_documents_no_command_that_does_not_exist() -> None:
    real = {path for path, _ in commands(cli)}
    documented = set(sections((DOCS / "cli.md").read_text(encoding="utf-8")))
    assert documented - real == set()


def test_global_options_are_documented() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for param in cli.params:
        if isinstance(param, click.Option) and "--help" not in param.opts:
            assert max(param.opts, key=len) in text


def test_format_doc_lists_every_key_kind_and_value() -> None:
    text = (DOCS / "format.md").read_text(encoding="utf-8")
    for key, _ in codec.ENGRAM_KEYS + codec.SYNAPSE_KEYS + codec.EVIDENCE_KEYS + codec.PROPOSAL_KEYS:
        assert f"`{key}`" in text, key
    for family, kinds in SYNAPSE_FAMILIES.items():
        assert family in text
        for kind in kinds:
            assert f"`{kind}`" in text, kind
    for value in (*ENGRAM_KINDS, *STATUSES, *VISIBILITIES):
        assert f"`{value}`" in text, value


def test_recall_doc_shows_every_setting_with_its_default() -> None:
    import dataclasses

    import yaml

    from engram.index.catalog import FreshnessSettings
    from engram.recall.settings import RecallSettings
    from engram.store.settings import _camel

    text = (DOCS / "recall.md").read_text(encoding="utf-8")
    block = text.split("these are the defaults:", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    documented = yaml.safe_load(block)["recall"]
    defaults = RecallSettings()
    for f in dataclasses.fields(RecallSettings):
        key = _camel(f.name)
        assert key in documented, key
        value = getattr(defaults, f.name)
        assert (dict(value) if f.name == "edge_weights" else value) == documented[key], key
    assert documented["freshness"] == FreshnessSettings().freshness
    assert set(documented) == {_camel(f.name) for f in dataclasses.fields(RecallSettings)} | {"freshness"}
