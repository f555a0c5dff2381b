"""Fixtures of the recorded-traffic tests: one emulator for a module's hundreds of replays, and
one SSL context for the SDK clients they make."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest

from chainform.testing.emulator import Emulator

_SSL_CONTEXT = ssl.create_default_context()


@pytest.fixture(autouse=True)
def one_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each SDK client builds an SSL context, loading the CA bundle (0.1 s); the replay's 600
    clients speak plain HTTP to the emulator, so they share one."""
    monkeypatch.setattr(ssl, "create_default_context", lambda *args, **kwargs: _SSL_CONTEXT)


@pytest.fixture(scope="module")
def replayer() -> Iterator[Emulator]:
    """One emulator for a module's 450 tests (stopping one costs 50 ms); each test's answers
    are its own script items, and what went wrong on the server side is cleared per test."""
    with Emulator() as server:
        yield server


@pytest.fixture
def emulator(replayer: Emulator) -> Iterator[Emulator]:
    replayer.errors.clear()
    yield replayer
    assert replayer.remaining == 0, "a recorded answer was not asked for"
