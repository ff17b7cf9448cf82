"""Exports: KNOWLEDGE.md for people; JSON Lines that `engram import` reads back into an
equal vault (same ids, paths, frontmatter, bodies and edges)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.adopt.records import parse
from engram.cli import cli
from engram.vault import Vault
from tests.conftest import snapshot


def populate(vault: Vault) -> dict[str, str]:
    repack = vault.create("Use pg_repack, not VACUUM FULL", "VACUUM FULL locks the table.\n\n\tcode here\n",
                          domain=["ops", "postgres"], kind="procedure", tags=["postgres"], importance=0.8,
                          summary="pg_repack rebuilds online", extra={"ticket": "OPS-7", "Due date": "2025-03-01"})
    bloat = vault.create("Table bloat after mass deletes", "Space is never returned.", domain=["ops", "postgres"])
    mine = vault.create("My scratch note", "private thoughts", visibility="private")
    old = vault.create("Old retry advice", "retry immediately", domain=["eng"])
    vault.update(old.id, {"status": "archived", "verificationStatus": "verified", "lastVerifiedAt": "2026-05-01T00:00:00Z"})
    vault.link(repack.id, "derives_from", bloat.id, weight=0.8, evidence="after the March incident")
    vault.link(repack.id, "similar_to", old.id)
    vault.link(mine.id, "contextualizes", bloat.id)
    return {"repack": repack.id, "bloat": bloat.id, "mine": mine.id, "old": old.id}


def test_jsonl_round_trips_into_an_equal_vault(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "a") as a:
        populate(a)
        text = "\n".join(a.export_jsonl()) + "\n"
        original = snapshot(a)
    with Vault.init(tmp_path / "b") as b:
        report = b.run_import(parse(text, "export.jsonl"))
        assert report.counts["NEW"] == 4 and report.counts["BAD"] == 0 and report.links == 3
        copy = snapshot(b)
        again = b.run_import(parse(text, "export.jsonl"))
        assert again.written == 0 and snapshot(b) == copy
    items = {k: v for k, v in original.items() if k.endswith((".md", ".yaml")) and k != "README.md"}
    assert {k: copy.get(k) for k in items} == items  # byte for byte: frontmatter, bodies, edges, paths


@settings(max_examples=25)
@given(
    title=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(lambda t: t.strip()),
    body=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=200),
    tags=st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), max_size=3, unique=True),
)
def test_any_item_round_trips(tmp_path_factory, title: str, body: str, tags: list[str]) -> None:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("rt")
    with Vault.init(base / "a") as a:
        made = a.create(title, body, domain=["x"], tags=tags)
        item = a.get(made.id)
        text = "\n".join(a.export_jsonl())
    with Vault.init(base / "b") as b:
        b.run_import(parse(text, "e.jsonl"))
        back = b.get(made.id)
    assert back.to_meta() == item.to_meta() and back.content == item.content and back.path == item.path


def test_knowledge_md_groups_by_domain_with_provenance_and_recall(vault: Vault, tmp_path: Path) -> None:
    ids = populate(vault)
    text = vault.export_markdown()
    assert text.startswith("# Knowledge: vault\n")
    ops = text.index("## ops/postgres")
    assert text.index("## eng") < ops and text.index("### Use pg_repack, not VACUUM FULL") > ops
    section = text[text.index("### Use pg_repack"):text.index("### Table bloat")]
    assert "*procedure* · importance 0.80 · confidence 0.50 · recalled 0 time(s), 0 effective · unverified" in section
    assert "By tester on " in section and f"`{ids['repack']}`" in section and "> pg_repack rebuilds online" in section
    assert "→ derives_from Table bloat after mass deletes" in section
    assert "status archived" in text and "verified, last verified 2026-05-01" in text
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), "export", "-o", str(tmp_path / "K.md")])
    assert out.exit_code == 0 and (tmp_path / "K.md").read_text(encoding="utf-8").split("\n", 3)[3] == text.split("\n", 3)[3]
    lines = CliRunner().invoke(cli, ["--vault", str(vault.root), "export", "--format", "jsonl", "--domain", "ops"])
    assert lines.exit_code == 0 and len(lines.stdout.splitlines()) == 2
