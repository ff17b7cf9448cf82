"""CLI commands for trust: the quarantine and the audit log."""

from __future__ import annotations

import click

from engram.cli._common import emit_json, json_option, pass_vault
from engram.items.quarantine import Quarantined
from engram.store.audit import AuditEntry
from engram.vault import Vault


def _quarantined_json(q: Quarantined) -> dict[str, object]:
    return {
        "id": q.item.id,
        "path": q.item.path,
        "title": q.item.title,
        "version": q.item.version,
        "createdBy": q.item.created_by,
        "quarantinedBy": q.quarantined_by,
        "quarantinedAt": q.quarantined_at,
        "reason": q.reason,
        "findings": [
            {"rule": f.rule, "category": f.category, "weight": f.weight, "field": f.field, "line": f.line,
             "excerpt": f.excerpt}
            for f in q.findings
        ],
    }


@click.group("quarantine")
def quarantine_group() -> None:
    """Items the instruction screen holds back from every reader, for a curator to review.

    \b
    Example:
      engram quarantine list
      engram quarantine release 01J8ZQ3K
    """


@quarantine_group.command("list")
@json_option
@pass_vault
def quarantine_list(vault: Vault, as_json: bool) -> None:
    """List quarantined items with what the screen found in each (most recent first)."""
    found = vault.quarantined()
    if as_json:
        emit_json([_quarantined_json(q) for q in found])
        return
    if not found:
        click.echo("no quarantined items")
    for q in found:
        click.echo(f"{q.item.id}  {q.item.path}  (by {q.item.created_by or 'unknown'})")
        click.echo(f"    {q.reason}")


@quarantine_group.command("release")
@click.argument("ref")
@click.option("--status", default=None, help="The status to release it to (default: active; an item that is not quarantined keeps its own).")
@click.option("--version", "expected", type=int, default=None, help="The version you reviewed; refused if it moved on.")
@json_option
@pass_vault
def quarantine_release(vault: Vault, ref: str, status: str | None, expected: int | None, as_json: bool) -> None:
    """Release a quarantined item after review (curators only).

    Also vouches for an active item whose text the screen flags (a promotion refused
    it as instruction-shaped and a curator judged it a false positive).

    \b
    Example:
      engram quarantine release 01J8ZQ3K --version 1
    """
    item = vault.release(ref, status=status, expected_version=expected)
    if as_json:
        emit_json({"id": item.id, "path": item.path, "status": item.status, "version": item.version})
    else:
        click.echo(f"released {item.id} ({item.path}) as {item.status}, now version {item.version}")


def _entry_line(e: AuditEntry) -> str:
    versions = f" v{e.old_version}→v{e.new_version}" if e.old_version and e.new_version else (
        f" v{e.new_version}" if e.new_version else ""
    )
    head = f"{e.at}  {e.actor or 'unknown':<16} {e.action:<12} {e.id}{versions}"
    if e.refused:
        head += f"  REFUSED [{e.rule}]"
    elif e.rule:
        head += f"  [{e.rule}]"
    return head + (f"\n    {e.reason}" if e.reason else "")


@click.command("audit")
@click.option("--actor", "who", metavar="NAME", help="Only writes by this actor.")
@click.option("--item", metavar="REF", help="Only entries about this item (an id, or a ref of an existing item).")
@click.option("--since", metavar="WHEN", help="Only entries at or after this time: ISO 8601, or an age such as 7d, 24h.")
@click.option("--refused", is_flag=True, help="Only writes that were refused (role, secret, screen, promotion, stale version).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the newest N entries.")
@json_option
@pass_vault
def audit(
    vault: Vault, who: str | None, item: str | None, since: str | None, refused: bool, limit: int | None,
    as_json: bool,
) -> None:
    """Query the audit log: every write and every refused write, with the rule that fired.

    \b
    Examples:
      engram audit --refused --since 7d
      engram audit --actor claude@laptop --json
    """
    entries = vault.audit(actor=who, item=item, since=since, refused=refused, limit=limit)
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    if not entries:
        click.echo("no audit entries match")
    for e in entries:
        click.echo(_entry_line(e))


COMMANDS = [quarantine_group, audit]
