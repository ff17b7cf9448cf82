"""CLI commands for learning and lifecycle: learn, feedback, lineage, verification,
staleness, maintenance, proposals, forgetting, skills. Thin: parse, call the vault, print."""

from __future__ import annotations

import shlex
import subprocess
import sys
from typing import Any

import click

from engram.cli._common import emit_json, json_option, pass_vault
from engram.errors import InvalidInput
from engram.lifecycle.judging import ANSWER_SHAPE, Judgment, Question, parse, prompt
from engram.lifecycle.proposals import PROPOSAL_KINDS
from engram.lifecycle.resolve import RESOLUTIONS
from engram.store.model import ENGRAM_KINDS
from engram.store.paths import split_domain
from engram.vault import Vault


@click.command()
@click.argument("content")
@click.option("--situation", "-s", metavar="TEXT", help="When the lesson holds, e.g. 'deploying to staging'.")
@click.option("--title", metavar="TEXT", help="Title for a new item (default: the first sentence).")
@click.option("--domain", "-d", metavar="A/B", help="Domain for a new item (default: the related item's, else lessons).")
@click.option("--kind", "-k", type=click.Choice(ENGRAM_KINDS), help="Kind for a new item (default: the related item's, else fact).")
@click.option("--dry-run", is_flag=True, help="Only classify; write nothing.")
@click.option(
    "--judge", "judge_command", metavar="COMMAND", envvar="ENGRAM_JUDGE",
    help="A program that judges what engram is unsure of: it reads the question on standard input and"
    " prints a verdict (JSON); e.g. an `llm` CLI. Also ENGRAM_JUDGE.",
)
@json_option
@pass_vault
def learn(vault: Vault, content: str, situation: str | None, title: str | None, domain: str | None,
          kind: str | None, dry_run: bool, judge_command: str | None, as_json: bool) -> None:
    """Learn a lesson: classify it against what the vault holds, then reinforce, extend,
    supersede, dispute, link or insert — and say why.

    With --judge, a verdict engram is unsure of (a supersession, or a lesson close in
    meaning to an item the rules call different) is put to the judge command, and its
    verdict is applied if the item it names is unchanged (docs/lifecycle.md).

    \b
    Examples:
      engram learn "The staging database listens on port 6432." -s "connecting from CI"
      engram learn "Use pg_repack, not VACUUM FULL" --dry-run
      engram learn "Pages are acked within 5 minutes" --judge "llm -m gpt-4o-mini"
    """
    where = split_domain(domain) if domain else None
    result = vault.learn(content, situation, title=title, domain=where, kind=kind, dry_run=dry_run,
                         judge=judge_command is not None)
    if result.question is not None and judge_command is not None:
        verdict = _ask_judge(judge_command, result.question)
        result = vault.learn(content, situation, title=title, domain=where, kind=kind, dry_run=dry_run,
                             judgment=verdict)
    if as_json:
        emit_json(result.to_json())
        return
    # A held-back lesson's message opens with "Quarantined:" (the same words as add's and MCP's).
    click.echo(result.message if result.action == "quarantined" else f"{result.action}: {result.message}")


def _ask_judge(command: str, question: Question) -> Judgment:
    """The judge command's verdict on ``question`` (the prompt on its standard input)."""
    hint = f"It must print {ANSWER_SHAPE}; or run without --judge."
    try:
        argv = shlex.split(command)
        done = subprocess.run(argv, input=prompt(question), capture_output=True, text=True, timeout=JUDGE_SECONDS, check=False)
    except ValueError as exc:
        raise InvalidInput(f"--judge {command!r} is not a command line: {exc}.", field="judge", hint=hint) from exc
    except OSError as exc:
        raise InvalidInput(f"the judge command {command!r} could not run: {exc.strerror or exc}.", field="judge",
                           hint="Check that it is installed and on PATH.") from exc
    except subprocess.TimeoutExpired as exc:
        raise InvalidInput(f"the judge command {command!r} gave no verdict within {JUDGE_SECONDS} s; nothing was written.",
                           field="judge", hint=hint) from exc
    if done.returncode != 0:
        raise InvalidInput(
            f"the judge command {command!r} failed (exit {done.returncode}): {done.stderr.strip()[:300]}; nothing was written.",
            field="judge", hint=hint,
        )
    return parse(done.stdout, question)


#: How long a judge command may think.
JUDGE_SECONDS = 120


@click.command()
@click.argument("ref")
@click.option("--helped", "outcome", flag_value="helped", help="It helped (reinforce).")
@click.option("--failed", "outcome", flag_value="failed", help="It was used and did not help.")
@click.option("--confidence", type=float, default=1.0, show_default=True, help="How sure, 0..1 (scales the change).")
@click.option("--note", "-n", metavar="TEXT", help="Why, in a sentence.")
@json_option
@pass_vault
def feedback(vault: Vault, ref: str, outcome: str | None, confidence: float, note: str | None, as_json: bool) -> None:
    """Say whether an item helped: importance moves (bounded, scaled by --confidence),
    strong neighbours share a little, repeated failure proposes archiving it. Applied to
    the files at the next `engram flush` or `engram sync`.

    \b
    Examples:
      engram feedback 01J9K2V6 --helped --note "the fix worked"
      engram feedback 01J9K2V6 --failed --confidence 0.5
    """
    if outcome is None:
        raise click.UsageError("say --helped or --failed.")
    result = vault.feedback(ref, outcome, confidence=confidence, note=note)
    if as_json:
        emit_json(result.to_json())
        return
    click.echo(result.message)


@click.command()
@click.argument("ref")
@json_option
@pass_vault
def lineage(vault: Vault, ref: str, as_json: bool) -> None:
    """Where an item came from and what came of it: supersedes, consolidates and
    derives_from chains, both directions.

    \b
    Example:
      engram lineage 01J9K2V6
    """
    found = vault.lineage(ref)
    if as_json:
        emit_json(found.to_json())
        return
    click.echo(f"{found.id}  {found.title} [{found.status}]" + (f" → current: {found.current}" if found.current != found.id else ""))
    for label, steps in (("ancestors", found.ancestors), ("descendants", found.descendants)):
        for step in steps:
            click.echo(f"  {label[:-1]:<10} {'  ' * (step.depth - 1)}{step.via:<13} {step.id}  {step.title} [{step.status}]")


@click.command()
@click.argument("ref")
@click.option("--note", "-n", metavar="TEXT", help="What you checked.")
@click.option("--valid-while", metavar="TEXT", help="The premise it holds under.")
@click.option("--evidence", "-e", metavar="TEXT", help="Raise the verification one step on this evidence instead.")
@click.option("--refute", is_flag=True, help="The --evidence shows it false: mark it refuted (the item is kept).")
@json_option
@pass_vault
def verify(vault: Vault, ref: str, note: str | None, valid_while: str | None, evidence: str | None, refute: bool,
           as_json: bool) -> None:
    """Record that an item still holds (lastVerifiedAt, → verified), or with --evidence
    raise it one step (unverified → plausible → probable → verified).

    With --refute --evidence it records that the item was found false (→ refuted; only
    a new check, this command without --evidence, lifts it again).

    \b
    Examples:
      engram verify 01J9K2V6 --note "checked the crontab" --valid-while "on the shared scheduler"
      engram verify 01J9K2V6 --evidence "three deploys went fine"
      engram verify 01J9K2V6 --refute --evidence "the bucket deletes logs after 7 days"
    """
    if refute:
        if evidence is None:
            raise click.UsageError("--refute needs --evidence: say what shows it is false.")
        item = vault.refute(ref, evidence)
    elif evidence is not None:
        item = vault.upgrade_verification(ref, evidence)
    else:
        item = vault.verify_entry(ref, note, valid_while=valid_while)
    if as_json:
        emit_json({"id": item.id, "path": item.path, "version": item.version, "status": item.status,
                   "verificationStatus": item.verification_status, "lastVerifiedAt": item.last_verified_at})
        return
    click.echo(f"{item.id} is {item.verification_status} (v{item.version})")


@click.command()
@click.option("--all", "include_fresh", is_flag=True, help="List every shared item, not only stale ones.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=None, help="At most this many.")
@json_option
@pass_vault
def stale(vault: Vault, include_fresh: bool, limit: int | None, as_json: bool) -> None:
    """Shared items past their freshness half-life, oldest verified first, with their
    premises (validWhile). Reports only; nothing is downgraded.

    \b
    Example:
      engram stale --limit 20
    """
    report = vault.stale_report(include_fresh=include_fresh, limit=limit)
    if as_json:
        emit_json(report.to_json())
        return
    for e in report.entries:
        premise = f"  while: {e.premises}" if e.premises else ""
        click.echo(f"{e.id}  {e.freshness:.2f}  {e.age_days:>6.0f}d/{e.half_life_days:.0f}d  {e.verification_status:<10} {e.path}{premise}")
    click.echo(f"{len(report.entries)} of {report.checked} shared item(s) below freshness {report.threshold:g}"
               if not include_fresh else f"{report.checked} shared item(s)")


@click.command()
@click.argument("old")
@click.argument("new")
@click.option("--keep", "resolution", type=click.Choice([r.removeprefix("keep_") if r.startswith("keep_") else r for r in RESOLUTIONS]),
              required=True, help="new, old, merge or archive.")
@click.option("--note", "-n", metavar="TEXT", help="Why.")
@json_option
@pass_vault
def resolve(vault: Vault, old: str, new: str, resolution: str, note: str | None, as_json: bool) -> None:
    """Settle two items that contradict each other: --keep new (supersede the old),
    old (freeze the new), merge (fold the new into the old) or archive (freeze both).

    \b
    Example:
      engram resolve 01J9K2V6 01K0AB12 --keep new
    """
    full = f"keep_{resolution}" if resolution in ("new", "old") else resolution
    done = vault.contradiction_resolve(old, new, full, note=note)
    if as_json:
        emit_json(done.to_json())
        return
    click.echo(f"{full}: kept {', '.join(i.id for i in done.kept) or 'none'}; retired {', '.join(i.id for i in done.retired) or 'none'}")
    if done.disputed:
        click.echo(f"{len(done.disputed)} claim(s) in dispute kept in a conflict block in {done.kept[0].path},"
                   f" flagged for review: edit it, then `engram conflicts --resolve {done.kept[0].id}`.", err=True)


@click.command()
@click.argument("stage", type=click.Choice(["light", "deep", "rem"]), default="light")
@json_option
@pass_vault
def maintain(vault: Vault, stage: str, as_json: bool) -> None:
    """Run a maintenance stage: light folds usage and feedback; deep also finds
    duplicates and clusters; rem also proposes patterns, links, retypes, verification
    upgrades, stale marks and archives. Everything becomes a proposal; nothing is rewritten.

    \b
    Example:
      engram maintain rem
    """
    report = vault.maintain(stage)
    if as_json:
        emit_json(report.to_json())
        return
    if report.folded:
        f = report.folded
        click.echo(f"folded {f.usage.retrievals} retrieval(s) and {f.feedback} feedback entr(ies) into {f.usage.items + f.items} item(s)")
    if stage != "light":
        click.echo(f"{len(report.duplicates)} duplicate group(s), {report.components} component(s), {len(report.clusters)} cluster(s)")
    click.echo(f"{len(report.proposed)} proposal(s) written or refreshed — `engram proposals` lists them")


def _proposal_line(p: Any) -> str:
    return f"{p.id}  {p.kind:<8} {p.status:<9} {p.score:.2f}  {p.title}"


@click.command()
@click.option("--status", type=click.Choice(["open", "accepted", "dismissed"]), default="open", show_default=True)
@click.option("--all", "every", is_flag=True, help="Every status.")
@click.option("--kind", type=click.Choice(PROPOSAL_KINDS), help="Only this kind.")
@json_option
@pass_vault
def proposals(vault: Vault, status: str, every: bool, kind: str | None, as_json: bool) -> None:
    """List proposals (what maintenance or a disputed lesson would change), highest score first.

    \b
    Example:
      engram proposals --kind archive
    """
    found = vault.proposals(status=None if every else status, kind=kind)
    if as_json:
        emit_json({"proposals": [p.to_json() for p in found]})
        return
    for p in found:
        click.echo(_proposal_line(p))
        click.echo(f"    {p.reason}")
    if not found:
        click.echo("no proposals", err=True)


@click.command()
@click.argument("proposal")
@click.option("--note", "-n", metavar="TEXT", help="Why.")
@click.option("--resolution", type=click.Choice(RESOLUTIONS), help="For a dispute: how to settle it (default keep_new).")
@json_option
@pass_vault
def accept(vault: Vault, proposal: str, note: str | None, resolution: str | None, as_json: bool) -> None:
    """Carry out a proposal and record it accepted (the proposal file says who and when).

    \b
    Example:
      engram accept prop-3f9a0c1d
    """
    done = vault.accept(proposal, note=note, resolution=resolution)
    if as_json:
        emit_json(done.to_json())
        return
    click.echo(_proposal_line(done))


@click.command()
@click.argument("proposal")
@click.option("--note", "-n", metavar="TEXT", help="Why.")
@json_option
@pass_vault
def dismiss(vault: Vault, proposal: str, note: str | None, as_json: bool) -> None:
    """Record a proposal dismissed; nothing else changes, and it is not proposed again.

    \b
    Example:
      engram dismiss prop-3f9a0c1d --note "still needed for the audit"
    """
    done = vault.dismiss(proposal, note=note)
    if as_json:
        emit_json(done.to_json())
        return
    click.echo(_proposal_line(done))


def _status_command(name: str, doc: str) -> click.Command:
    @click.command(name=name, help=doc)
    @click.argument("ref")
    @click.option("--version", "expected_version", type=int, help="The version you read; refused if it moved on.")
    @json_option
    @pass_vault
    def command(vault: Vault, ref: str, expected_version: int | None, as_json: bool, yes: bool = False) -> None:
        if name == "purge" and not yes:
            if not sys.stdin.isatty():
                raise click.UsageError("purge deletes the item for good: pass --yes.")
            click.confirm(f"Purge {ref} for good?", abort=True)
        if name == "archive":
            item = vault.archive(ref, expected_version=expected_version)
        elif name == "forget":
            item = vault.forget(ref, expected_version=expected_version)
        elif name == "restore":
            if not vault.in_trash(ref):
                item = vault.restore(ref, expected_version=expected_version)
            else:  # deleted or purged: from the trash
                done = vault.restore_deleted(ref)
                if as_json:
                    emit_json({"id": done.id, "path": done.path, "status": done.status, "from": "trash",
                               "synapses": list(done.synapses), "left": list(done.left), "note": done.note})
                    return
                click.echo(f"{done.id} restored from the trash ({done.path}, {len(done.synapses)} synapse(s)),"
                           f" {done.status}")
                if done.note:
                    click.echo(f"  {done.note}", err=True)
                for sid in done.left:
                    click.echo(f"  {sid} stays in the trash: its other end is not in the vault", err=True)
                return
        else:
            item = vault.purge(ref, expected_version=expected_version)
        if as_json:
            emit_json({"id": item.id, "path": item.path, "status": item.status, "version": item.version})
            return
        verb = {"archive": "frozen", "forget": "forgotten", "restore": "restored", "purge": "purged"}[name]
        click.echo(f"{item.id} {verb} ({item.path})")

    if name == "purge":
        command.params.append(click.Option(["--yes", "-y"], is_flag=True, help="Do not ask."))
    return command


archive = _status_command("archive", "Freeze an item: out of default recall and listings, kept as it is; `engram restore` undoes it.\n\n\b\nExample:\n  engram archive 01J9K2V6")
forget = _status_command("forget", "Move an item to the team's trash (status forgotten, hidden, restorable until purged).\n\n\b\nExample:\n  engram forget 01J9K2V6")
restore = _status_command("restore", "Bring an item back: a frozen or forgotten one to active, or a deleted (or purged) one from .engram/trash/ with its synapses.\n\n\b\nExample:\n  engram restore 01J9K2V6")
purge = _status_command("purge", "Delete a forgotten item for good (to .engram/trash/ on this machine; git history keeps it). Asks first; --yes skips.\n\n\b\nExample:\n  engram purge 01J9K2V6 --yes")


@click.command()
@click.argument("task", required=False)
@click.option("--domain", "-d", metavar="A/B", help="Only skills under this domain (listing).")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@json_option
@pass_vault
def skills(vault: Vault, task: str | None, domain: str | None, limit: int, as_json: bool) -> None:
    """List skills by success rate, or with TASK the skills for that task (relevance ×
    success rate), with their steps.

    \b
    Examples:
      engram skills
      engram skills "rebuild a bloated table"
    """
    found = vault.find_skill(task, limit=limit) if task else vault.skills(domain=domain, limit=limit)
    if as_json:
        emit_json({"skills": [s.to_json() for s in found]})
        return
    for s in found:
        click.echo(f"{s.id}  {s.success_rate:.0%} of {s.successes + s.failures} use(s)  {s.title}")
        for i, step in enumerate(s.steps, 1):
            click.echo(f"    {i}. {step}")


@click.command(name="add-skill")
@click.argument("title")
@click.option("--step", "steps", multiple=True, metavar="TEXT", help="A step, in order ('skill:ID' inlines a skill there); repeat.")
@click.option("--component", "components", multiple=True, metavar="ID", help="A skill it is made of, in order; repeat.")
@click.option("--precondition", "preconditions", multiple=True, metavar="TEXT", help="What must hold first; repeat.")
@click.option("--domain", "-d", default="skills", show_default=True, metavar="A/B")
@click.option("--body", "-b", default="", metavar="TEXT", help="Explanation (default: the numbered steps).")
@json_option
@pass_vault
def add_skill(vault: Vault, title: str, steps: tuple[str, ...], components: tuple[str, ...],
              preconditions: tuple[str, ...], domain: str, body: str, as_json: bool) -> None:
    """Record a skill: a procedure with ordered steps and preconditions.

    It may be made of other skills (--component, in order; their steps come first
    unless a step 'skill:ID' places one).

    \b
    Examples:
      engram add-skill "Rebuild a bloated table online" --step "check free disk" --step "run pg_repack"
      engram add-skill "Nightly table care" --component 01J9K2V6 --step "post in #ops"
    """
    if not steps and not components:
        raise click.UsageError("a skill needs at least one step or a component: --step TEXT or --component ID.")
    made = vault.create_skill(title, steps, content=body, preconditions=preconditions, components=components,
                              domain=split_domain(domain))
    if as_json:
        emit_json({"outcome": made.outcome, "id": made.id, "path": made.item.path})
        return
    click.echo(made.id)


@click.command(name="invoke-skill")
@click.argument("ref")
@click.option("--outcome", type=click.Choice(["success", "failure"]), default=None,
              help="How it went, once you know (feeds the success rate).")
@click.option("--note", "-n", metavar="TEXT", help="What happened.")
@json_option
@pass_vault
def invoke_skill(vault: Vault, ref: str, outcome: str | None, note: str | None, as_json: bool) -> None:
    """Invoke a skill: its steps, with its components' steps inlined.

    Records the invocation, and with --outcome how it went (the success rate).

    \b
    Examples:
      engram invoke-skill 01J9K2V6
      engram invoke-skill 01J9K2V6 --outcome success --note "took four minutes"
    """
    run = vault.invoke_skill(ref, outcome=outcome, note=note)
    if as_json:
        emit_json(run.to_json())
        return
    s = run.skill
    click.echo(f"{s.id}  {s.success_rate:.0%} of {s.successes + s.failures} use(s)  {s.title}")
    for i, step in enumerate(run.steps, 1):
        click.echo(f"    {i}. {step.text}" + (f"  ({step.skill})" if step.skill != s.id else ""))


COMMANDS = [learn, feedback, lineage, verify, stale, resolve, maintain, proposals, accept, dismiss,
            archive, forget, restore, purge, skills, add_skill, invoke_skill]
