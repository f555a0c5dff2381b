"""Fixtures the adapter tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai_fixtures
import pytest
from adapter_fixtures import OPEN

from chainform.testing.emulator import Emulator


@pytest.fixture
async def emu(emulator: Emulator) -> AsyncIterator[Emulator]:
    """The emulator, streaming in 4-character pieces (so every adapter meets split events); the
    adapters a test made through `adapter_fixtures.opened` are closed in the test's own loop."""
    emulator.chunk_size = 4
    yield emulator
    while OPEN:
        await OPEN.pop().aclose()


@pytest.fixture
def openai_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI tests' isolation (`pytestmark = pytest.mark.usefixtures("openai_isolated")`): no
    provider key variables, and the SDK's backoff near zero (openai_fixtures.prepare)."""
    openai_fixtures.prepare(monkeypatch)
