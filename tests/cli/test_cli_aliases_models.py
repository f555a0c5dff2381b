"""llm's habits for naming models and keys: `aliases set/list/remove`, `keys get`, `models list`
with `--tools`/`--schemas` and `models options MODEL`."""

from __future__ import annotations

import json

import pytest
from cli_helpers import Scripted

from chainform.clients.registry import resolve_name

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_an_alias_is_saved_used_listed_and_removed(run, scripted: Scripted, home) -> None:
    assert run("aliases", "set", "fast", "4o-mini").exit_code == 0
    assert resolve_name("fast") == ("openai", "gpt-4o-mini")  # the library honours it too
    assert json.loads(run("aliases", "list", "--json").stdout) == {"fast": "4o-mini"}
    assert run("aliases").stdout.split() == ["fast", ":", "4o-mini"]
    listed = json.loads(run("models", "list", "--json").stdout)
    assert "fast" in next(e for e in listed if e["name"] == "openai/gpt-4o-mini")["aliases"]
    assert (home / "aliases.json").stat().st_mode & 0o077 == 0
    assert run("aliases", "set", "mine", "fast").exit_code == 0  # an alias of an alias
    assert resolve_name("mine") == ("openai", "gpt-4o-mini")
    scripted.script(["hi"])
    assert run("hello", "-m", "fast").exit_code == 0
    assert scripted.asked[-1][0] == "fast"
    assert run("aliases", "remove", "fast").exit_code == 0
    assert "fast" not in json.loads(run("aliases", "list", "--json").stdout)
    gone = run("aliases", "remove", "fast")
    assert gone.exit_code == 2 and gone.stderr.count("Error:") == 1 and "no alias 'fast'" in gone.stderr


@pytest.mark.parametrize(
    ("alias", "why"),
    [
        ("logs", "the command `chainform logs`"),
        ("prompt", "the command `chainform prompt`"),
        ("4o", "the built-in alias '4o'"),
        ("gpt-4o", "the built-in alias 'gpt-4o'"),
        ("openai/anything", "a model name of the provider 'openai'"),
        ("ollama", "the provider 'ollama'"),
        ("claude-haiku-4-5", "the model 'claude-haiku-4-5'"),
    ],
)
def test_an_alias_that_shadows_a_model_or_command_is_refused(run, home, alias: str, why: str) -> None:
    result = run("aliases", "set", alias, "4o-mini")
    assert result.exit_code == 2, result.output
    assert result.stderr.count("Error:") == 1 and why in result.stderr
    assert not (home / "aliases.json").exists()


def test_an_alias_of_an_unknown_model_or_a_loop_is_refused(run, home) -> None:
    unknown = run("aliases", "set", "x", "no-such-model")
    assert unknown.exit_code == 3 and "Unknown model 'no-such-model'" in unknown.stderr
    assert run("aliases", "set", "a", "4o").exit_code == 0
    assert run("aliases", "set", "b", "a").exit_code == 0
    loop = run("aliases", "set", "a", "b")  # a -> b -> a
    assert loop.exit_code == 3 and "alias loop" in loop.stderr
    assert resolve_name("a") == ("openai", "gpt-4o")


def test_a_broken_aliases_file_is_one_error_line(run, home) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "aliases.json").write_text("[1, 2]")
    result = run("hello", "-m", "whatever")
    assert result.exit_code == 3 and result.stderr.count("Error:") == 1 and "aliases file" in result.stderr


def test_keys_get_prints_the_stored_key_into_a_pipe(run, home) -> None:
    assert run("keys", "set", "openai", "--value", "sk-test-0123456789").exit_code == 0
    assert run("keys", "get", "openai").stdout == "sk-test-0123456789\n"
    missing = run("keys", "get", "anthropic")
    assert missing.exit_code == 3 and missing.stdout == ""
    assert missing.stderr.count("Error:") == 1 and "no stored key for 'anthropic'" in missing.stderr


def test_keys_get_on_a_terminal_shows_the_last_characters_unless_revealed(run, monkeypatch) -> None:
    from chainform.cli import _keys

    assert run("keys", "set", "openai", "--value", "sk-test-0123456789").exit_code == 0
    monkeypatch.setattr(_keys, "_stdout_is_terminal", lambda: True)
    shown = run("keys", "get", "openai")
    assert shown.stdout == "...6789\n" and "--reveal" in shown.stderr
    assert run("keys", "get", "openai", "--reveal").stdout == "sk-test-0123456789\n"


def test_models_list_filters_by_tools_and_schemas(run) -> None:
    every = json.loads(run("models", "list", "--json").stdout)
    assert every == json.loads(run("models", "--json").stdout)
    tools = json.loads(run("models", "list", "--tools", "--json").stdout)
    schemas = json.loads(run("models", "list", "--schemas", "--json").stdout)
    both = json.loads(run("models", "list", "--tools", "--schemas", "--json").stdout)
    assert tools and all(e["capabilities"]["supports_tools"] for e in tools)
    assert schemas and all(e["capabilities"]["supports_json_schema"] for e in schemas)
    assert {e["name"] for e in both} == {e["name"] for e in tools} & {e["name"] for e in schemas}
    assert len(both) < len(every)
    assert any(not e["capabilities"]["supports_json_schema"] for e in every)
    assert "openai/gpt-4.1-mini" in run("models", "list", "--tools").stdout


def test_models_options_says_what_a_model_accepts(run) -> None:
    data = json.loads(run("models", "options", "claude-haiku", "--json").stdout)
    assert data["model"] == "anthropic/claude-haiku-4-5" and data["listed"]
    options = {o["name"]: o for o in data["options"]}
    assert options["seed"]["supported"] is False and options["top_k"]["supported"] is True
    assert options["max_output_tokens"]["aliases"] == ["max_tokens"] and options["max_output_tokens"]["max"]
    assert options["temperature"]["min"] == 0 and "tools" not in options
    openai = {
        o["name"]: o for o in json.loads(run("models", "options", "4o-mini", "--json").stdout)["options"]
    }
    assert openai["top_k"]["supported"] is False and openai["seed"]["supported"] is True
    text = run("models", "options", "4o-mini").stdout
    assert "top_k: int >= 1  not accepted by this model" in text
    unlisted = json.loads(run("models", "options", "ollama/my-own-finetune", "--json").stdout)
    assert not unlisted["listed"] and {o["supported"] for o in unlisted["options"]} == {None}
    bad = run("models", "options", "nosuch")
    assert bad.exit_code == 3 and bad.stderr.count("Error:") == 1
