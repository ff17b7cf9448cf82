"""CLI commands for recall: search, paths, flush.

``engram search`` prints a digest of each hit for a person (title; id, kind, path and
relevance; a line or two of the text around the first matched word), not its body:
bodies come with ``--full`` or an explicit ``--tier``, which print what the tier
carries. ``--json`` is the same answer an agent gets (``--tier auto`` by default),
whatever a person's view shows.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

import click

from engram.cli._common import emit_json, json_option, pass_vault
from engram.recall.results import TIERS, SearchHit, SearchResult
from engram.store.model import ENGRAM_KINDS, STATUSES, VISIBILITIES
from engram.vault import Vault


def _title_line(rank: int, hit: SearchHit) -> str:
    flag = "" if hit.status == "active" else f" [{hit.status}]"
    via = "" if hit.via == "lexical" else "  (linked)"
    if hit.scope != "team":
        via += f"  ({hit.scope})"
    return f"{rank:>2}. {hit.title}{flag}{via}"


def _warning_lines(hit: SearchHit) -> list[str]:
    return [f"    ! contradicted by {w.title} ({w.id}, {w.path})" for w in hit.warnings]


def _explain_lines(hit: SearchHit) -> list[str]:
    e = hit.explanation
    parts = ", ".join(f"{k} {v:+.3f}" for k, v in e.parts.items() if v)
    rel = f"relevance {hit.relevance:.2f}; " if hit.relevance is not None else ""
    lines = [f"    why: {rel}{parts}"]
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


def _render_hit(rank: int, hit: SearchHit, explain: bool) -> list[str]:
    """A hit as its tier carries it: the summary and the whole body when it has one."""
    lines = [_title_line(rank, hit), f"    {hit.id}  {hit.kind}  {hit.path}  score {hit.score:.3f}"]
    if hit.summary and hit.tier != "catalog" and (hit.content is None or hit.summary not in hit.content):
        lines.append(f"    {hit.summary}")
    if hit.content is not None:
        lines += ["    " + line if line else "" for line in hit.content.rstrip().splitlines()]
    return lines + _warning_lines(hit) + (_explain_lines(hit) if explain else [])


#: A digest's snippet: about two lines of text around the match.
SNIPPET_CHARS = 150
SNIPPET_WIDTH = 76
#: Tokens an item's body may cost in the digest view (the snippet needs the text, not
#: the agent's budget): effectively all of it.
WHOLE = 10**9


def _first_match(text: str, terms: Sequence[str]) -> int | None:
    """Where the earliest matched term starts in ``text``, also in another form of the
    word (the index stems: "retries" matched "retry"), or None."""
    best: int | None = None
    for term in terms:
        forms = [term] + [term[:n] for n in range(len(term) - 1, max(3, len(term) - 4), -1)]
        for form in forms:
            found = re.search(rf"(?<!\w){re.escape(form)}", text, re.IGNORECASE)
            if found:
                best = found.start() if best is None else min(best, found.start())
                break
    return best


def snippet(hit: SearchHit) -> list[str]:
    """At most two lines: the body around the first matched word, else the summary,
    else the start of the body."""
    text = " ".join((hit.content or "").split())
    where = _first_match(text, hit.explanation.matched_terms)
    if where is None:
        text, where = hit.summary or text, 0
    start = max(0, where - SNIPPET_CHARS // 3)
    if start:
        start = text.find(" ", start, where) + 1 or start  # at a word's start
    end = min(len(text), start + SNIPPET_CHARS)
    if end < len(text):
        end = text.rfind(" ", where, end) if text.rfind(" ", where, end) > where else end
    shown = ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
    return textwrap.wrap(shown, SNIPPET_WIDTH)[:2] if text else []


def _render_digest(rank: int, hit: SearchHit, explain: bool) -> list[str]:
    """A hit for a person: title; id, kind, path and relevance; the text around the match."""
    relevance = f"  relevance {hit.relevance:.2f}" if hit.relevance is not None else ""
    if hit.via == "meaning" and hit.explanation.similarity is not None:
        relevance = f"  by meaning {hit.explanation.similarity:.2f}"
    lines = [_title_line(rank, hit), f"    {hit.id}  {hit.kind}  {hit.path}{relevance}"]
    lines += ["    " + line for line in snippet(hit)]
    return lines + _warning_lines(hit) + (_explain_lines(hit) if explain else [])


def _render(result: SearchResult, explain: bool, digest: bool = False) -> None:
    note = result.meaning.note()
    if note:  # on standard error: what was searched, not what was found
        click.echo(f"note: {note}", err=True)
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
    if not result.hits and result.left_out:
        click.echo(f"{result.left_out} hit(s), none of which fits the token budget: "
                   f"--budget {result.needed_budget}, or --tier catalog for every hit as one line.")
        return
    if not result.hits:
        click.echo(f"nothing matches {result.query!r}.")
        return
    for rank, hit in enumerate(result.hits, start=1):
        for line in (_render_digest if digest else _render_hit)(rank, hit, explain):
            click.echo(line)
    if digest:
        notes = [f"{len(result.hits)} hit(s), {result.elapsed_ms:.1f} ms; bodies: --full"]
    else:
        notes = [f"{len(result.hits)} hit(s), ~{result.tokens} tokens, {result.elapsed_ms:.1f} ms"]
    if result.ignored:
        notes.append(f"ignored: {' '.join(result.ignored)}")
    if result.truncated:
        notes.append("query cut to its first terms")
    if result.left_out:
        notes.append(f"{result.left_out} more hit(s) did not fit the token budget: --budget {result.needed_budget} "
                     "for every hit, or --tier catalog")
    elif result.budget_reached and not digest:
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
@click.option("--tier", type=click.Choice(TIERS), default=None,
              help="Print what this tier carries: catalog, digest, content (bodies) or auto (bodies while --budget lasts; the default of --full and --json).")
@click.option("--full", is_flag=True, help="Print the hits' bodies (--tier auto) instead of a digest of each.")
@click.option("--budget", type=click.IntRange(min=1), default=None, help="Tokens the hits may take under --tier auto (default 2000).")
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
    tier: str | None,
    full: bool,
    budget: int | None,
    explain: bool,
    no_expand: bool,
    raw: bool,
    as_json: bool,
) -> None:
    """Search the vault: ranked, graph-expanded recall with honest abstention.

    Prints each hit's title, id, path, relevance and the text around the match;
    --full prints bodies. Exits 0 with hits, 1 with no confident match.

    \b
    Examples:
      engram search "vacuum full lock"
      engram search "vacuum full lock" --full
      engram search db_url_v2 --tier catalog --explain
      engram search "retry policy" --domain engineering --as-of 2026-01-01
    """
    digest = not (as_json or full or tier)
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
        tier="content" if digest else tier or "auto",
        budget=WHOLE if digest else budget,
        expand=not no_expand,
        raw=raw,
    )
    if as_json:
        emit_json(result.to_json())
    else:
        _render(result, explain, digest)
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
