"""CLI commands that bring knowledge in and take it out: import, export, and the trash
(``engram restore``, in :mod:`engram.cli.lifecycle`, brings items back from it)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from engram.adopt.batch import ImportReport
from engram.adopt.sources import FORMATS, decode, parse_text
from engram.cli._common import emit_json, json_option, pass_vault
from engram.cli.terminal import raw_stderr
from engram.errors import InvalidInput
from engram.items.trash import parse_age
from engram.store.fsio import atomic_write
from engram.store.paths import split_domain
from engram.trust.policy import PERSONAL_CHOICES
from engram.vault import Vault


@click.command(name="import")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--from", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="What SOURCE is (auto: tell by looking).")
@click.option("--domain", "-d", default="", metavar="A/B",
              help="Put everything under this domain (records: the domain of those that name none).")
@click.option("--rename", is_flag=True, help="Use engram's own paths (domain/slug.md) instead of the source's file names.")
@click.option("--no-dedupe", is_flag=True, help="Write near-duplicates and duplicates too.")
@click.option("--dry-run", is_flag=True, help="Read and check everything; write nothing.")
@click.option("--personal-data", "personal_data", type=click.Choice(PERSONAL_CHOICES), default=None,
              help="Notes holding personal data (emails, home-folder paths) that the vault's trust settings "
              "would hold back: import them private (this machine only), redacted, or as they are (keep).")
@json_option
@pass_vault
def import_(
    vault: Vault, source: Path, fmt: str, domain: str, rename: bool, no_dedupe: bool, dry_run: bool,
    personal_data: str | None, as_json: bool,
) -> None:
    """Import notes, records or another tool's memory from SOURCE (a folder, a file, or - for stdin).

    SOURCE is only read. Formats: an Obsidian vault or folder of Markdown (paths and file
    names kept, so wikilinks keep resolving), a basic-memory project, a Co-Engram
    repository, the MCP memory server's memory.jsonl, JSON / JSON Lines records. A
    second run of the same import writes nothing. Bad records are listed and skipped;
    the exit code is then 1. A note holding personal data a shared file must not get
    (an email, a home-folder path such as /Users/yourusername/…) is held back and listed
    with what was found, exit code 1, unless --personal-data says what to do with it.
    A progress bar shows on a terminal.

    \b
    Examples:
      engram import ~/Obsidian/Work --dry-run
      engram import ~/Obsidian/Work --personal-data redact
      engram import ~/.config/memory.jsonl --domain people
      engram import decisions.jsonl --domain team/decisions
    """
    if str(source) == "-":
        batch = parse_text(decode(sys.stdin.buffer.read()), "stdin", fmt, default_domain=split_domain(domain))
    else:
        batch = vault.read_import(source, fmt, default_domain=split_domain(domain), rename=rename)
    show_bar = not as_json and sys.stderr.isatty() and len(batch.records) > 1
    if show_bar:
        with click.progressbar(length=len(batch.records), label=f"importing {batch.origin}", file=raw_stderr()) as bar:
            report = vault.run_import(batch, dedupe=not no_dedupe, dry_run=dry_run, progress=bar.update,
                                      personal_data=personal_data)
    else:
        report = vault.run_import(batch, dedupe=not no_dedupe, dry_run=dry_run, personal_data=personal_data)
    if as_json:
        emit_json(report_json(report))
    else:
        _show(report)
    if report.counts["BAD"] or report.counts["HELD"]:
        sys.exit(1)


def report_json(report: ImportReport) -> dict[str, object]:
    return {
        "importer": report.importer,
        "from": report.origin,
        "dryRun": report.dry_run,
        "records": len(report.results),
        "counts": report.counts,
        "written": report.written,
        "links": report.links,
        "unresolved": list(report.unresolved),
        "passedOver": report.passed_over,
        "results": [
            {"key": r.key, "where": r.where, "outcome": r.outcome, "id": r.id, "path": r.path,
             "similarity": r.similarity, "message": r.message}
            for r in report.results
        ],
    }


def _show(report: ImportReport, shown: int = 10) -> None:
    # Every held note is named with what was found: each is a choice for a person to make.
    held = [r for r in report.results if r.outcome == "HELD"]
    for r in held:
        click.echo(f"  {r.where}: held back, personal data: {r.message}", err=True)
    if held:
        click.echo(
            f"  ({len(held)} note(s) held back: the vault's trust settings keep personal data out of shared "
            "files. Import them with --personal-data private (this machine only), redact, or keep (as they are).)",
            err=True,
        )
    for outcome, label in (("BAD", "bad, skipped"), ("UPDATE", "near-duplicate, not written")):
        hits = [r for r in report.results if r.outcome == outcome]
        for r in hits[:shown]:
            detail = r.message if outcome == "BAD" else f"{r.similarity:.0%} like {r.path}"
            click.echo(f"  {r.where}: {label}: {detail}", err=True)
        if len(hits) > shown:
            click.echo(f"  … and {len(hits) - shown} more {label} (--json lists every record)", err=True)
    repeats = [r for r in report.results if r.outcome == "NEW" and r.message]
    for r in repeats[:shown]:
        click.echo(f"  {r.where}: written, {r.message}", err=True)
    if len(repeats) > shown:
        click.echo(f"  … and {len(repeats) - shown} more written repeats (--json lists every record)", err=True)
    for line in report.unresolved[:shown]:
        click.echo(f"  unresolved link: {line}", err=True)
    if report.counts["UPDATE"]:
        click.echo("  (near-duplicates: update the item named instead, or import again with --no-dedupe)", err=True)
    click.echo(report.summary())


@click.command()
@click.option("--format", "fmt", type=click.Choice(["markdown", "jsonl"]), default="markdown", show_default=True)
@click.option("--output", "-o", metavar="PATH", default=None,
              help="Where to write (default: KNOWLEDGE.md for markdown, standard output for jsonl; - for stdout).")
@click.option("--domain", "-d", default=None, metavar="A/B", help="Only this domain and below.")
@pass_vault
def export(vault: Vault, fmt: str, output: str | None, domain: str | None) -> None:
    """Export the vault: KNOWLEDGE.md for people, or JSON Lines that import back.

    markdown: one document grouped by domain, each item with its kind, provenance,
    recall counts and verification date. jsonl: one line per item with every key, its
    body, path and edges; `engram import FILE` in another vault gives an equal vault.

    \b
    Examples:
      engram export                                  # writes ./KNOWLEDGE.md
      engram export --format jsonl -o backup.jsonl
    """
    if fmt == "markdown":
        text = vault.export_markdown(domain=domain)
        target = output or "KNOWLEDGE.md"
    else:
        text = "".join(line + "\n" for line in vault.export_jsonl(domain=domain))
        target = output or "-"
    if target == "-":
        click.echo(text, nl=False)
        return
    atomic_write(Path(target).expanduser(), text.encode("utf-8"))
    click.echo(f"wrote {target}", err=True)


@click.group()
def trash() -> None:
    """What `engram delete` moved aside (kept in .engram/trash/ on this machine).

    \b
    Examples:
      engram trash list
      engram trash purge --older-than 30d --yes
    """


@trash.command("list")
@json_option
@pass_vault
def trash_list(vault: Vault, as_json: bool) -> None:
    """List deleted items, newest first."""
    found = vault.trash()
    if as_json:
        emit_json({"trash": [{"id": e.id, "title": e.title, "path": e.path, "deletedAt": e.deleted_at,
                              "synapses": e.synapses} for e in found]})
        return
    for e in found:
        click.echo(f"{e.id}  {e.deleted_at}  {e.title}  ({e.path}, {e.synapses} synapse(s))")
    if not found:
        click.echo("the trash is empty")


@trash.command("purge")
@click.option("--older-than", required=True, metavar="AGE", help="Deleted more than AGE ago: 30d, 12h, 2w …")
@click.option("--dry-run", is_flag=True, help="List what would go; delete nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@pass_vault
def trash_purge(vault: Vault, older_than: str, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Delete trashed items for good (audited); they cannot be restored after this."""
    age = parse_age(older_than)
    doomed = vault.purge_trash(age, dry_run=True)
    if not dry_run and doomed and not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"refusing to purge {len(doomed)} item(s) without confirmation.", hint="Pass --yes.")
        click.confirm(f"Delete {len(doomed)} trashed item(s) for good?", abort=True)
    gone = doomed if dry_run else vault.purge_trash(age)
    if as_json:
        emit_json({"dryRun": dry_run, "purged": [{"id": e.id, "title": e.title, "deletedAt": e.deleted_at} for e in gone]})
        return
    verb = "would purge" if dry_run else "purged"
    click.echo(f"{verb} {len(gone)} item(s) deleted more than {older_than} ago")


COMMANDS = [import_, export, trash]
