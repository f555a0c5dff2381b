"""Azure OpenAI routing and auth, and OpenAI-compatible servers, through the registry and the SDK."""

from __future__ import annotations

import pytest

import chainform as cf
from chainform.clients.openai_chat import OpenAIChatClient
from chainform.clients.openai_responses import OpenAIResponsesClient
from chainform.clients.registry import get_client
from chainform.errors import MissingKeyError
from chainform.testing.emulator import Emulator
from chainform.types import ChatOptions, Message

pytestmark = pytest.mark.usefixtures("openai_isolated")


async def test_openai_azure_deployment_routing_with_key(emulator: Emulator) -> None:
    emulator.add("from azure")
    client = get_client(
        "azure/my-gpt41", base_url=emulator.base_url, key="azure-key-123", api_version="2024-10-21"
    )
    assert isinstance(client, OpenAIChatClient)
    response = await client.get_response([Message.user("hi")])
    assert response.text == "from azure"
    request = emulator.requests[0]
    assert request.path == "/openai/deployments/my-gpt41/chat/completions"
    assert request.query == {"api-version": "2024-10-21"}
    assert request.headers["api-key"] == "azure-key-123"
    assert "authorization" not in request.headers


async def test_openai_azure_entra_token_provider(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    emulator.add("with entra")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", emulator.base_url)
    calls: list[int] = []

    def token() -> str:
        calls.append(1)
        return "entra-token"

    client = get_client("azure/dep", azure_ad_token_provider=token)
    assert (await client.get_response([Message.user("hi")])).text == "with entra"
    request = emulator.requests[0]
    assert request.headers["authorization"] == "Bearer entra-token"
    assert request.query["api-version"] == "2024-10-21"
    assert calls


async def test_openai_azure_responses(emulator: Emulator) -> None:
    emulator.add("responses on azure")
    client = get_client("azure-responses/dep", base_url=emulator.base_url, key="k-azure")
    assert isinstance(client, OpenAIResponsesClient)
    assert (await client.get_response([Message.user("hi")])).text == "responses on azure"
    assert emulator.requests[0].path == "/openai/responses"
    assert emulator.requests[0].query == {"api-version": "2025-04-01-preview"}


def test_openai_azure_needs_endpoint_and_credentials() -> None:
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        get_client("azure/dep", key="k")
    with pytest.raises(MissingKeyError, match="AZURE_OPENAI_API_KEY"):
        get_client("azure/dep", base_url="https://example.invalid")


async def test_openai_compatible_servers_via_base_url(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator.add("ollama says hi", "vllm says hi")
    monkeypatch.setenv("OLLAMA_BASE_URL", emulator.base_url + "/v1")
    ollama = get_client("ollama/llama3.2")
    assert ollama.profile.provider == "ollama" and not ollama.profile.supports_strict_schema
    assert (await ollama.get_response([Message.user("x")])).text == "ollama says hi"
    vllm = get_client("vllm/Qwen/Qwen2.5-7B-Instruct", base_url=emulator.base_url + "/v1")
    await vllm.get_response([Message.user("x")], ChatOptions(top_k=20))
    assert emulator.requests[1].body["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert emulator.requests[1].body["top_k"] == 20  # vLLM takes top_k as an extra field


def test_openai_compatible_hosted_servers_need_keys() -> None:
    with pytest.raises(MissingKeyError, match="NVIDIA_API_KEY"):
        get_client("nim/meta/llama-3.1-8b-instruct")
    with pytest.raises(MissingKeyError, match="HF_TOKEN"):
        get_client("hf/meta-llama/Llama-3.1-8B-Instruct")


async def test_azure_ai_foundry_key_and_v1_endpoint(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator.add("from foundry", "from env key")
    client = get_client("azure-ai/Llama-3.3-70B-Instruct", base_url=emulator.base_url, key="foundry-key-1")
    assert isinstance(client, OpenAIChatClient)
    response = await client.get_response([Message.user("hi")], ChatOptions(max_output_tokens=20))
    assert response.text == "from foundry"
    request = emulator.requests[0]
    assert request.path == "/openai/v1/chat/completions" and request.query == {}
    assert request.headers["authorization"] == "Bearer foundry-key-1"
    assert request.body["model"] == "Llama-3.3-70B-Instruct" and request.body["max_tokens"] == 20
    monkeypatch.setenv("AZURE_AI_API_KEY", "foundry-env-key")
    monkeypatch.setenv("AZURE_AI_ENDPOINT", emulator.base_url + "/openai/v1/")
    await get_client("azure-ai/Phi-4").get_response([Message.user("hi")])
    assert emulator.requests[1].headers["authorization"] == "Bearer foundry-env-key"
    assert emulator.requests[1].path == "/openai/v1/chat/completions"


async def test_azure_ai_foundry_entra_token_asked_per_request(emulator: Emulator) -> None:
    emulator.add("one", "two")
    tokens = iter(["entra-1", "entra-2"])
    client = get_client(
        "azure-ai/Mistral-Large-2411",
        base_url=emulator.base_url,
        azure_ad_token_provider=lambda: next(tokens),
    )
    for _ in range(2):
        await client.get_response([Message.user("hi")])
    assert [r.headers["authorization"] for r in emulator.requests] == ["Bearer entra-1", "Bearer entra-2"]


def test_azure_ai_foundry_needs_endpoint_and_credentials_and_profiles_by_family() -> None:
    with pytest.raises(ValueError, match="AZURE_AI_ENDPOINT"):
        get_client("azure-ai/Phi-4", key="k")
    with pytest.raises(MissingKeyError, match="AZURE_AI_API_KEY"):
        get_client("azure-ai/Phi-4", base_url="https://example.invalid")
    with pytest.raises(ValueError, match="api_version"):
        get_client("azure-ai/Phi-4", key="k", base_url="https://example.invalid", api_version="2024-10-21")

    def profile(name: str) -> cf.ModelProfile:
        return get_client(f"azure-ai/{name}", key="k", base_url="https://example.invalid").profile

    assert profile("Mistral-Large-2411").supports_json_schema
    llama = profile("Meta-Llama-3.1-8B-Instruct")
    assert llama.supports_tools and not llama.supports_json_schema and llama.provider == "azure-ai"
    assert not profile("DeepSeek-R1").supports_tools and profile("DeepSeek-R1").supports_reasoning
    assert not profile("Phi-4").supports_tools and profile("Phi-4-mini-instruct").supports_tools
    assert profile("some-new-model").supports_tools  # unknown family: conservative defaults
    assert "azure-ai/DeepSeek-R1" in {m.name for m in cf.list_models()}


async def test_azure_ai_foundry_chain_picks_a_strategy_from_the_family(emulator: Emulator) -> None:
    emulator.add('{"city": "Paris"}')
    model = cf.get_async_model("azure-ai/Phi-4", base_url=emulator.base_url, key="k")
    chain = model.prompt("Capital of France?", schema="city")
    assert await chain.get_value() == {"city": "Paris"}
    assert chain.strategy.name == "prompted"  # Phi-4: no native schema, no tools
    assert "response_format" not in emulator.requests[0].body
