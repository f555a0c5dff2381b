"""Fixtures every test shares: an isolated CHAINFORM_HOME (always) and a running provider emulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chainform.testing.emulator import Emulator


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CHAINFORM_HOME per test: the log, keys and schemas never touch the user's own.

    Also unsets the variables that would pick a model or turn on tracebacks behind a test's back.
    """
    path = tmp_path / "home"
    monkeypatch.setenv("CHAINFORM_HOME", str(path))
    for var in ("CHAINFORM_MODEL", "CHAINFORM_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    return path


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """The loopback provider emulator (every wire format), stopped after the test."""
    with Emulator() as server:
        yield server
