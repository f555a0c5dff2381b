"""Helpers for the OpenAI provider tests: tiny SDK backoff, no provider key variables."""

from __future__ import annotations

import pytest

ENV_VARS = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_AD_TOKEN",
    "OPENAI_API_VERSION",
    "OPENAI_BASE_URL",
    "OLLAMA_BASE_URL",
    "OLLAMA_API_KEY",
    "NVIDIA_API_KEY",
    "HF_TOKEN",
)


def prepare(monkeypatch: pytest.MonkeyPatch) -> None:
    """Isolate keys (no provider variables; tests/conftest.py isolates CHAINFORM_HOME) and shrink
    the SDK's backoff.

    The OpenAI SDK's own exponential backoff starts at 0.5 s; tests need it near zero.
    """
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    import openai._base_client as base

    monkeypatch.setattr(base, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(base, "MAX_RETRY_DELAY", 0.005)
