"""`chainform WORD` alone, WORD no command: refused with the nearest names, nothing sent or logged;
a one-word prompt is still `chainform prompt WORD` or `chainform -- WORD`."""

from __future__ import annotations

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner

from chainform.cli import cli
from chainform.store import Store


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), input="")


@pytest.mark.parametrize(
    ("word", "near"), [("logz", "logs"), ("schema", "schemas"), ("tool", "tools"), ("mdoels", "models")]
)
def test_a_bare_unknown_word_is_no_prompt(scripted: Scripted, word: str, near: str) -> None:
    client = scripted.script(["an answer"])
    result = invoke(word)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"Error: no such command {word!r}")
    assert f"nearest: {near}" in result.stderr and f"chainform prompt {word}" in result.stderr
    assert client.requests == [] and Store().recent(1) == []


def test_a_word_near_no_command_lists_the_commands(scripted: Scripted) -> None:
    scripted.script([])
    result = invoke("zzzz")
    assert result.exit_code == 2 and "logs" in result.stderr and "map" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["prompt", "hello"],
        ["--", "hello"],
        ["hello", "-m", "openai/gpt-4.1-mini"],
        ["hello there"],
        ["Hello?"],
    ],
)
def test_one_word_prompts_are_still_possible(scripted: Scripted, args: list[str]) -> None:
    client = scripted.script(["an answer"])
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout == "an answer\n" and len(client.requests) == 1


def test_commands_still_run(scripted: Scripted) -> None:
    assert invoke("logs").exit_code == 0
    assert invoke("keys", "path").exit_code == 0
