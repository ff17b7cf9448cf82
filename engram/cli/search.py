"""CLI commands for recall: search, paths, flush."""

from __future__ import annotations

from collections.abc import Sequence

import click

from engram.cli._common import emit_json, json_option, pass_vault
from engram.recall.results import TIERS, SearchHit, SearchResult
from engram.store.model import ENGRAM_KINDS, STATUSES, VISIBILITIES
from engram.vault import Vault


def _render_hit(rank: int, hit: SearchHit, explain: bool) -> list[str]:
    flag = "" if hit.status == "active" else f" [{hit.status}]"
    via = "" if hit.via == "lexical" else "  (linked)"
    if hit.scope != "team":
        via += f"  ({hit.scope})"
    lines = [f"{rank:>2}. {hit.title}{flag}{via}", f"    {hit.id}  {hit.kind}  {hit.path}  score {hit.score:.3f}"]
    if hit.summary and hit.tier != "catalog" and (hit.content is None or hit.summary not in hit.content):
        lines.append(f"    {hit.summary}")
    if hit.content is not None:
        lines += ["    " + line if line else "" for line in hit.content.rstrip().splitlines()]
    for warning in hit.warnings:
        lines.append(f"    ! contradicted by {warning.title} ({warning.id}, {warning.path})")
    if explain:
        e = hit.explanation
        parts = ", ".join(f"{k} {v:+.3f}" for k, v in e.parts.items() if v)
        rel = f"relevance {hit.relevance:.2f}; " if hit.relevance is not None else ""
        lines.append(f"    why: {rel}{parts}")
        if e.matched_terms or e.missing_terms:
            lines.append(
                f"    terms: matched {', '.join(e.matched_terms) or '-'}; missing {', '.join(e.missing_terms) or '-'}"
            )
        for step in e.path:
            arrow = f"--{step.kind}-->" if step.direction == "out" else f"<--{step.kind}--"
            lines.append(f"    path: {step.source} {arrow} {step.target} (x{step.weight:.2f} = {step.activation:.3f})")
        if e.replaces:
            lines.append(f"    supersedes: {', '.join(e.replaces)}")
    return lines


def _render(result: SearchResult, explain: bool) -> None:
    if result.status == "no_confident_match":
        best = result.best_relevance or 0.0
        click.echo(
            f"no confident match for {result.query!r} (best relevance {best:.2f} < floor {result.floor:.2f})."
        )
        if result.near_misses:
            click.echo("closest:")
            for miss in result.near_misses:
                click.echo(f"  - {miss.title}  ({miss.id}, {miss.path})")
        click.echo("Try other words, a broader domain, or `engram paths` to see what the vault covers.")
        return
    if not result.hits:
        click.echo(f"nothing matches {result.query!r}.")
        return
    for rank, hit in enumerate(result.hits, start=1):
        for line in _render_hit(rank, hit, explain):
            click.echo(line)
    notes = [f"{len(result.hits)} hit(s), ~{result.tokens} tokens, {result.elapsed_ms:.1f} ms"]
    if result.ignored:
        notes.append(f"ignored: {' '.join(result.ignored)}")
    if result.truncated:
        notes.append("query cut to its first terms")
    if result.budget_reached:
        notes.append("token budget reached: the rest as catalog lines (--budget, --tier)")
    if not result.expanded:
        notes.append("graph expansion off")
    click.echo("-- " + "; ".join(notes))


@click.command()
@click.argument("query")
@click.option("--domain", "-d", default=None, metavar="A/B", help="Only this domain and below.")
@click.option("--kind", "-k", "kinds", multiple=True, type=click.Choice(ENGRAM_KINDS), help="Only these kinds (repeatable).")
@click.option("--tag", "-t", "tags", multiple=True, help="Only items with all these tags.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES), help="Only these statuses (repeatable).")
@click.option("--visibility", "visibilities", multiple=True, type=click.Choice(VISIBILITIES))
@click.option("--min-importance", type=float, default=None, help="0 to 1.")
@click.option("--all", "include_hidden", is_flag=True, help="Include frozen, forgotten and quarantined items.")
@click.option("--as-of", default=None, metavar="TIME", help="Recall what the vault held at this instant (ISO-8601).")
@click.option("--limit", "-n", type=click.IntRange(1, 200), default=None, help="At most this many hits (default 10).")
@click.option("--tier", type=click.Choice(TIERS), default="auto", show_default=True, help="How much of each hit to show.")
@click.option("--budget", type=click.IntRange(min=1), default=None, help="Token budget for --tier auto (default 2000).")
@click.option("--explain", is_flag=True, help="Show why each hit ranks where it does.")
@click.option("--no-expand", is_flag=True, help="Lexical hits only: do not follow synapses.")
@click.option("--raw", is_flag=True, help="Treat QUERY as FTS5 syntax (AND, OR, NEAR, prefix*).")
@json_option
@pass_vault
def search(
    vault: Vault,
    query: str,
    domain: str | None,
    kinds: Sequence[str],
    tags: Sequence[str],
    statuses: Sequence[str],
    visibilities: Sequence[str],
    min_importance: float | None,
    include_hidden: bool,
    as_of: str | None,
    limit: int | None,
    tier: str,
    budget: int | None,
    explain: bool,
    no_expand: bool,
    raw: bool,
    as_json: bool,
) -> None:
    """Search the vault: ranked, graph-expanded recall with honest abstention.

    Exits 0 with hits, 1 with no confident match.

    \b
    Examples:
      engram search "vacuum full lock"
      engram search db_url_v2 --tier catalog --explain
      engram search "retry policy" --domain engineering --as-of 2026-01-01
    """
    result = vault.search(
        query,
        limit=limit,
        domain=domain,
        kinds=kinds or None,
        tags=tags or None,
        statuses=statuses or None,
        visibility=visibilities or None,
        min_importance=min_importance,
        include_hidden=include_hidden,
        as_of=as_of,
        tier=tier,
        budget=budget,
        expand=not no_expand,
        raw=raw,
    )
    if as_json:
        emit_json(result.to_json())
    else:
        _render(result, explain)
    if result.status != "ok":
        raise click.exceptions.Exit(1)


@click.command()
@click.option("--domain", "-d", default=None, metavar="A/B", help="Only this part of the tree.")
@click.option("--depth", type=click.IntRange(min=1), default=None, help="Fold folders below this depth.")
@click.option("--all", "include_hidden", is_flag=True, help="Count frozen, forgotten and quarantined items too.")
@json_option
@pass_vault
def paths(vault: Vault, domain: str | None, depth: int | None, include_hidden: bool, as_json: bool) -> None:
    """Show the domain tree with item counts (what the vault covers, before you search).

    \b
    Example:
      engram paths --depth 2
    """
    tree = vault.paths(domain=domain, depth=depth, include_hidden=include_hidden)
    if as_json:
        emit_json(tree.to_json())
        return
    click.echo(f"{tree.path or '(vault)'}  {tree.total} item(s)")
    for line in tree.lines():
        click.echo("  " + line)


@click.command()
@json_option
@pass_vault
def flush(vault: Vault, as_json: bool) -> None:
    """Fold journaled search retrievals and feedback into the items' frontmatter (one batch).

    Searches and feedback never rewrite Markdown; they journal under .engram/. This
    writes retrievalCount, lastRetrievedAt, importance and the feedback counters (no
    version bump). `engram sync` runs it too.

    \b
    Example:
      engram flush
    """
    folded = vault.fold()
    stats = folded.usage
    if as_json:
        emit_json({"items": stats.items, "retrievals": stats.retrievals, "missing": stats.missing,
                   "feedback": {"items": folded.items, "entries": folded.feedback, "missing": folded.missing}})
    else:
        click.echo(
            f"folded {stats.retrievals} retrieval(s) into {stats.items} item(s)"
            + (f"; {stats.missing} no longer exist" if stats.missing else "")
            + (f"; {folded.feedback} feedback entr(ies) into {folded.items} item(s)" if folded.feedback else "")
        )


COMMANDS = [search, paths, flush]
