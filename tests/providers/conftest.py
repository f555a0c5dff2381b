"""Fixtures the adapter tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

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
