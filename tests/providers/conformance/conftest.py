"""Fixtures of the conformance suite: the adapter rows, and SDK retries without real waiting."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conformance_table import ROWS, Row, sdks, transports

import chainform as cf
from chainform.testing.emulator import Emulator

_PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_VERSION",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_AI_API_KEY",
    "AZURE_AI_ENDPOINT",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "HF_TOKEN",
    "OLLAMA_BASE_URL",
    "VLLM_BASE_URL",
    "HF_BASE_URL",
)


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider variables from the developer's shell; SDK backoff near zero.

    The openai and anthropic SDKs start their backoff at 0.5 s and botocore's standard mode
    sleeps up to a second; a scripted Retry-After still wins where the SDK reads it.
    """
    for var in _PROVIDER_VARS:
        monkeypatch.delenv(var, raising=False)
    import anthropic._base_client
    import openai._base_client
    from botocore.retries import standard

    for base in (openai._base_client, anthropic._base_client):
        monkeypatch.setattr(base, "INITIAL_RETRY_DELAY", 0.001)
        monkeypatch.setattr(base, "MAX_RETRY_DELAY", 0.005)
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.0)


@pytest.fixture(autouse=True)
def _close_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every model a case makes with `Row.model` is closed when the case ends: its SDK client's
    connections close here, not as ResourceWarnings in a later test on the worker."""
    made: list[cf.Model] = []
    build = Row.model

    def model(self: Row, emu: Emulator, **settings: Any) -> cf.Model:
        made.append(built := build(self, emu, **settings))
        return built

    monkeypatch.setattr(Row, "model", model)
    yield
    for built in made:
        built.close()


@pytest.fixture
def emu(emulator: Emulator) -> Emulator:
    """The shared emulator, in 4-character deltas so every stream has several events."""
    emulator.chunk_size = 4
    return emulator


@pytest.fixture(params=ROWS, ids=lambda row: row.id)
def row(request: pytest.FixtureRequest) -> Row:
    """Every adapter row: the profile-dependent cases."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=transports(), ids=lambda row: row.transport)
def transport(request: pytest.FixtureRequest) -> Row:
    """One row per transport (SDK client + error mapping): the fault cases."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=sdks(), ids=lambda row: row.sdk)
def sdk_row(request: pytest.FixtureRequest) -> Row:
    """One row per SDK client: the cases that wait real seconds for the SDK's own socket timeouts."""
    return request.param  # type: ignore[no-any-return]
