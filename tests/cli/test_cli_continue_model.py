"""`-c` / `--cid` go on with the conversation's own model and model options, unless `-m` is given."""

from __future__ import annotations

from cli_helpers import Scripted
from click.testing import CliRunner, Result

from chainform.cli import cli
from chainform.store import Store


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, ["prompt", *args], input="", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_continue_keeps_the_model_and_options(scripted: Scripted, monkeypatch) -> None:
    monkeypatch.setenv("CHAINFORM_MODEL", "local")  # the default it must not fall back to
    client = scripted.script(["one", "two", "three", "four"])
    invoke("start", "-m", "openai/gpt-4.1-mini", "-o", "temperature", "0.3", "-o", "max_tokens", "50")
    invoke("go on", "-c")
    assert scripted.asked[-1][0] == "openai/gpt-4.1-mini"
    options = client.requests[-1][1]
    assert (options.temperature, options.max_output_tokens) == (0.3, 50)

    invoke("and more", "-c", "-o", "temperature", "0.9")  # -o given now wins, the rest is kept
    options = client.requests[-1][1]
    assert (scripted.asked[-1][0], options.temperature, options.max_output_tokens) == (
        "openai/gpt-4.1-mini",
        0.9,
        50,
    )

    invoke("elsewhere", "-c", "-m", "anthropic/claude-haiku-4-5")  # -m: that model, no logged options
    options = client.requests[-1][1]
    assert scripted.asked[-1][0] == "anthropic/claude-haiku-4-5"
    assert (options.temperature, options.max_output_tokens) == (None, None)
    assert len({row.conversation_id for row in Store().recent(None)}) == 1


def test_cid_keeps_the_model_of_that_conversation(scripted: Scripted) -> None:
    scripted.script(["a", "b", "c"])
    invoke("first", "-m", "anthropic/claude-haiku-4-5")
    cid = Store().recent(1)[0].conversation_id
    invoke("second", "-m", "openai/gpt-4.1-mini")
    invoke("back to the first", "--cid", cid)
    assert scripted.asked[-1][0] == "anthropic/claude-haiku-4-5"
