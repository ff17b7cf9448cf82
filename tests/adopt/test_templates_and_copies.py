"""Obsidian templates never get an id, and a duplicate id is taken from the copy (issue 28).

`engram adopt` wrote ids into the notes of the templates folder, so every note made from a
template shared one id (doctor: duplicate ids; search: one hit for all of them); and
`doctor --fix` gave the committed original a new id and left it on the copy whose path
sorted first. Real files, a real git history, the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.vault import Vault

DAILY = "Templates/Daily.md"
MEETING = "Meta/Templater/Meeting.md"
DAILY_TEXT = b"---\ncreated: {{date}}\ntags: [daily]\n---\n## Plan\n"
MEETING_TEXT = b"---\nattendees: []\n---\n# <% tp.file.title %>\n"


def git(root: Path, *args: str, when: str | None = None) -> str:
    env = dict(os.environ)
    if when is not None:  # distinct commit times: history decides by them
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env).stdout


def run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--vault", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def obsidian_vault(root: Path) -> Path:
    """A vault whose core Templates plugin and Templater each name a templates folder."""
    (root / ".obsidian/plugins/templater-obsidian").mkdir(parents=True)
    (root / ".obsidian/templates.json").write_text(json.dumps({"folder": "Templates"}))
    (root / ".obsidian/plugins/templater-obsidian/data.json").write_text(
        json.dumps({"templates_folder": "Meta/Templater", "trigger_on_file_creation": True})
    )
    for rel, data in ((DAILY, DAILY_TEXT), (MEETING, MEETING_TEXT), ("Notes/Plan.md", b"# Plan\nShip it.\n")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_adopt_skips_templates_and_says_so(tmp_path: Path) -> None:
    root = obsidian_vault(tmp_path / "notes")
    Vault.init(root).close()
    with Vault.open(root) as vault:
        assert vault.adoption().adoptable == 1  # the templates are not counted as adoptable
    code, out, err = run(root, "adopt")
    assert code == 0, err
    assert "adopted Notes/Plan.md" in out and "1 adopted, 2 skipped" in out
    for rel in (DAILY, MEETING):
        assert f"skipped {rel}: an Obsidian template" in err
    assert (root / DAILY).read_bytes() == DAILY_TEXT and (root / MEETING).read_bytes() == MEETING_TEXT
    assert (root / "Notes/Plan.md").read_text().startswith("---\nid: ")
    # A write that names a template is refused, with what to do instead; nothing changes.
    code, out, err = run(root, "update", MEETING, "--tag", "meeting")
    assert code == 4 and "is an Obsidian template (the templates folder Meta/Templater/)" in err
    assert "index.ignore" in err and (root / MEETING).read_bytes() == MEETING_TEXT


def test_doctor_fix_gives_the_copy_a_new_id_and_the_original_keeps_its_own(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes/Zebra.md").write_text("# Zebra\nStripes.\n")
    Vault.init(root).close()
    with Vault.open(root) as vault:
        ((_, original_id),) = vault.adopt(["Notes/Zebra.md"]).adopted
    git(root, "add", "-A")
    git(root, "commit", "-qm", "zebra", when="2026-01-01T10:00:00Z")
    # A person copies the note (its id with it) under a name that sorts first, and a
    # second copy is committed later.
    original = (root / "Notes/Zebra.md").read_bytes()
    (root / "Notes/Copied.md").write_bytes(original)
    git(root, "add", "Notes/Copied.md")
    git(root, "commit", "-qm", "copy", when="2026-01-02T10:00:00Z")
    (root / "Notes/Another.md").write_bytes(original)  # not committed at all
    with Vault.open(root) as vault:
        found = sorted((p.path, p.message) for p in vault.doctor().problems if p.code == "duplicate-id")
        assert [path for path, _ in found] == ["Notes/Another.md", "Notes/Copied.md"], found
        assert all("with Notes/Zebra.md, which has carried it since commit" in message for _, message in found)
        vault.doctor(fix=True)
        assert vault.get("Notes/Zebra.md").id == original_id
        assert (root / "Notes/Zebra.md").read_bytes() == original
        ids = {vault.get(rel).id for rel in ("Notes/Copied.md", "Notes/Another.md")}
        assert len(ids) == 2 and original_id not in ids, [(root / r).read_text() for r in ("Notes/Copied.md", "Notes/Another.md")]
        # A copy that is a person's note has its id line changed and nothing else.
        copied = (root / "Notes/Copied.md").read_text()
        assert copied == original.decode().replace(original_id, vault.get("Notes/Copied.md").id)
        assert vault.doctor().problems == ()


def test_a_template_that_carries_an_id_is_named_in_the_finding(tmp_path: Path) -> None:
    """Ids written into a template by an older engram: the notes made from it are the
    copies, and the finding says to take the id out of the template."""
    root = obsidian_vault(tmp_path / "notes")
    (root / DAILY).write_bytes(b"---\nid: 01JTEMPLATE0000000000000000\ntags: [daily]\n---\n## Plan\n")
    Vault.init(root).close()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "template", when="2026-01-01T10:00:00Z")
    (root / "Daily").mkdir()
    (root / "Daily/2026-01-02.md").write_bytes((root / DAILY).read_bytes() + b"- [ ] water the plants\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a daily note", when="2026-01-02T10:00:00Z")
    with Vault.open(root) as vault:
        (problem,) = [p for p in vault.doctor().problems if p.code == "duplicate-id"]
        assert problem.path == "Daily/2026-01-02.md"
        assert "it is an Obsidian template: take its id line out" in problem.message
