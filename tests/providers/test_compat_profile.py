"""Which profile `openai/NAME` gets: OpenAI's at OpenAI (and Azure), a compatible server's at any
other base URL (a known server's at its default address), and the one named by `profile=`."""

from __future__ import annotations

import pytest

import chainform as cf

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def profile_of(name: str, **settings: object) -> cf.types.ModelProfile:
    return cf.get_model(name, key="sk-test", **settings).client.profile


def test_openai_itself_gets_its_family_profile() -> None:
    for settings in ({}, {"base_url": "https://api.openai.com/v1"}):
        profile = profile_of("openai/gpt-4.1-mini", **settings)
        assert profile.schema_dialect == "openai-strict" and profile.supports_strict_schema
        assert profile.prompt_cache_key and profile.supports_tools_with_schema


def test_a_foreign_base_url_gets_the_generic_compatible_profile() -> None:
    profile = profile_of("openai/gpt-4.1-mini", base_url="https://gateway.example.com/v1")
    assert profile.provider == "openai" and profile.name == "gpt-4.1-mini"
    assert profile.schema_dialect == "jsonschema" and not profile.supports_strict_schema
    assert not profile.supports_tools_with_schema and not profile.prompt_cache_key
    assert profile.empty_tool_turn_content  # content "" on a tool-call turn, as compatible servers take it
    assert profile.supports_tool_choice_required  # tool_mode="required" is sent when asked...
    assert profile.tool_choice_untrusted  # ...but not relied on
    assert cf.output.select_strategy(profile, has_tools=True) == "deferred"


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("http://localhost:8080/v1", "llamacpp"),
        ("http://127.0.0.1:11434/v1", "ollama"),
        ("http://localhost:8000/v1", "vllm"),
        ("http://localhost:1234/v1", "lmstudio"),
    ],
)
def test_a_known_servers_default_address_gets_that_servers_profile(url: str, server: str) -> None:
    profile = profile_of("openai/some-model", base_url=url)
    known = profile_of(f"{server}/some-model", base_url=url)
    assert profile.provider == "openai"
    assert profile.replace(provider=known.provider) == known


def test_llama_cpp_at_its_default_address_is_not_forced_to_call_a_tool() -> None:
    profile = profile_of("openai/default", base_url="http://localhost:8080/v1")
    assert not profile.supports_tool_choice_required
    assert cf.output.select_strategy(profile, has_tools=True) == "deferred"


def test_a_named_profile_wins() -> None:
    url = "https://proxy.example.com/v1"
    assert profile_of("openai/gpt-4.1-mini", base_url=url, profile="openai").schema_dialect == "openai-strict"
    vllm = profile_of("openai/m", base_url=url, profile="vllm")
    assert vllm == profile_of("vllm/m", base_url=url).replace(provider="openai")
    responses = profile_of("openai-responses/gpt-4.1-mini", base_url=url, profile="openai")
    assert (
        responses.schema_dialect == "openai-strict" and not responses.supports_seed
    )  # Responses' own limits


def test_the_responses_api_at_a_foreign_url_is_compatible_too() -> None:
    profile = profile_of("openai-responses/gpt-4.1-mini", base_url="https://gateway.example.com/v1")
    assert profile.schema_dialect == "jsonschema" and not profile.supports_seed


def test_azure_keeps_openais_profile() -> None:
    profile = profile_of(
        "azure/gpt-4.1-mini", base_url="https://res.openai.azure.com", api_version="2024-10-21"
    )
    assert profile.schema_dialect == "openai-strict" and profile.provider == "azure"


def test_a_bad_profile_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown profile 'nope': name one of 'openai', .*'llamacpp'"):
        profile_of("openai/m", base_url="https://x.example.com/v1", profile="nope")
    with pytest.raises(ValueError, match=r"anthropic models take a ModelProfile, not a name"):
        profile_of("anthropic/claude-haiku-4-5", profile="openai")


def test_openai_base_url_in_the_environment_is_profiled_like_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """$OPENAI_BASE_URL at a foreign server: the compatible profile (no prompt_cache_key), as
    --base-url to the same server gets (issue 38, item 16)."""
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/v1")
    from_env = profile_of("openai/gpt-4.1-mini")
    monkeypatch.delenv("OPENAI_BASE_URL")
    given = profile_of("openai/gpt-4.1-mini", base_url="https://gateway.example.com/v1")
    assert from_env == given and not from_env.prompt_cache_key
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    assert profile_of("openai/gpt-4.1-mini").prompt_cache_key
