"""The embedded model (`local/…`, `onnx/…`): an llguidance grammar enforces schemas and tool calls,
so it claims native schemas and tools together."""

from __future__ import annotations

from chainform.clients.profiles import CAPABLE
from chainform.types import ModelProfile

CONTEXT_WINDOW = 8192


def local_profile(name: str, provider: str = "local", context_window: int = CONTEXT_WINDOW) -> ModelProfile:
    """The profile of a model run on this machine, with its own context window."""
    return CAPABLE.replace(
        name=name,
        provider=provider,
        schema_dialect="llguidance",
        context_window=context_window,
        max_output_tokens=context_window,
    )
