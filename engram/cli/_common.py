"""Shared pieces of the CLI: the vault in the click context, ``--json``, and output.

Commands receive an opened :class:`~engram.vault.Vault` through :func:`pass_vault`; the
vault is opened lazily so ``engram init`` and ``engram demo`` work outside any vault.
Output goes through :func:`emit`: human text by default, one JSON document with
``--json``. Errors are not handled here; the root group renders them (see
``engram.cli.__init__``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:  # imported where used: `engram --help` must not load the vault's layers
    from engram.store.model import Engram, Synapse
    from engram.team.setup import RemoteSetup
    from engram.vault import Vault

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class AppContext:
    vault_path: str | None = None
    actor: str | None = None
    json: bool = False
    _vault: Vault | None = field(default=None, repr=False)

    def vault(self) -> Vault:
        if self._vault is None:
            from engram.team.gitstore import ensure_merge_driver
            from engram.vault import Vault

            self._vault = Vault.open(self.vault_path, actor=self.actor)
            if ensure_merge_driver(self._vault.root):  # a fresh `git clone` works at once
                click.echo(
                    "registered engram's merge driver in this clone's .git/config "
                    "(git never copies it; `engram merge-driver status` shows it)",
                    err=True,
                )
        return self._vault

    def close(self) -> None:
        if self._vault is not None:
            self._vault.close()


def pass_vault(func: F) -> F:
    """Decorator: call the command with the opened vault as its first argument."""

    @click.pass_obj
    @functools.wraps(func)
    def wrapper(app: AppContext, *args: Any, **kwargs: Any) -> Any:
        return func(app.vault(), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def request_timeout_option(help: str) -> Callable[[F], F]:
    """``--request-timeout SECONDS`` of the two HTTP servers (``serve --http``, ``viewer``);
    the default is :data:`engram.httpserve.REQUEST_TIMEOUT`'s 15 s."""
    return click.option(
        "--request-timeout", default=15.0, show_default=True,
        type=click.FloatRange(min=0, min_open=True), metavar="SECONDS", help=help,
    )


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    app = ctx.find_object(AppContext)
    if app is not None and value:
        app.json = True  # errors are then rendered as JSON too
    return value


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    is_eager=True,
    callback=_remember_json,
    help="Print one JSON document (errors too, on stderr).",
)


def emit_json(data: Any) -> None:
    import json  # imported here: the root group and `--help` never need it

    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def item_json(item: Engram, *, with_content: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {"path": item.path, **item.to_meta()}
    if with_content:
        data["content"] = item.content
    return data


def synapse_json(syn: Synapse, path: str | None = None) -> dict[str, Any]:
    data = syn.to_meta()
    data["path"] = path or syn.path
    return data


def item_line(item: Engram) -> str:
    """``ID  kind  Title  (path)``: the title is what a person recognises, the path where
    to open it."""
    flag = "" if item.status == "active" else f" [{item.status}]"
    return f"{item.id}  {item.kind:<11} {item.title}  ({item.path}){flag}"


def remote_json(shared: RemoteSetup) -> dict[str, object]:
    return {"name": shared.name, "url": shared.url, "branch": shared.branch, "pushed": shared.pushed,
            "teammate": list(shared.teammate)}


def show_remote(shared: RemoteSetup) -> None:
    if shared.pushed:
        click.echo(f"pushed to {shared.name}/{shared.branch} ({shared.url})")
    else:
        click.echo(f"added {shared.name} ({shared.url}), branch {shared.branch}; not pushed yet: run `engram sync`")
    click.echo("a teammate joins with:")
    for line in shared.teammate:
        click.echo(f"  {line}")


def read_text_arg(value: str | None, *, stdin_when_missing: bool) -> str | None:
    """``-`` or an absent value with piped stdin means: read standard input."""
    if value == "-" or (value is None and stdin_when_missing and not sys.stdin.isatty()):
        return sys.stdin.read()
    return value


def parse_assignments(pairs: Sequence[str]) -> Mapping[str, Any]:
    """``key=value`` pairs; values parse as YAML scalars (``3`` → 3, ``null`` removes)."""
    from mergedriver import codec

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not key=value.", param_hint="--set")
        try:
            out[key.strip()] = codec.load_yaml(raw) if raw.strip() else ""
        except codec.CodecError:
            out[key.strip()] = raw
    return out


def resolve_path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None
