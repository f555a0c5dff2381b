"""CLI test fixtures: an isolated CHAINFORM_HOME and a scripted model behind the CLI's resolver."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner, Result

from chainform.cli import cli


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("CHAINFORM_HOME", str(path))
    monkeypatch.delenv("CHAINFORM_MODEL", raising=False)
    monkeypatch.delenv("CHAINFORM_DEBUG", raising=False)
    return path


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Scripted:
    return Scripted(monkeypatch)


@pytest.fixture
def run() -> Callable[..., Result]:
    def invoke(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke
