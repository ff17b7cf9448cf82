"""An Obsidian vault (or any folder of Markdown) imported: read-only against the source,
paths and file names kept so wikilinks resolve, properties kept (clashes namespaced),
whitespace kept, and a second run that writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.vault import Vault
from mergedriver import codec
from tests.adopt.helpers import DATA, checksums, links_in, resolves
from tests.conftest import DATASETS, snapshot

FIXTURE = DATA / "obsidian-vault"


def test_obsidian_fixture_imports_with_paths_properties_and_whitespace(vault: Vault) -> None:
    before = checksums(FIXTURE)
    report = vault.run_import(vault.read_import(FIXTURE))
    assert checksums(FIXTURE) == before  # the source is only read
    assert report.importer == "obsidian" and report.counts["NEW"] == 5 and report.counts["BAD"] == 0
    assert report.passed_over == 1  # Attachments/diagram.canvas
    alice = vault.get("People/Alice Smith.md")
    assert alice.title == "Alice Smith" and alice.domain == "People".lower()
    assert alice.status == "active" and alice.extra["obsidian.status"] == "[[Published]]"  # kept, not refused
    assert alice.extra["Due date"] == "2025-03-01" and alice.extra["role"] == "staff engineer"
    assert alice.extra["aliases"] == ["Alice"] and alice.tags == ("person",)
    assert alice.source == {"importer": "obsidian", "from": "obsidian-vault", "key": "People/Alice Smith.md"}
    body = (FIXTURE / "People" / "Alice Smith.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    # the body as written, in the canonical form every item body has (whitespace rules: codec)
    assert alice.content == codec.canonical_content(body) and "[[Retry storms#Mitigation|the retry notes]]" in body
    retry = vault.get("Notes/Retry storms.md")
    assert retry.kind == "pattern" and retry.summary.startswith("Clients retrying") and retry.tags == ("incident", "retries")
    assert "\ttab-indented code block" in retry.content
    rocket = vault.get("Notes/🚀 Launch checklist.md")
    assert rocket.title == "🚀 Launch checklist" and rocket.path == "Notes/🚀 Launch checklist.md"
    template = vault.get("Templates/Person Template.md")
    assert template.extra["obsidian.frontmatter"] == 'categories:\n  - "[[People]]"\ncreated: {{date}}\n'
    readme = vault.get("README")  # the fixture's README.md: the vault's own README.md holds the name
    assert readme.path == f"README-{readme.id[-6:].lower()}.md" and readme.source["key"] == "README.md"


def test_wikilinks_resolve_in_the_vault_as_in_the_source(vault: Vault) -> None:
    vault.run_import(vault.read_import(FIXTURE))
    checked = 0
    for rel in ("People/Alice Smith.md", "Notes/Retry storms.md", "Notes/🚀 Launch checklist.md"):
        for target in links_in(FIXTURE, rel):
            if target.endswith(".canvas") or not resolves(FIXTURE, target):
                continue  # attachments are not notes (passed over); [[Published]] names no note
            assert resolves(vault.root, target), f"{rel}: [[{target}]] no longer resolves"
            checked += 1
    assert checked == 4


def test_a_second_run_writes_nothing(vault: Vault) -> None:
    vault.run_import(vault.read_import(FIXTURE))
    before = snapshot(vault)
    again = vault.run_import(vault.read_import(FIXTURE))
    assert again.written == 0 and again.counts["SKIPPED"] == 5
    assert snapshot(vault) == before


def test_rename_gives_engram_paths_without_variation_selectors(vault: Vault) -> None:
    vault.run_import(vault.read_import(FIXTURE, rename=True, default_domain=("imported",)))
    rocket = vault.get("🚀 Launch checklist")
    assert rocket.path == "imported/notes/launch-checklist.md"
    assert all(not Path(i.path or "").name.startswith(("\ufe0f", "-")) for i in vault.list())


def test_cli_import_of_a_folder_dry_run_then_for_real(vault: Vault) -> None:
    runner = CliRunner()
    dry = runner.invoke(cli, ["--vault", str(vault.root), "import", str(FIXTURE), "--dry-run"])
    assert dry.exit_code == 0 and vault.list() == []
    assert "5 note(s) from obsidian-vault: 5 new" in dry.stdout and "(dry run: nothing was written)" in dry.stdout
    done = runner.invoke(cli, ["--vault", str(vault.root), "import", str(FIXTURE)])
    assert done.exit_code == 0 and "5 new" in done.stdout and "1 other file(s) passed over" in done.stdout
    again = runner.invoke(cli, ["--vault", str(vault.root), "import", str(FIXTURE)])
    assert "0 new, 5 already imported" in again.stdout


def test_the_vault_itself_or_inside_the_source_is_not_imported(vault: Vault, tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), "import", str(vault.root)])
    assert out.exit_code == 2 and "is the vault itself" in out.stderr
    notes = tmp_path / "notes"
    shutil.copytree(FIXTURE, notes)
    inner = Vault.init(notes / "engram")
    inner.create("Already here", "x")
    report = inner.run_import(inner.read_import(notes))
    assert report.counts["NEW"] == 5  # the vault's own files are not read back in


def test_a_real_obsidian_vault_imports_whole(vault: Vault) -> None:
    source = DATASETS / "vaults" / "kepano-obsidian"
    assert source.is_dir(), f"{source} is missing: the shared datasets must be beside the repository"
    before = checksums(source)
    report = vault.run_import(vault.read_import(source))
    notes = sum(1 for p in source.rglob("*.md") if ".obsidian" not in p.parts)
    assert report.counts["NEW"] == notes and report.counts["BAD"] == 0
    assert checksums(source) == before
    assert len(vault.list()) == notes
    assert vault.run_import(vault.read_import(source)).written == 0


def test_a_terminal_sees_a_progress_bar_and_a_summary(vault: Vault) -> None:
    """Under a pseudo-terminal, as a person runs it: click's progress bar on stderr."""
    import os
    import pty
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "engram"
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(exe), "--vault", str(vault.root), "import", str(FIXTURE)],
        stdin=follower, stdout=follower, stderr=follower, close_fds=True,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, screen
    assert "importing obsidian-vault" in screen and "100%" in screen
    assert "5 note(s) from obsidian-vault: 5 new" in screen


def test_two_files_that_repeat_each_other_both_come_in(vault: Vault, tmp_path: Path) -> None:
    """Dendron's hierarchy stubs, Obsidian's `Note 1.md`: each file is a note people link
    to by its path, so a repeat within the source is written and reported, not dropped;
    a repeat of what the vault held before is not written."""
    source = tmp_path / "notes"
    (source / "a").mkdir(parents=True)
    (source / "b").mkdir()
    body = "Deploys freeze at noon on Fridays; hotfixes need two approvals and a rollback plan.\n"
    (source / "a" / "2021.md").write_text(body)
    (source / "b" / "2021.md").write_text(body)
    (source / "b" / "Freeze 1.md").write_text(body.replace("two", "2"))
    vault.create("Freeze", body.replace("two", "2"))  # in the vault before the import
    report = vault.run_import(vault.read_import(source))
    outcomes = {r.where: (r.outcome, r.message) for r in report.results}
    assert outcomes["a/2021.md"] == ("NEW", None)
    assert outcomes["b/2021.md"] == ("NEW", "repeats a/2021.md of the same source")
    assert outcomes["b/Freeze 1.md"][0] == "UPDATE"  # near the item the vault already held
    assert "2 new (1 repeating another note of the source)" in report.summary()


# ------------------------------------------------------------- personal data (issue 28)

HANDBOOK = {
    "Setup.md": "# Setup\nInstall to /Users/yourusername/Library/Application Support/app.\n",
    "Credits.md": "# Credits\nFixed by Jane Doe <jane.doe@gmail.com>.\n",
    "Usage.md": "# Usage\nRun it daily.\n",
    "Keys.md": "# Keys\nDeploy with AKIAIOSFODNN7EXAMPLF and nothing else.\n",
}


def handbook(tmp_path: Path) -> Path:
    source = tmp_path / "handbook"
    source.mkdir()
    for name, text in HANDBOOK.items():
        (source / name).write_text(text, encoding="utf-8")
    return source


def test_notes_with_personal_data_are_held_back_by_name_never_dropped_in_silence(vault: Vault, tmp_path: Path) -> None:
    """The reproduction: an import of a folder of Markdown dropped the notes holding a
    placeholder home path or a contributor's email, which adoption in place keeps."""
    source = handbook(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(vault.root), "import", str(source)])
    assert result.exit_code == 1
    err = result.stderr
    assert "  Setup.md: held back, personal data: Home folder path on line 2" in err
    assert "  Credits.md: held back, personal data: Email address on line 2" in err
    assert "Import them with --personal-data private (this machine only), redact, or keep" in err
    assert "  Keys.md: bad, skipped:" in err and "secret" in err  # a credential is never a choice
    assert "1 new, 0 already imported" in result.stdout and "2 held back for personal data" in result.stdout
    assert [i.path for i in vault.list()] == ["Usage.md"]
    as_json = runner.invoke(cli, ["--vault", str(vault.root), "import", str(source), "--dry-run", "--json"])
    held = {r["key"]: r["message"] for r in json.loads(as_json.stdout)["results"] if r["outcome"] == "HELD"}
    assert set(held) == {"Setup.md", "Credits.md"} and "Home folder path" in held["Setup.md"]


FRONTMATTER = "---\ntags:\n  - ops\naliases:\n  - Deploy keys\n---\n"


def test_findings_in_a_note_with_frontmatter_are_named_by_the_files_line(vault: Vault, tmp_path: Path) -> None:
    """The reproduction: a finding on line 9 of a note whose frontmatter is 6 lines was
    reported at "content line 3", a line a person cannot find in the file they open."""
    source = tmp_path / "notes"
    source.mkdir()
    (source / "Deploy.md").write_text(
        FRONTMATTER + "# Deploy\n\nDeploy with AKIAIOSFODNN7EXAMPLF and nothing else.\n", encoding="utf-8")
    (source / "Setup.md").write_text(
        FRONTMATTER + "# Setup\n\nSteps.\nInstall to /Users/yourusername/Library/app.\n", encoding="utf-8")
    lines = {name: next(n for n, line in enumerate((source / name).read_text().splitlines(), start=1)
                        if "AKIA" in line or "/Users/" in line) for name in ("Deploy.md", "Setup.md")}
    assert lines == {"Deploy.md": 9, "Setup.md": 10}  # content lines 3 and 4, below 6 lines of frontmatter
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(vault.root), "import", str(source)])
    assert result.exit_code == 1
    assert "  Deploy.md: bad, skipped: 1 secret(s) would go into a shared (committed) file, so nothing was " \
        "written: AWS Access Key on line 9 (AKIA… 20 chars)" in result.stderr
    assert "  Setup.md: held back, personal data: Home folder path on line 10 (" in result.stderr
    assert "content line" not in result.stderr
    as_json = runner.invoke(cli, ["--vault", str(vault.root), "import", str(source), "--dry-run", "--json"])
    messages = {r["key"]: r["message"] for r in json.loads(as_json.stdout)["results"]}
    assert "AWS Access Key on line 9 " in messages["Deploy.md"] and "Home folder path on line 10 " in messages["Setup.md"]


def test_one_flag_imports_them_private_redacted_or_as_they_are(tmp_path: Path) -> None:
    source = handbook(tmp_path)
    found: dict[str, dict[str, str]] = {}
    for choice in ("private", "redact", "keep"):
        root = tmp_path / choice
        Vault.init(root).close()
        result = CliRunner().invoke(cli, ["--vault", str(root), "import", str(source), "--personal-data", choice])
        assert result.exit_code == 1 and "Keys.md: bad, skipped" in result.stderr  # the secret, whatever the flag
        assert "held back" not in result.stderr and "3 new" in result.stdout
        with Vault.open(root) as vault:
            found[choice] = {i.path or "": i.content for i in vault.list(include_hidden=True)}
            if choice == "keep":
                kept = [e for e in vault.audit() if e.action == "keep-personal-data"]
                assert sorted(e.path or "" for e in kept) == ["Credits.md", "Setup.md"]
    assert set(found["private"]) == {"Usage.md", "private/Setup.md", "private/Credits.md"}
    assert found["private"]["private/Setup.md"] == HANDBOOK["Setup.md"]
    assert set(found["redact"]) == set(found["keep"]) == {"Usage.md", "Setup.md", "Credits.md"}
    assert "/Users/yourusername" not in found["redact"]["Setup.md"] and "[redacted" in found["redact"]["Setup.md"]
    assert "gmail" not in found["redact"]["Credits.md"]
    assert found["keep"]["Setup.md"] == HANDBOOK["Setup.md"] and found["keep"]["Credits.md"] == HANDBOOK["Credits.md"]
