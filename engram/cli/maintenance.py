"""CLI commands that look after a vault: doctor, reindex, demo."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from engram.adopt.adopting import Adoption
from engram.cli._common import AppContext, emit_json, item_line, json_option, pass_vault
from engram.cli.terminal import terminal_progress
from engram.demo import build_demo
from engram.doctor import Problem, Report
from engram.errors import Conflict
from engram.store.progress import bar
from engram.vault import Vault


@click.command()
@click.option("--fix", is_flag=True, help="Apply the safe fixes (each is atomic; re-run if interrupted).")
@click.option(
    "--accept", "accept", multiple=True, metavar="PATH",
    help="Keep the current text of this item although it is git's last commit cut off "
    "inside a line (recompute its hash). Repeatable.",
)
@json_option
@pass_vault
def doctor(vault: Vault, fix: bool, accept: tuple[str, ...], as_json: bool) -> None:
    """Check the vault: unparseable files, duplicate ids, dangling or misnamed synapses,
    stale derived sections, private items in the wrong place, leftover temp files; and
    summarise adoption: notes with an id or indexed only, wikilinks that do not resolve.

    A stale hash over text that is git's last committed version cut off inside a
    line (a write cut short) is never recomputed silently: the diff is shown, and `--fix` asks on a terminal (or
    pass `--accept PATH`). Exits 0 when nothing is wrong (or everything was fixed), 1
    otherwise.

    \b
    Example:
      engram doctor --fix
      engram doctor --accept notes/release-plan.md
    """
    interactive = fix and not as_json and sys.stdin.isatty()

    def confirm(problem: Problem) -> bool:
        click.echo(f"{problem.path}: {problem.message}")
        click.echo(problem.diff or "")
        return click.confirm("Keep the text as it is now (recompute its hash)?", default=False)

    # Progress only where a person watches: a terminal (the bars draw on stderr).
    progress = None if as_json else terminal_progress()
    report = vault.doctor(fix=fix, accept=accept, confirm=confirm if interactive else None, progress=progress)
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "items": report.items,
                "synapses": report.synapses,
                "problems": [p.to_json() for p in report.problems],
                "adoption": adoption_json(report.adoption),
            }
        )
    else:
        for p in report.problems:
            state = "fixed" if p.fixed else ("fixable" if p.fixable else "needs you")
            if p.fix_error:
                state = f"fix failed: {p.fix_error}"
            if p.consent and not p.fixed:
                state = "needs your yes"
            click.echo(f"{p.code:<18} {p.path}: {p.message} [{state}]")
            if p.diff and not p.fixed:
                click.echo("\n".join(f"    {line}" for line in p.diff.splitlines()))
        for line in report.adoption.lines():
            click.echo(line)
        for path, text in report.adoption.unresolved[:20]:
            click.echo(f"  unresolved  {path}: [[{text}]]")
        if len(report.adoption.unresolved) > 20:
            click.echo(f"  … and {len(report.adoption.unresolved) - 20} more (`engram doctor --json` lists them all)")
        for path, text, choices in report.adoption.ambiguous[:20]:
            click.echo(f"  ambiguous   {path}: [[{text}]] could be {' or '.join(choices)}")
        click.echo(closing_line(report, fix))
    if not report.ok:
        raise click.exceptions.Exit(1)


def closing_line(report: Report, fix: bool) -> str:
    """The count, and the next step only where there is one: `--fix` is recommended when
    an open problem has a safe fix, `--accept` when one waits for a person's yes; a
    finding no fix can settle says what to do on its own line above."""
    open_count = sum(not p.fixed for p in report.problems)
    line = f"{report.items} items, {report.synapses} synapses, {len(report.problems)} problem(s), {open_count} open"
    fixable = sum(p.fixable and not p.fixed and p.fix_error is None for p in report.problems)
    waiting = sum(p.consent and not p.fixed for p in report.problems)
    steps = []
    if fixable and not fix:
        steps.append(f"run `engram doctor --fix` for the {fixable} fixable one(s)")
    if waiting:
        steps.append(f"{waiting} wait(s) for your yes (`engram doctor --accept PATH`)")
    if open_count and not steps:
        steps.append("none has an automatic fix: each says above what to do")
    return line + ("" if not steps else " — " + "; ".join(steps))


def adoption_json(a: Adoption) -> dict[str, object]:
    return {
        "items": a.items,
        "withId": a.with_id,
        "indexedOnly": a.indexed_only,
        "adoptable": a.adoptable,
        "notYaml": list(a.not_yaml),
        "clashes": [{"path": p, "keys": k} for p, k in a.clashes],
        "links": a.links,
        "unresolved": [{"path": p, "link": t} for p, t in a.unresolved],
        "ambiguous": [{"path": p, "link": t, "candidates": list(c)} for p, t, c in a.ambiguous],
        "editedOutside": list(a.edited_outside),
    }


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--dry-run", is_flag=True, help="Say which notes would get an id; write nothing.")
@click.option("--clean-residue", is_flag=True,
              help="Also take out what an older engram wrote into these notes (usage counters, a "
              "'## Synapses (derived)' section); the counters move to .engram/notes.json.")
@json_option
@pass_vault
def adopt(vault: Vault, paths: tuple[str, ...], dry_run: bool, clean_residue: bool, as_json: bool) -> None:
    """Write an id into notes that have none (default: every note in the vault).

    Only the `id` key is added; every other byte of each note stays as it was. Notes
    are searchable and linkable without this: an id in the file keeps a note's identity
    across renames made outside engram and on every clone. Obsidian templates (the
    templates folder of .obsidian/templates.json or Templater) are skipped, and said so:
    every note made from a template would copy its id.

    A note that holds what an older engram wrote into it (counters such as
    retrievalCount, a '## Synapses (derived)' section; doctor's old-residue) is named,
    and left as it is: adopting asks for an id, not for that. Add --clean-residue to
    take exactly those lines out of the notes given (the counters move beside the note,
    into .engram/notes.json; every other byte stays).

    \b
    Example:
      engram adopt Notes/ "References/Kevin Kelly.md" --dry-run
      engram adopt Notes/ --clean-residue
    """
    report = vault.adopt(list(paths), dry_run=dry_run, clean_residue=clean_residue)
    if as_json:
        emit_json(report.to_json())
        return
    verb = "would adopt" if dry_run else "adopted"
    for path, item_id in report.adopted:
        click.echo(f"{verb} {path}" + (f" (id {item_id})" if item_id else ""))
    for path, why in report.skipped:
        click.echo(f"skipped {path}: {why}", err=True)
    left = [path for path, _, cleaned in report.residue if not cleaned]
    for path, what, cleaned in report.residue:
        if cleaned:
            click.echo(f"cleaned {path}: took out {what} (the counters moved to .engram/notes.json)")
        elif clean_residue and dry_run:
            click.echo(f"would clean {path}: it holds {what}, which an older engram wrote into it")
        elif clean_residue:
            click.echo(f"could not clean {path}: it holds {what}, which cannot be taken out in place"
                       " (`engram doctor` shows the diff)", err=True)
        else:
            click.echo(f"{path} holds {what}, which an older engram wrote into it; left as it is")
    line = f"{len(report.adopted)} {verb}, {len(report.skipped)} skipped, {report.already} already had an id"
    cleaned_count = len(report.residue) - len(left)
    if cleaned_count:
        line += f", {cleaned_count} cleaned of an older engram's residue"
    click.echo(line)
    if left and not clean_residue:
        shown = " ".join(shlex.quote(p) for p in left[:3]) + (" …" if len(left) > 3 else "")
        click.echo(
            f"{len(left)} note(s) hold what an older engram wrote into them, which adopt leaves: take exactly those "
            f"lines out with `engram adopt --clean-residue {shown}` (`engram doctor` shows each diff)"
        )


@click.command()
@click.option(
    "--embed", is_flag=True,
    help="Also compute now every vector recall by meaning still lacks (vectors already computed"
    " for the same text are kept in .engram/vectors.sqlite and never computed again).",
)
@json_option
@pass_vault
def reindex(vault: Vault, embed: bool, as_json: bool) -> None:
    """Rebuild the derived index (.engram/index.sqlite) from the files alone.

    With --embed, also embed every item recall by meaning has no vector for yet
    (docs/recall.md); a progress bar shows on a terminal. `engram serve` does the same
    in the background.

    \b
    Examples:
      engram reindex
      engram reindex --embed
    """
    progress = None if as_json else terminal_progress()
    stats = vault.reindex(progress=progress)
    embedded = None
    if embed:
        with bar(progress, "embedding", vault.unembedded()) as shown:
            embedded = vault.embed_all(progress=shown.update)
    if as_json:
        emit_json({"files": stats.scanned, "errors": stats.errors, **({"embedded": embedded} if embed else {})})
    else:
        click.echo(f"indexed {stats.scanned} files ({stats.errors} could not be read)")
        if embed:
            click.echo(f"embedded {embedded} items for recall by meaning (the others were embedded before)")


@click.command()
@click.argument("path", required=False, default="engram-demo", type=click.Path(file_okay=False))
@click.pass_obj
def demo(app: AppContext, path: str) -> None:
    """Build a demo vault in PATH (default ./engram-demo) and show a few operations.

    Re-running rebuilds the demo; a folder that is not a demo vault is never touched.

    \b
    Example:
      engram demo /tmp/engram-demo
    """
    vault = build_demo(Path(path))
    say = click.echo
    say(f"Built a demo vault at {vault.root} (open it in Obsidian to see the graph).\n")
    say("$ engram list --domain ops")
    for item in vault.list(domain="ops"):
        say("  " + item_line(item))
    target = vault.list(domain="ops/postgres", kinds=["procedure"])[0]
    say(f"\n$ engram synapses {target.id[:8]}")
    for syn in vault.synapses(target.id):
        other = vault.get(syn.other(target.id))
        say(f"  --{syn.kind}--> {other.title}")
    say('\n$ engram search "charge a customer twice" --tier catalog')
    found = vault.search("charge a customer twice", tier="catalog", limit=4, record=False)
    for n, hit in enumerate(found.hits, 1):
        how = "matched words" if hit.via == "lexical" else "reached through a link"
        if hit.relevance is not None and hit.relevance < found.floor:
            how = f"one word in common: relevance {hit.relevance:.2f}, below the {found.floor:.2f} floor"
        say(f"  {n}. {hit.title}  ({how})")
    say('\n$ engram add "Use pg_repack instead of VACUUM FULL on live tables" ... (same text again)')
    again = vault.create(target.title, target.content, domain=list(target.domain_tags))
    say(f"  {again.outcome}: the original {again.id[:8]} was reinforced, nothing new was written")
    say(f"\n$ engram update {target.id[:8]} --version 1 --add-tag runbook   (a stale version)")
    try:
        vault.update(target.id, {"tags": [*target.tags, "runbook"]}, expected_version=1)
    except Conflict as exc:
        say(f"  error: {exc}")
    say("\n$ engram doctor")
    report = vault.doctor()
    say(f"  {report.items} items, {report.synapses} synapses, {len(report.problems)} problems")
    say(f"\nTry: engram --vault {vault.root} list")
    vault.close()


COMMANDS = [doctor, adopt, reindex, demo]
