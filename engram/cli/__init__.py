"""The ``engram`` command line: a thin adapter over :class:`engram.vault.Vault`.

The root group takes ``--vault`` (or ``ENGRAM_VAULT``) and ``--actor`` (else
``ENGRAM_ACTOR``, git's ``user.name``, the login name: see
:func:`engram.items.state.resolve_actor`) and hands commands a lazily opened vault. Commands live in one module
per concern, each exporting ``COMMANDS``; :data:`COMMAND_MODULES` lists them. The root
group imports a command's module only when that command runs (``get_command``): the
table :data:`engram.cli.catalog.COMMANDS` names the module for each command and the
summary ``engram --help`` lists, so ``--version`` and ``--help`` import no command module
and no layer of the core, and ``engram search`` imports the search commands only. A test
keeps the table equal to what the modules export.

Everything a command prints goes through :mod:`engram.cli.terminal`, which escapes
control characters, so stored text cannot drive the terminal it is printed on.

Errors are rendered here and only here: any :class:`~engram.errors.EngramError` becomes
``error: <message>`` on stderr (or a JSON error document when ``--json`` was given) and
the error's ``exit_code``. Click's own usage errors exit with 2. Anything else is a bug
and is reported as such, with the traceback hidden unless ``ENGRAM_DEBUG=1``.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from engram import __version__
from engram.cli._common import AppContext
from engram.cli.catalog import COMMANDS
from engram.cli.terminal import escaped_output
from engram.errors import EngramError

#: Modules under ``engram.cli`` that contribute commands (each exports ``COMMANDS``).
COMMAND_MODULES = tuple(dict.fromkeys(module for module, _ in COMMANDS.values()))


class EngramGroup(click.Group):
    """A group that renders engram errors, and makes what it prints safe, in one place;
    it imports a command's module when the command is first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS.keys() | self.commands.keys())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self._load(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def _load(self, module: str) -> None:
        for command in importlib.import_module(f"engram.cli.{module}").COMMANDS:
            _add_late_options(command)
            self.add_command(command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, with the summary from the table for a command not loaded yet
        (the same text click derives from the command's help; the test checks it)."""
        rows = [
            (name, self.commands.get(name) or click.Command(name, help=COMMANDS[name][1]))
            for name in self.list_commands(ctx)
        ]
        rows = [(name, command) for name, command in rows if not command.hidden]
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])

    def invoke(self, ctx: click.Context) -> Any:
        with escaped_output():  # stored text never drives the terminal (engram.cli.terminal)
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EngramError as exc:
            app = ctx.find_object(AppContext)
            _render_error(exc, wants_json=bool(app and app.json))
            ctx.exit(exc.exit_code)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`engram list | head`): stop quietly, as Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(141)
        except KeyboardInterrupt:
            click.echo("interrupted; nothing half-written was left behind.", err=True)
            ctx.exit(130)
        except Exception as exc:
            if os.environ.get("ENGRAM_DEBUG") == "1":
                raise
            click.echo(
                f"internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in engram. Re-run with ENGRAM_DEBUG=1 for the traceback "
                "and report it.",
                err=True,
            )
            if os.environ.get("ENGRAM_TRACEBACK_FILE"):
                import traceback  # only on this path: start-up stays cheap

                with open(os.environ["ENGRAM_TRACEBACK_FILE"], "a", encoding="utf-8") as fh:
                    traceback.print_exc(file=fh)
            ctx.exit(70)


def _render_error(exc: EngramError, *, wants_json: bool) -> None:
    if wants_json:
        import json

        payload = {"error": {"code": exc.code, "message": exc.message, "hint": exc.hint}}
        click.echo(json.dumps(payload, ensure_ascii=False), err=True)
    else:
        click.echo(f"error: {exc}", err=True)


@click.group(cls=EngramGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    "vault_path",
    envvar="ENGRAM_VAULT",
    metavar="PATH",
    help="The vault to use (default: the vault at or above the current folder).",
)
@click.option(
    "--actor",
    metavar="NAME",
    help="Who is writing (recorded in createdBy/updatedBy and the audit log); default: "
    "ENGRAM_ACTOR, else `git config user.name` of the vault's repository, else the login name.",
)
# The version is the package's own (pyproject.toml's, a test keeps them equal), not read
# from the installed distribution's metadata: importlib.metadata alone would double the
# cost of `engram --version`.
@click.version_option(version=__version__, prog_name="engram")
@click.pass_context
def cli(ctx: click.Context, vault_path: str | None, actor: str | None) -> None:
    """engram: team memory for AI agents and people, kept as plain Markdown in git.

    \b
    Examples:
      engram init ~/team-memory
      engram add "Use pg_repack, not VACUUM FULL" --domain ops/postgres --kind procedure
      engram list --domain ops
    """
    app = AppContext(vault_path=vault_path, actor=actor)
    ctx.obj = app
    ctx.call_on_close(app.close)


def _late_option(name: str, attr: str, help_text: str) -> click.Option:
    """``--vault``/``--actor`` accepted after the command name too
    (``engram serve --vault PATH``, as MCP client configs are usually written)."""

    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        app = ctx.find_object(AppContext)
        if app is not None and value is not None:
            setattr(app, attr, value)

    return click.Option(
        [name], metavar="PATH" if attr == "vault_path" else "NAME", expose_value=False,
        is_eager=True, callback=remember, help=help_text,
    )


def _add_late_options(command: click.Command) -> None:
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_late_options(sub)
        return
    taken = {opt for param in command.params for opt in param.opts}
    for name, attr, text in (("--vault", "vault_path", "Same as the global --vault."),
                             ("--actor", "actor", "Same as the global --actor.")):
        if name not in taken:  # `engram audit --actor NAME` filters by actor instead
            command.params.append(_late_option(name, attr, text))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="engram")
