"""CLI commands that measure recall on this vault: eval (a golden set, with a regression
gate) and bench (search latency on the vault's own words)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import click

from engram.cli._common import emit_json, json_option, pass_vault
from engram.errors import InvalidInput
from engram.quality.evaluation import ABSTAINED, METRICS, Evaluation, read_baseline
from engram.vault import Vault

_MISSES_SHOWN = 20


def _minimums(pairs: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:  # no "=" leaves value empty, which float() refuses too
            raise InvalidInput(
                f"--min {pair!r} is not METRIC=VALUE.", field="min", hint="e.g. --min recall@5=0.8"
            ) from None
    return out


def _render(ev: Evaluation, show_cases: bool, gated: bool) -> None:
    click.echo(
        f"{ev.source}: {ev.answerable} answerable case(s), {ev.no_answer} no-answer case(s); "
        f"vault defaults, usage not recorded ({ev.elapsed_ms / 1000:.1f} s)"
    )
    if ev.answerable:
        click.echo("  " + "  ".join(f"{m} {ev.totals[m]:.3f}" for m in METRICS))
        click.echo(f"  answerable cases that abstained: {ev.answerable_abstained}")
    if ev.no_answer:
        held = round(ev.totals[ABSTAINED] * ev.no_answer)
        click.echo(f"  no-answer cases abstained: {held}/{ev.no_answer} ({ev.totals[ABSTAINED]:.3f})")
    misses = []
    for n, r in enumerate(ev.results, start=1):
        if not r.case.expect:
            line = "abstained" if r.abstained else f"answered ({len(r.ranked)} hit(s)), expected to abstain"
            missed = not r.abstained
        elif r.abstained:
            line, missed = f"abstained (best relevance {r.best_relevance or 0:.2f})", True
        else:
            # both from the case's metrics: MRR is 1 / the first expected item's rank
            found = round(r.metrics["recall@10"] * len(r.case.expect))
            mrr = r.metrics["mrr"]
            line = f"first expected at rank {round(1 / mrr)}" if mrr else "no expected item returned"
            line += f"; {found}/{len(r.case.expect)} in the top 10"
            missed = found < len(r.case.expect)
        if show_cases or missed:
            misses.append(f"  {n:>3}. {r.case.query!r}: {line}")
    if misses:
        click.echo("cases:" if show_cases else "misses:")
        for line in misses if show_cases else misses[:_MISSES_SHOWN]:
            click.echo(line)
        if not show_cases and len(misses) > _MISSES_SHOWN:
            click.echo(f"  … and {len(misses) - _MISSES_SHOWN} more (--cases lists every case)")
    if ev.failures:
        click.echo("gate failed: " + "; ".join(ev.failures) + ".")
    elif gated:
        click.echo("gate passed.")


@click.command("eval")
@click.argument("golden", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="Hits asked for per case (10 to 200).")
@click.option("--min", "minimums", multiple=True, metavar="METRIC=VALUE",
              help=f"Fail (exit 1) when a total is under this ({', '.join((*METRICS, ABSTAINED))}); repeatable.")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A saved `engram eval --json` run: fail when a total falls more than --tolerance below it.")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=0.01, show_default=True,
              help="How far under the baseline a total may fall.")
@click.option("--cases", "show_cases", is_flag=True, help="List every case, not only the misses.")
@json_option
@pass_vault
def eval_command(
    vault: Vault, golden: Path, limit: int, minimums: Sequence[str], baseline: Path | None, tolerance: float,
    show_cases: bool, as_json: bool,
) -> None:
    """Measure recall on a golden set of this vault's own questions.

    GOLDEN is a YAML, JSON or JSONL file of cases: `query`, `expect` (ids, paths or
    exact titles; a mapping to gains for graded ones; empty when the vault should
    abstain), optional `domain`, `kinds`, `tags` and a free-text `note`. Each case is
    searched as an agent's engram_search is (the vault's recall settings; nothing
    recorded or written).
    Reports recall@5, recall@10, MRR, AP and nDCG@10, and abstention on no-answer cases.
    With --min or --baseline it is a regression gate: exit 1 when a total falls short.

    \b
    Examples:
      engram eval golden.yaml
      engram eval golden.yaml --min recall@5=0.8 --min mrr=0.7
      engram eval golden.yaml --json > baseline.json
      engram eval golden.yaml --baseline baseline.json --tolerance 0.02
    """
    wanted = _minimums(minimums)
    before = read_baseline(baseline) if baseline is not None else None
    ev = vault.evaluate(golden, limit=limit, minimums=wanted, baseline=before, tolerance=tolerance)
    if as_json:
        emit_json(ev.to_json())
    else:
        _render(ev, show_cases, gated=bool(wanted) or before is not None)
    if ev.failures:
        sys.exit(1)


@click.command()
@click.option("--queries", type=int, default=200, show_default=True, help="How many searches to time (1 to 10,000).")
@click.option("--golden", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Time the queries of this golden set instead of a sample of the vault's own words.")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="Hits asked for per search.")
@json_option
@pass_vault
def bench(vault: Vault, queries: int, golden: Path | None, limit: int, as_json: bool) -> None:
    """Time recall on this vault: search latency over its own words.

    Queries are two to four words from the titles and summaries of a fixed sample of
    items (or a golden set's queries), searched with the vault's recall settings after
    a warm-up pass, with usage not recorded: the latency of a long-lived server such as
    `engram serve`. Writes nothing.

    \b
    Examples:
      engram bench
      engram bench --queries 1000 --json
    """
    b = vault.bench(queries=queries, golden=golden, limit=limit)
    if as_json:
        emit_json(b.to_json())
        return
    click.echo(
        f"{b.queries} searches over {b.items:,} items ({b.source}, limit {b.limit}, vault defaults, "
        "usage not recorded):"
    )
    click.echo(f"  p50 {b.p50:.2f} ms  p95 {b.p95:.2f} ms  p99 {b.p99:.2f} ms  worst {b.worst:.2f} ms")
    click.echo(f"  a refresh that finds nothing to do: {b.refresh_ms:.2f} ms")


COMMANDS = [eval_command, bench]
