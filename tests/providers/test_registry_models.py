"""Model names, aliases, unknown names and the model listing."""

from __future__ import annotations

import subprocess
import sys

import openai_fixtures
import pytest

from chainform.clients import registry
from chainform.clients.openai_chat import OpenAIChatClient
from chainform.clients.openai_responses import OpenAIResponsesClient
from chainform.clients.registry import get_client, list_models, register_alias, resolve_name
from chainform.errors import MissingKeyError, ModelNotFoundError


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    openai_fixtures.prepare(monkeypatch)
    monkeypatch.setattr(registry, "_ALIASES", dict(registry._ALIASES))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("openai/gpt-4.1-mini", ("openai", "gpt-4.1-mini")),
        ("4.1-mini", ("openai", "gpt-4.1-mini")),
        ("gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("openai-responses/o4-mini", ("openai-responses", "o4-mini")),
        ("azure/prod-deployment", ("azure", "prod-deployment")),
        ("ollama/llama3.2", ("ollama", "llama3.2")),
        ("vllm/Qwen/Qwen2.5-7B-Instruct", ("vllm", "Qwen/Qwen2.5-7B-Instruct")),
        ("claude-sonnet", ("anthropic", "claude-sonnet-4-5")),
        ("gemini-flash", ("gemini", "gemini-2.5-flash")),
        ("bedrock/amazon.nova-lite-v1:0", ("bedrock", "amazon.nova-lite-v1:0")),
        ("local", ("local", "smollm2")),
        ("local/smollm2", ("local", "smollm2")),
        ("claude-haiku-4-5", ("anthropic", "claude-haiku-4-5")),
    ],
)
def test_registry_resolves_names_and_aliases(name: str, expected: tuple[str, str]) -> None:
    assert resolve_name(name) == expected


def test_registry_unknown_names_suggest_close_matches() -> None:
    with pytest.raises(ModelNotFoundError, match=r"Close matches: gpt-4\.1-mini"):
        resolve_name("gpt-4.1-mnii")
    with pytest.raises(ModelNotFoundError, match=r"Did you mean: openai/"):
        resolve_name("opnai/gpt-4o")
    with pytest.raises(ModelNotFoundError, match="add a model"):
        resolve_name("openai")
    with pytest.raises(ModelNotFoundError, match="required"):
        resolve_name("  ")


def test_registry_register_alias_and_loops() -> None:
    register_alias("work", "openai/gpt-4.1")
    register_alias("default", "work")
    assert resolve_name("default") == ("openai", "gpt-4.1")
    register_alias("a", "b")
    register_alias("b", "a")
    with pytest.raises(ModelNotFoundError, match="loop"):
        resolve_name("a")
    with pytest.raises(ValueError):
        register_alias("", "openai/x")


def test_registry_get_client_builds_openai_clients() -> None:
    chat = get_client("4.1-mini", key="sk-x", max_retries=0)
    assert isinstance(chat, OpenAIChatClient) and chat.model == "gpt-4.1-mini"
    assert chat.profile.schema_dialect == "openai-strict" and chat.profile.supports_strict_schema
    responses = get_client("openai-responses/gpt-5", key="sk-x")
    assert isinstance(responses, OpenAIResponsesClient)
    assert responses.profile.supports_reasoning and "temperature" in responses.profile.unsupported_options


def test_registry_missing_openai_key_says_how_to_set_it() -> None:
    with pytest.raises(MissingKeyError) as info:
        get_client("openai/gpt-4o")
    message = str(info.value)
    assert "OPENAI_API_KEY" in message and "chainform keys set openai" in message


def test_registry_local_takes_no_key() -> None:
    with pytest.raises(ValueError, match="no key"):
        get_client("local", key="x")


@pytest.mark.parametrize(
    ("model", "reasoning", "seed"),
    [
        ("gpt-4.1-mini", False, True),
        ("gpt-4o-2024-08-06", False, True),
        ("o3", True, False),
        ("gpt-5-nano", True, False),
    ],
)
def test_registry_openai_family_profiles(model: str, reasoning: bool, seed: bool) -> None:
    from chainform.clients.profiles.openai import openai_profile

    profile = openai_profile(model)
    assert (profile.supports_reasoning, profile.supports_seed) == (reasoning, seed)
    assert (
        profile.supports_json_schema and profile.supports_tools_with_schema and profile.supports_strict_schema
    )
    assert profile.supports_tool_choice_required and profile.supports_parallel_tool_calls
    assert profile.schema_dialect == "openai-strict" and "top_k" in profile.unsupported_options


def test_registry_list_models_covers_every_provider() -> None:
    models = {m.name: m for m in list_models()}
    providers = {m.provider for m in models.values()}
    assert {"openai", "anthropic", "gemini", "bedrock", "local", "ollama"} <= providers
    mini = models["openai/gpt-4.1-mini"]
    assert set(mini.aliases) >= {"4.1-mini", "gpt-4.1-mini"}
    assert mini.profile.supports_json_schema
    assert "local" in models["local/smollm2"].aliases and not models["local/smollm2"].needs_key


def test_registry_list_models_imports_no_sdk() -> None:
    code = (
        "import sys; from chainform.clients.registry import list_models; n = len(list_models()); "
        "heavy = [m for m in ('openai', 'anthropic', 'google.genai', 'boto3', 'torch') if m in sys.modules]; "
        "print(n, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    count, heavy = out.split(" ", 1)
    assert int(count) > 20
    assert heavy.strip() == "[]"
