"""Fixtures every test shares: an isolated CHAINFORM_HOME (always) and a running provider emulator."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainform.testing.emulator import Emulator


def pytest_configure(config: pytest.Config) -> None:
    """Let the Ctrl-C tests' child processes see SIGINT.

    A non-interactive shell starts a background job (`.ci/run &`, `nohup ... &`) with SIGINT ignored,
    and an ignored signal stays ignored across exec: the children would never be interrupted. A
    handled signal is reset to its default at exec, so the children get Python's usual Ctrl-C.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
