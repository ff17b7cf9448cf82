"""CLI commands for sharing a vault through git: sync, the merge driver, hooks, conflicts."""

from __future__ import annotations

from pathlib import Path

import click

from engram.cli._common import emit_json, json_option, pass_vault, remote_json, show_remote
from engram.team import gitstore, hooks
from engram.team.sync import PARTIAL_EXIT
from engram.vault import Vault


@click.command()
@click.option("--remote", metavar="NAME", help="Remote to sync with (default: the branch's upstream, else origin).")
@click.option("--branch", metavar="NAME", help="Remote branch (default: the upstream branch, else the current one).")
@click.option("--no-push", is_flag=True, help="Bring peers' changes in but do not push.")
@click.option("-m", "--message", metavar="TEXT", help="Commit message for local changes.")
@json_option
@pass_vault
def sync(vault: Vault, remote: str | None, branch: str | None, no_push: bool, message: str | None, as_json: bool) -> None:
    """Commit local changes, fetch, merge field by field, push (retrying if a peer was first).

    Never leaves the repository mid-merge. With no remote it only commits; offline, it
    says so and keeps your commits for the next sync. Items where both sides changed the
    same lines are kept with both versions and listed by `engram conflicts`. Files that
    are not whole (still being written, not parsing, editor temp files, symlinks) are
    held back and named; the sync then exits 10 ("partial").

    \b
    Example:
      engram sync
      engram sync --remote origin --no-push
    """
    report = vault.sync(
        remote=remote, branch=branch, push=not no_push, message=message
    )
    if as_json:
        emit_json(report.to_json())
    else:
        for line in report.lines():
            click.echo(line)
    if report.partial:
        raise click.exceptions.Exit(PARTIAL_EXIT)


@click.group()
def remote() -> None:
    """A vault's git remote: where the team's copy lives.

    \b
    Example:
      engram remote add git@github.com:acme/team-memory.git
    """


@remote.command("add")
@click.argument("url")
@click.option("--name", default="origin", show_default=True, help="The remote's name.")
@json_option
@pass_vault
def remote_add(vault: Vault, url: str, name: str, as_json: bool) -> None:
    """Add the remote URL, push the vault to the branch its HEAD names, print the teammate's commands.

    An empty bare repository says `master` where a new vault says `main`; the vault is
    pushed to the remote's branch and tracks it, so a plain `git clone` checks it out.
    A remote that already holds a history this vault does not share is refused: clone
    it instead.
    """
    shared = vault.add_remote(url, name=name)
    if as_json:
        emit_json(remote_json(shared))
    else:
        show_remote(shared)


# --------------------------------------------------------------------------- merge driver


def _driver_json(status: gitstore.DriverStatus) -> dict[str, object]:
    return {
        "installed": status.installed,
        "current": status.current,
        "routed": status.routed,
        "command": status.command,
        "expected": status.expected,
    }


def _show_driver(status: gitstore.DriverStatus, as_json: bool) -> None:
    if as_json:
        emit_json(_driver_json(status))
        return
    if not status.installed:
        click.echo("merge driver: not installed — run `engram merge-driver install`")
    elif not status.current:
        click.echo(f"merge driver: installed but outdated ({status.command}) — run `engram merge-driver install`")
    else:
        click.echo(f"merge driver: installed ({status.command})")
    routed = "yes" if status.routed else "no — add the lines of vault_template/.gitattributes to .gitattributes"
    click.echo(f"items and synapses routed to it by .gitattributes: {routed}")


@click.group("merge-driver")
def merge_driver() -> None:
    """Register engram's merge driver in this clone's git config (git never shares it).

    \b
    Example:
      engram merge-driver install
    """


@merge_driver.command("install")
@json_option
@pass_vault
def driver_install(vault: Vault, as_json: bool) -> None:
    """Register (or update) the driver in .git/config; idempotent."""
    _show_driver(gitstore.install_merge_driver(vault.root), as_json)


@merge_driver.command("uninstall")
@json_option
@pass_vault
def driver_uninstall(vault: Vault, as_json: bool) -> None:
    """Remove the driver's config; git then merges items as plain text."""
    _show_driver(gitstore.uninstall_merge_driver(vault.root), as_json)


@merge_driver.command("status")
@json_option
@pass_vault
def driver_status(vault: Vault, as_json: bool) -> None:
    """Show whether the driver is registered, current, and routed by .gitattributes."""
    _show_driver(gitstore.merge_driver_status(vault.root), as_json)


# --------------------------------------------------------------------------- merge records


@click.group("merge")
def merge() -> None:
    """Read the merge records (.engram/merges.jsonl) of this clone.

    \b
    Example:
      engram merge stats --days 30
    """


@merge.command("stats")
@click.option("--days", type=click.IntRange(min=1), metavar="N", help="Only the last N days.")
@json_option
@pass_vault
def merge_stats(vault: Vault, days: int | None, as_json: bool) -> None:
    """Merges, resolve rate, conflicts kept, and how often each rule ran.

    \b
    Example:
      engram merge stats --days 7 --json
    """
    result = vault.merge_stats(days)
    if as_json:
        emit_json(result.to_json())
        return
    window = f"last {days} day(s)" if days else "all time"
    if not result.merges:
        click.echo(f"no merges recorded ({window})")
        return
    rate = result.resolve_rate or 0.0
    click.echo(
        f"{result.merges} merge(s), {window}: {result.clean} clean, {result.kept} kept a conflict "
        f"({result.conflicts_kept} note(s)), {result.failed} needed a person — resolve rate {rate:.1%}"
    )
    for name, count in sorted(result.by_strategy.items(), key=lambda kv: (-kv[1], kv[0])):
        click.echo(f"  {count:>6}  {name}")


@merge.command("anomalies")
@click.option("--days", type=click.IntRange(min=1), metavar="N", help="Only the last N days.")
@json_option
@pass_vault
def merge_anomalies(vault: Vault, days: int | None, as_json: bool) -> None:
    """Paths that conflict often, sides that did not parse, fallbacks to a text merge.

    \b
    Example:
      engram merge anomalies
    """
    found = vault.merge_anomalies(days)
    if as_json:
        emit_json([a.to_json() for a in found])
        return
    if not found:
        click.echo("no anomalies")
    for a in found:
        click.echo(f"{a.code:<16} {a.count:>4}  {a.path}: {a.detail}")


# --------------------------------------------------------------------------- hooks


def _show_hooks(found: tuple[hooks.HookStatus, ...], as_json: bool) -> None:
    if as_json:
        emit_json({
            st.hook: {"path": str(st.path), "installed": st.installed, "current": st.current,
                      "chained": st.chained, "foreign": st.foreign}
            for st in found
        })
        return
    for st in found:
        if st.installed:
            state = "installed" + ("" if st.current else " (outdated: run `engram hooks install`)")
        elif st.foreign:
            state = f"not installed; a {st.hook} hook of yours is there (install chains it)"
        else:
            state = "not installed"
        click.echo(f"{st.hook} hook: {state} — {st.path}")
        if st.chained:
            click.echo(f"  runs your previous hook first: {Path(st.path).parent / hooks.chained_name(st.hook)}")


@click.group("hooks")
def hooks_group() -> None:
    """Hooks that report problems after `git pull` (and --rebase), and refuse commits carrying secrets.

    \b
    Example:
      engram hooks install
    """


@hooks_group.command("install")
@json_option
@pass_vault
def hooks_install(vault: Vault, as_json: bool) -> None:
    """Install the post-merge, post-rewrite and pre-commit hooks; existing ones are kept and run first."""
    _show_hooks(hooks.install(vault.root, hooks.ALL_HOOKS), as_json)


@hooks_group.command("uninstall")
@json_option
@pass_vault
def hooks_uninstall(vault: Vault, as_json: bool) -> None:
    """Remove engram's hooks and restore the ones they chained, if any."""
    _show_hooks(hooks.uninstall(vault.root, hooks.ALL_HOOKS), as_json)


@hooks_group.command("status")
@json_option
@pass_vault
def hooks_status(vault: Vault, as_json: bool) -> None:
    """Show whether the hooks are installed and what they chain."""
    _show_hooks(hooks.statuses(vault.root, hooks.ALL_HOOKS), as_json)


# --------------------------------------------------------------------------- conflicts


@click.command()
@click.option("--resolve", "resolve_ref", metavar="ITEM", help="Clear ITEM's flag once you have reviewed it.")
@click.option("--force", is_flag=True, help="With --resolve: clear the flag even if conflict blocks remain.")
@json_option
@pass_vault
def conflicts(vault: Vault, resolve_ref: str | None, force: bool, as_json: bool) -> None:
    """List items a merge flagged for review, or clear one's flag with --resolve.

    A flagged item keeps both versions of lines both sides changed in a `> [!conflict]`
    block. Edit the text to what is right, delete the block, then resolve it.

    \b
    Example:
      engram conflicts
      engram conflicts --resolve 01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ
    """
    if resolve_ref is not None:
        item = vault.resolve_conflict(resolve_ref, force=force)
        if as_json:
            emit_json({"id": item.id, "path": item.path, "version": item.version, "resolved": True})
        else:
            click.echo(f"resolved {item.id} ({item.path}), now version {item.version}")
        return
    found = vault.conflicts()
    if as_json:
        emit_json([{"id": f.id, "path": f.path, "title": f.title, "notes": list(f.notes),
                    "callouts": f.callouts} for f in found])
        return
    if not found:
        click.echo("no flagged items")
    for f in found:
        click.echo(f"{f.id}  {f.path}  ({f.callouts} conflict block(s))")
        for note in f.notes:
            click.echo(f"    - {note}")


COMMANDS = [remote, sync, merge_driver, merge, hooks_group, conflicts]
