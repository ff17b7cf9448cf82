"""CLI commands for items and synapses: init, add, get, update, delete, list, link, …"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from engram.cli._common import (
    AppContext,
    emit_json,
    item_json,
    item_line,
    json_option,
    parse_assignments,
    pass_vault,
    read_text_arg,
    remote_json,
    show_remote,
    synapse_json,
)
from engram.cli.terminal import terminal_progress
from engram.errors import InvalidInput
from engram.store.model import ENGRAM_KINDS, STATUSES, SYNAPSE_KINDS, VISIBILITIES
from engram.store.paths import split_domain
from engram.vault import Vault

kind_choice = click.Choice(ENGRAM_KINDS)
status_choice = click.Choice(STATUSES)
visibility_choice = click.Choice(VISIBILITIES)


@click.command()
@click.argument("path", required=False, default=None, type=click.Path(file_okay=False))
@click.option("--remote", "remote_url", metavar="URL", default=None,
              help="Also publish the vault there (see `engram remote add`).")
@json_option
@click.pass_obj
def init(app: AppContext, path: str | None, remote_url: str | None, as_json: bool) -> None:
    """Create a vault in PATH (default: --vault, else here), or complete an existing one.

    Lays down the vault template (.gitattributes for the merge driver, .gitignore,
    README, Obsidian settings, engram.yaml), runs `git init` when PATH is not in a git
    repository, and registers the merge driver. With --remote, also adds the remote,
    pushes, and prints what a teammate runs. Safe to run again.

    \b
    Examples:
      engram init ~/team-memory
      engram init ~/team-memory --remote git@github.com:acme/team-memory.git
    """
    # PATH, else the global --vault / ENGRAM_VAULT (once ignored: `engram --vault X init`
    # initialised the working directory), else here. PATH wins so that a person with
    # ENGRAM_VAULT set can still start another vault. Vault.init expands `~`.
    target = path if path is not None else app.vault_path if app.vault_path is not None else "."
    vault = Vault.init(Path(target), actor=app.actor)
    try:
        shared = vault.add_remote(remote_url) if remote_url else None
        # Adopting a big folder indexes every note (about 10 s for 6k): a bar says so on a terminal.
        vault.refresh(progress=None if as_json else terminal_progress())
        notes = vault.adoption(refresh=False)  # just refreshed: see adopting.summary
        if as_json:
            emit_json({
                "root": str(vault.root), "items": notes.items, "indexedOnly": notes.indexed_only,
                "links": notes.links, **({"remote": remote_json(shared)} if shared else {}),
            })
        else:
            click.echo(f"vault ready at {vault.root}")
            if notes.items:
                click.echo(
                    f"indexed {notes.items} note(s) ({notes.indexed_only} without an id of their own),"
                    f" {notes.links} wikilink(s); no file was changed. `engram doctor` shows the details."
                )
            if shared:
                show_remote(shared)
            else:
                click.echo("next: engram --vault " + str(vault.root) + ' add "First thing we learned"')
    finally:
        vault.close()


@click.command()
@click.argument("title")
@click.option("--domain", "-d", default="", metavar="A/B", help="Domain path, e.g. ops/postgres.")
@click.option("--kind", "-k", type=kind_choice, default="observation", show_default=True)
@click.option("--tag", "-t", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--body", "-b", default=None, help="Markdown body; `-` or omitted with piped input reads stdin.")
@click.option("--summary", "-s", default="", help="One-line summary.")
@click.option("--importance", type=float, default=0.5, show_default=True, help="0 to 1.")
@click.option("--confidence", type=float, default=0.5, show_default=True, help="0 to 1.")
@click.option("--visibility", type=visibility_choice, default="team", show_default=True)
@click.option("--source-type", default="firsthand", show_default=True, help="firsthand, secondhand, …")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE", help="An extra frontmatter key (repeatable).")
@click.option("--no-dedupe", is_flag=True, help="Write even if a duplicate or near-duplicate exists.")
@json_option
@pass_vault
def add(
    vault: Vault,
    title: str,
    domain: str,
    kind: str,
    tags: Sequence[str],
    body: str | None,
    summary: str,
    importance: float,
    confidence: float,
    visibility: str,
    source_type: str,
    assignments: Sequence[str],
    no_dedupe: bool,
    as_json: bool,
) -> None:
    """Add an item and print its id.

    Identical knowledge is not written twice: the original is reinforced and its id is
    printed (DUPLICATE). A near-identical item is never overwritten: the new text is a
    learn decision (see `engram learn`) — reinforced (DUPLICATE), appended after the
    original's text (EXTENDED), superseding it (SUPERSEDED), a disputed draft
    (DISPUTED), or a new item linked to it (NEW). --no-dedupe forces a new item.

    \b
    Examples:
      engram add "Use pg_repack, not VACUUM FULL" -d ops/postgres -k procedure -t postgres \\
          --body "VACUUM FULL locks the table; pg_repack does not."
      echo "body from a pipe" | engram add "Title" -d notes
    """
    text = read_text_arg(body, stdin_when_missing=True) or ""
    result = vault.create(
        title,
        text,
        domain=split_domain(domain),
        kind=kind,
        tags=tags,
        summary=summary,
        importance=importance,
        confidence=confidence,
        visibility=visibility,
        source_type=source_type,
        extra=parse_assignments(assignments) or None,
        dedupe=not no_dedupe,
    )
    if as_json:
        emit_json(
            {
                "outcome": result.outcome,
                "id": result.id,
                "path": result.item.path,
                "similarity": result.similarity,
                "related": result.related,
                "status": result.item.status,
                "note": result.note,
                "quarantined": result.quarantine.to_json() if result.quarantine else None,
            }
        )
        return
    click.echo(result.id)
    if result.item.visibility == "private" and visibility != "private":
        click.echo(f"stored private ({result.item.path}): it holds data the trust settings keep off shared files.", err=True)
    if result.quarantine is not None:
        click.echo(f"{result.note} (`engram quarantine list` shows it.)", err=True)
    elif result.note:
        click.echo(f"{result.outcome.lower()}: {result.note}", err=True)
    elif result.outcome == "DUPLICATE":
        click.echo(f"duplicate of {result.item.path}: reinforced it, wrote nothing new.", err=True)


@click.command()
@click.argument("ref")
@json_option
@pass_vault
def get(vault: Vault, ref: str, as_json: bool) -> None:
    """Show one item: REF is an id (or 6+ leading characters), a path or the exact title.

    \b
    Example:
      engram get "Use pg_repack, not VACUUM FULL"
    """
    item = vault.get(ref)
    if as_json:
        emit_json(item_json(item))
        return
    assert item.path is not None
    click.echo(vault.abspath(item.path).read_text(encoding="utf-8"), nl=False)


@click.command()
@click.argument("ref")
@click.option("--version", "expected", type=int, default=None, help="The version you read; refused if it moved on.")
@click.option("--title", default=None)
@click.option("--body", "-b", default=None, help="New Markdown body (`-` reads stdin).")
@click.option("--summary", "-s", default=None)
@click.option("--domain", "-d", default=None, metavar="A/B")
@click.option("--kind", "-k", type=kind_choice, default=None)
@click.option("--tag", "-t", "tags", multiple=True, help="Replace the tags (repeatable).")
@click.option("--add-tag", "add_tags", multiple=True, help="Add a tag (repeatable).")
@click.option("--remove-tag", "remove_tags", multiple=True, help="Remove a tag (repeatable).")
@click.option("--importance", type=float, default=None)
@click.option("--confidence", type=float, default=None)
@click.option("--status", type=status_choice, default=None)
@click.option("--visibility", type=visibility_choice, default=None)
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE", help="Set any field or extra key; KEY=null removes an extra.")
@json_option
@pass_vault
def update(
    vault: Vault,
    ref: str,
    expected: int | None,
    title: str | None,
    body: str | None,
    summary: str | None,
    domain: str | None,
    kind: str | None,
    tags: Sequence[str],
    add_tags: Sequence[str],
    remove_tags: Sequence[str],
    importance: float | None,
    confidence: float | None,
    status: str | None,
    visibility: str | None,
    assignments: Sequence[str],
    as_json: bool,
) -> None:
    """Change an item. Pass --version N (from `engram get`) to refuse stale edits.

    Changing the title, domain or visibility moves the file; the id never changes.

    \b
    Examples:
      engram update 01J8ZQ3K --version 3 --add-tag postgres --importance 0.8
      engram update "Old title" --title "New title"
    """
    changes: dict[str, Any] = dict(parse_assignments(assignments))
    text = read_text_arg(body, stdin_when_missing=False)
    for key, value in (
        ("title", title),
        ("content", text),
        ("summary", summary),
        ("kind", kind),
        ("importance", importance),
        ("confidence", confidence),
        ("status", status),
        ("visibility", visibility),
    ):
        if value is not None:
            changes[key] = value
    if domain is not None:
        changes["domain_tags"] = split_domain(domain)
    if tags or add_tags or remove_tags:
        current = list(tags) if tags else list(vault.get(ref).tags)
        current += [t for t in add_tags if t not in current]
        removed = {t.lower().lstrip("#") for t in remove_tags}
        changes["tags"] = [t for t in current if t.lower() not in removed]
    if not changes:
        raise InvalidInput("nothing to change.", hint="Pass --title, --body, --add-tag, --set KEY=VALUE, …")
    item = vault.update(ref, changes, expected_version=expected)
    if as_json:
        emit_json(item_json(item, with_content=False))
    else:
        click.echo(f"{item.id} is now version {item.version} at {item.path}")


@click.command()
@click.argument("ref")
@click.option("--version", "expected", type=int, default=None, help="The version you read; refused if it moved on.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@pass_vault
def delete(vault: Vault, ref: str, expected: int | None, yes: bool, as_json: bool) -> None:
    """Delete an item and its synapses (kept in .engram/trash/ on this machine).

    \b
    Example:
      engram delete 01J8ZQ3K --yes
    """
    item = vault.get(ref)
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"refusing to delete {item.path} without confirmation.", hint="Pass --yes.")
        click.confirm(f"Delete {item.path} ({item.title})?", abort=True)
    deleted = vault.delete(item.id, expected_version=expected)
    if as_json:
        emit_json({"deleted": deleted.id, "path": deleted.path})
    else:
        click.echo(f"deleted {deleted.path} (a copy is in .engram/trash/{deleted.id}/)")


@click.command(name="list")
@click.option("--domain", "-d", default=None, metavar="A/B", help="Only this domain and below.")
@click.option("--kind", "-k", "kinds", multiple=True, type=kind_choice, help="Only these kinds (repeatable).")
@click.option("--tag", "-t", "tags", multiple=True, help="Only items with all these tags.")
@click.option("--status", "statuses", multiple=True, type=status_choice, help="Only these statuses (repeatable).")
@click.option("--visibility", "visibilities", multiple=True, type=visibility_choice)
@click.option("--min-importance", type=float, default=None)
@click.option("--all", "include_hidden", is_flag=True, help="Include frozen, forgotten and quarantined items.")
@click.option("--limit", type=click.IntRange(min=1), default=None)
@json_option
@pass_vault
def list_(
    vault: Vault,
    domain: str | None,
    kinds: Sequence[str],
    tags: Sequence[str],
    statuses: Sequence[str],
    visibilities: Sequence[str],
    min_importance: float | None,
    include_hidden: bool,
    limit: int | None,
    as_json: bool,
) -> None:
    """List items, most recently updated first.

    \b
    Example:
      engram list --domain engineering --kind pattern
    """
    found = vault.list(
        domain=domain,
        kinds=kinds or None,
        tags=tags or None,
        statuses=statuses or None,
        visibility=visibilities or None,
        min_importance=min_importance,
        include_hidden=include_hidden,
        limit=limit,
    )
    broken = vault.broken_files()
    if as_json:
        emit_json(
            {
                "items": [item_json(i, with_content=False) for i in found],
                "broken": [{"path": p, "problem": e} for p, e in broken],
            }
        )
        return
    for item in found:
        click.echo(item_line(item))
    if broken:
        click.echo(f"{len(broken)} file(s) could not be read; run `engram doctor`.", err=True)


@click.command()
@click.argument("source")
@click.argument("kind", metavar="KIND")
@click.argument("target")
@click.option("--weight", "-w", type=float, default=None, help="0 to 1 (default 0.5 for a new edge).")
@click.option("--evidence", "-e", default=None, help="Why the edge holds (added to its evidence).")
@click.option("--confidence", type=float, default=None, help="Confidence in that evidence, 0 to 1.")
@json_option
@pass_vault
def link(
    vault: Vault,
    source: str,
    kind: str,
    target: str,
    weight: float | None,
    evidence: str | None,
    confidence: float | None,
    as_json: bool,
) -> None:
    """Create the edge SOURCE --KIND--> TARGET (re-linking merges evidence).

    KIND is one of: extends, part_of, similar_to (structural); depends_on, causes,
    follows (causal); derives_from, contradicts, exemplifies (evidential); supersedes,
    consolidates (temporal); contextualizes (modulatory). similar_to and contradicts
    are symmetric.

    \b
    Example:
      engram link "Frozen dataclass copy" extends "Prefer immutable values" -e "same idea"
    """
    syn = vault.link(source, kind, target, weight=weight, evidence=evidence, confidence=confidence)
    if as_json:
        emit_json(synapse_json(syn))
    else:
        click.echo(syn.id)


@click.command()
@click.argument("source")
@click.argument("kind", metavar="KIND")
@click.argument("target")
@json_option
@pass_vault
def unlink(vault: Vault, source: str, kind: str, target: str, as_json: bool) -> None:
    """Remove the edge SOURCE --KIND--> TARGET.

    \b
    Example:
      engram unlink "Frozen dataclass copy" extends "Prefer immutable values"
    """
    syn = vault.unlink(source, kind, target)
    if as_json:
        emit_json({"removed": syn.id})
    else:
        click.echo(f"removed {syn.id}")


@click.command()
@click.argument("ref", required=False)
@click.option("--kind", type=click.Choice([*SYNAPSE_KINDS, "links_to"]), default=None)
@click.option("--direction", type=click.Choice(["both", "out", "in"]), default="both", show_default=True)
@json_option
@pass_vault
def synapses(vault: Vault, ref: str | None, kind: str | None, direction: str, as_json: bool) -> None:
    """List synapses, all of them or those touching REF; with REF, also the wikilinks
    typed in notes that point from or to it (kind links_to, derived from the text).

    \b
    Example:
      engram synapses "Prefer immutable values" --direction out
    """
    found = [] if kind == "links_to" else vault.synapses(ref, kind=kind, direction=direction)
    typed = vault.wikilinks(ref) if ref is not None and kind in (None, "links_to") else None
    links = []
    if typed is not None:
        links = [*(typed.outgoing if direction != "in" else ()), *(typed.incoming if direction != "out" else ())]
    if as_json:
        emit_json(
            {
                "synapses": [synapse_json(s) for s in found],
                "wikilinks": [
                    {"from": w.source_path, "link": w.text, "status": w.status, "to": w.target_path,
                     "embed": w.embed, "inProperty": w.in_property}
                    for w in links
                ],
            }
        )
        return
    names = vault.titles([end for syn in found for end in (syn.source, syn.target)])
    for syn in found:
        source, target = (f"{names.get(i, '(missing item)')} ({i})" for i in (syn.source, syn.target))
        click.echo(f"{syn.id}  {source} --{syn.kind}--> {target}  weight {syn.weight:g}")
    for w in links:
        target = w.target_path or ("ambiguous: " + " or ".join(w.choices) if w.choices else w.status)
        click.echo(f"wikilink  {w.source_path} --links_to--> {target}  [[{w.text}]]")


@click.command()
@click.argument("ref")
@json_option
@pass_vault
def history(vault: Vault, ref: str, as_json: bool) -> None:
    """Show one item's history: this machine's audit trail (who changed what, when,
    which version) and the git commits of its file, teammates' merged changes included.

    \b
    Example:
      engram history 01J8ZQ3K
    """
    found = vault.timeline(ref)
    if as_json:
        emit_json({"entries": [json.loads(e.to_json()) for e in found.audit], **found.to_json()})
        return
    for e in found.audit:
        versions = f"v{e.old_version}→v{e.new_version}" if e.old_version else f"v{e.new_version}"
        fields = f" ({', '.join(e.fields)})" if e.fields else ""
        note = f" — {e.note}" if e.note else ""
        click.echo(f"{e.at}  {e.actor:<12} {e.action:<9} {versions}{fields}{note}")
    if found.commits:
        click.echo("git:")
        for c in found.commits:
            click.echo(f"{c.at}  {c.author:<12} {c.sha[:10]}  {c.subject}")


COMMANDS = [init, add, get, update, delete, list_, link, unlink, synapses, history]
