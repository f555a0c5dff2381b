"""CLI test fixtures: a scripted model behind the CLI's resolver (CHAINFORM_HOME: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner, Result

from chainform.cli import cli


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Scripted:
    return Scripted(monkeypatch)


@pytest.fixture
def run() -> Callable[..., Result]:
    def invoke(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke
