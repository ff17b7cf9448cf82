"""CLI commands for scopes and capture: endorse, promote, promotions, generalize,
distill, need, observe, and ``engram scopes`` (status, setup, sync). Thin: each calls one
:class:`~engram.vault.Vault` method and prints what it returns."""

from __future__ import annotations

from pathlib import Path

import click

from engram.cli._common import emit_json, json_option, pass_vault
from engram.errors import InvalidInput
from engram.scopes.promotion import Promotion, Standing
from engram.vault import Vault


def _promotion_lines(step: Promotion) -> list[str]:
    lines = [f"{step.id}  {step.source} → {step.to}: {step.status} — {step.message}"]
    lines += [f"    tell: {t}" for t in step.tells]
    if step.suggestion:
        lines.append(f"    suggested restatement: {step.suggestion}")
    if step.pr_url:
        lines.append(f"    pull request: {step.pr_url}")
    if step.commands:
        lines.append("    to review and land it by hand:")
        lines += [f"      {c}" for c in step.commands]
    return lines


def _standing_line(s: Standing) -> str:
    needs = "ready" if s.ready else "needs " + "; ".join(s.needs)
    return (f"{s.id}  [{s.scope} → {s.target or '-'}] {s.title} — recalled by {len(s.recalled_by)} agent(s) on "
            f"{len(s.recall_days)} day(s), {len(s.endorsed_by)} endorsement(s); {needs}")


@click.command()
@click.argument("ref")
@click.option("--note", default="", help="Why it holds (shown to whoever reviews the promotion).")
@json_option
@pass_vault
def endorse(vault: Vault, ref: str, note: str, as_json: bool) -> None:
    """Vouch for an item: the endorsement a promotion to org requires.

    \b
    Example:
      engram endorse 01J8ZQ3K --note "hit it in prod; the fix is exact"
    """
    item, scope = vault.endorse(ref, note)
    if as_json:
        emit_json({"id": item.id, "scope": scope, "endorsements": [dict(e) for e in item.endorsements or ()]})
    else:
        click.echo(f"endorsed {item.id} ({scope}): {len(item.endorsements or ())} endorsement(s)")


@click.command()
@click.argument("ref", required=False)
@click.option("--to", "to", type=click.Choice(["team", "org"]), help="Scope to promote to (default: the next one up).")
@click.option("--org-content", help="The general restatement that becomes the org body.")
@click.option("--org-content-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Read the restatement from a file.")
@click.option("--force", is_flag=True, help="Promote even if not eligible or the gate refuses (audited).")
@json_option
@pass_vault
def promote(vault: Vault, ref: str | None, to: str | None, org_content: str | None,
            org_content_file: Path | None, force: bool, as_json: bool) -> None:
    """Promote an item one scope up (private → team → org), or every eligible item.

    Without REF every eligible item moves up one step to --to (default team). Org needs
    an endorsement and a body that names no project, file, test, ticket or decision id.

    \b
    Examples:
      engram promote                       # every eligible private item to team
      engram promote 01J8ZQ3K --to org --org-content "Annotate a regime change."
    """
    if org_content is not None and org_content_file is not None:
        raise InvalidInput("pass --org-content or --org-content-file, not both.", field="org_content",
                           hint="Use one of them.")
    if org_content_file is not None:
        org_content = org_content_file.read_text(encoding="utf-8")
    steps = vault.promote(ref, to, org_content=org_content, force=force)
    if as_json:
        emit_json([s.to_json() for s in steps])
        return
    for step in steps:
        for line in _promotion_lines(step):
            click.echo(line)
    if not steps:
        click.echo("nothing is eligible yet (see `engram promotions`)")


@click.command()
@json_option
@pass_vault
def promotions(vault: Vault, as_json: bool) -> None:
    """What may move up a scope, what waits for review, which org items need restating.

    \b
    Example:
      engram promotions
    """
    review = vault.review_promotions()
    if as_json:
        emit_json(review.to_json())
        return
    click.echo(f"eligible (recalled by {review.min_agents} agents or on {review.min_days} days, or endorsed):")
    for s in review.eligible:
        click.echo("  " + _standing_line(s))
    if not review.eligible:
        click.echo("  none")
    click.echo("pending review:")
    for p in review.pending:
        click.echo(f"  {p.id}  {p.title} — {p.message}")
    if not review.pending:
        click.echo("  none")
    if review.org_configured:
        click.echo("org items that read project-specific (engram generalize ID --org-content ...):")
        for s in review.needs_generalization:
            click.echo(f"  {s.id}  {s.title}: " + "; ".join(s.tells))
        if not review.needs_generalization:
            click.echo("  none")
    else:
        click.echo("no org vault is configured (engram scopes setup --org PATH_OR_URL)")


@click.command()
@click.argument("ref")
@click.option("--org-content", help="The general restatement (default: the latest general endorsement note).")
@click.option("--note", help="Also record an endorsement with this note.")
@click.option("--force", is_flag=True, help="Accept a restatement the gate still refuses (audited).")
@json_option
@pass_vault
def generalize(vault: Vault, ref: str, org_content: str | None, note: str | None, force: bool, as_json: bool) -> None:
    """Restate an org item's body as the general rule; the concrete body is kept as its example.

    \b
    Example:
      engram generalize 01J8ZQ3K --org-content "Rebuild derived tables after a correction."
    """
    step = vault.generalize(ref, org_content, note=note, force=force)
    if as_json:
        emit_json(step.to_json())
    else:
        for line in _promotion_lines(step):
            click.echo(line)


@click.command()
@click.option("--agentsync", help="Repository holding an agentsync board (default: capture.agentsync).")
@click.option("--branch", help="The board's branch (default: capture.agentsyncBranch, else agentsync).")
@click.option("--context-keeper", "context_keeper", help="A context-keeper .context/ folder (default: capture.contextKeeper).")
@json_option
@pass_vault
def distill(vault: Vault, agentsync: str | None, branch: str | None, context_keeper: str | None, as_json: bool) -> None:
    """Capture finished agentsync claims and context-keeper decisions as items (idempotent).

    \b
    Example:
      engram distill --agentsync ~/src/project --context-keeper ~/src/project/.context
    """
    report = vault.distill(agentsync=agentsync, agentsync_branch=branch, context_keeper=context_keeper)
    if as_json:
        emit_json(report.to_json("cli"))
    else:
        for line in report.lines("cli"):
            click.echo(line)


@click.command()
@click.argument("text")
@click.option("--why", default="", help="What the gap blocks or costs.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@json_option
@pass_vault
def need(vault: Vault, text: str, why: str, tags: tuple[str, ...], as_json: bool) -> None:
    """Record a need: something missing that the team should know about.

    \b
    Example:
      engram need "No seed data for staging" --why "every migration test starts empty"
    """
    result = vault.record_need(text, why, tags=tags)
    if as_json:
        emit_json({"outcome": result.outcome, "id": result.id, "path": result.item.path, "note": result.note})
    else:
        click.echo(f"{result.outcome} {result.id} {result.item.path}")
        if result.note:
            click.echo(result.note, err=True)


@click.command()
@click.argument("text")
@click.option("--domain", default="captured", help="Where an accepted proposal files the item (default captured).")
@click.option("--tag", "tags", multiple=True, help="A tag for the item (repeatable).")
@json_option
@pass_vault
def observe(vault: Vault, text: str, domain: str, tags: tuple[str, ...], as_json: bool) -> None:
    """Screen something that happened in a session; a reusable decision or lesson becomes
    a capture proposal (accept it with `engram accept`), never an item directly.

    \b
    Example:
      engram observe "We chose pg_repack over VACUUM FULL because it does not lock the table."
    """
    verdict = vault.observe(text, domain=[p for p in domain.split("/") if p], tags=tags)
    if as_json:
        emit_json(verdict.to_json())
    elif verdict.proposal:
        click.echo(f"proposed {verdict.proposal}{' (filed before)' if verdict.existing else ''}: {verdict.reason}")
    else:
        click.echo(f"not kept ({verdict.layer}): {verdict.reason}")


@click.group()
def scopes() -> None:
    """Scopes (private, team, org) and capture sources: status, setup, sync.

    \b
    Example:
      engram scopes status
    """


@scopes.command("status")
@json_option
@pass_vault
def scopes_status(vault: Vault, as_json: bool) -> None:
    """Which scopes and capture sources are wired, what each gap costs, and the fix.

    \b
    Example:
      engram scopes status
    """
    wires = vault.scopes_status()
    if as_json:
        emit_json([w.to_json("cli") for w in wires])
        return
    for w in wires:
        click.echo(f"{'✓' if w.wired else '✗'} {w.name:<15} {w.detail}")
        if not w.wired:
            click.echo(f"    costs: {w.cost}")
            click.echo(f"    fix:   {w.fix.on('cli') if w.fix else ''}")


@scopes.command("setup")
@click.option("--org", "org_repo", help="The org vault repository: a path (relative to the vault) or a URL; '' removes it.")
@click.option("--review/--no-review", default=None, help="(In an org vault) promotions arrive as branches for review.")
@click.option("--agentsync", "agentsync_repo", help="The repository holding an agentsync board; '' removes it.")
@click.option("--context-keeper", "context_keeper", help="A context-keeper .context/ folder; '' removes it.")
@json_option
@pass_vault
def scopes_setup(vault: Vault, org_repo: str | None, review: bool | None, agentsync_repo: str | None,
                 context_keeper: str | None, as_json: bool) -> None:
    """Wire the org vault and capture sources in engram.yaml (only those lines change).

    \b
    Example:
      engram scopes setup --org git@example.com:acme/org-knowledge.git --context-keeper ../.context
    """
    changed = vault.configure_scopes(org_repo=org_repo, review=review, agentsync_repo=agentsync_repo,
                                     context_keeper=context_keeper)
    if as_json:
        emit_json({"changed": changed, "scopes": [w.to_json("cli") for w in vault.scopes_status()]})
    else:
        click.echo("engram.yaml updated; commit it (engram sync) so the team shares it" if changed
                   else "nothing to change")


@scopes.command("sync")
@json_option
@pass_vault
def scopes_sync(vault: Vault, as_json: bool) -> None:
    """Sync this machine's clone of the org vault (clone it first if needed).

    \b
    Example:
      engram scopes sync
    """
    report, settled = vault.sync_scopes()
    if as_json:
        emit_json({**report.to_json(), "settled": settled})
    else:
        for line in report.lines():
            click.echo("org: " + line)
        for item_id in settled:
            click.echo(f"{item_id}: its promotion landed in org")


COMMANDS = [endorse, promote, promotions, generalize, distill, need, observe, scopes]
