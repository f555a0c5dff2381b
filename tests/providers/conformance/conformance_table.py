"""The adapter table of the conformance suite: one row per adapter (and per profile worth testing).

A new adapter adds one `Row` here and gets every conformance test: text, streaming, tool calls,
structured output with the strategies its profile picks, usage, each emulator fault and option
errors. A row says how to reach the emulator and what the profile claims; `test_profile_claims`
checks the claims against the real profile, so a capability case is only ever skipped where the
adapter's profile says it lacks the capability.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import chainform as cf
from chainform.testing.emulator import Emulator

KEY = "sk-conformance-0123456789abcdef"
AWS_KEY = "AKIDCONFORMANCE:conformance-secret-0123456789"


@dataclass(frozen=True)
class Row:
    """One adapter as the suite sees it.

    `transport`: rows sharing it share the SDK client and its error handling, so the fault cases
    run once per transport (on its first row); profile cases run on every row.
    `path`: what goes after the emulator's root URL to make `base_url`.
    `schema_strategy` / `tools_schema_strategy`: what `auto` must pick for a schema without and
    with tools. `parallel`, `tools`: the profile's tool claims.
    `usage_counts`: the `additional_counts` the wire format reports back.
    `retries_drop`: whether the SDK retries a connection closed before any response (google-genai
    retries connect errors and timeouts only; the error is still `kind="connection"`, retryable).
    """

    id: str
    name: str
    transport: str
    schema_strategy: str
    tools_schema_strategy: str
    path: str = "/v1"
    key: str | None = KEY
    tools: bool = True
    parallel: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    usage_counts: frozenset[str] = frozenset({"cache_read_input_tokens", "reasoning_tokens"})
    retries_drop: bool = True

    @property
    def sdk(self) -> str:
        """The SDK client the transport is built on, and so the HTTP timeouts it is given: every
        OpenAI-compatible transport goes through `clients/_openai.build_sdk`."""
        return _SDKS.get(self.transport, "openai")

    @property
    def secret(self) -> str | None:
        """The part of the key that must never show (the secret half of an AWS key pair)."""
        return self.key.rsplit(":", 1)[-1] if self.key else None

    @property
    def timeouts_on_the_loop(self) -> bool:
        """Whether the SDK keeps its own timeouts on the event loop's clock (the async HTTP SDKs:
        httpx's through anyio), so that a test clock moves them too; botocore's are its sockets'."""
        return self.sdk != "botocore"

    def model(self, emu: Emulator, **settings: Any) -> cf.Model:
        """The model through the public API, its SDK pointed at `emu`, one SDK retry."""
        merged = {"max_retries": 1, **self.settings, **settings}
        return cf.get_model(self.name, base_url=emu.base_url + self.path, key=self.key, **merged)

    def async_model(self, emu: Emulator, **settings: Any) -> cf.AsyncModel:
        """`model`, async: for a test that runs it on an event loop of its own."""
        merged = {"max_retries": 1, **self.settings, **settings}
        return cf.get_async_model(self.name, base_url=emu.base_url + self.path, key=self.key, **merged)


_SDKS = {"anthropic": "anthropic", "gemini": "google-genai", "bedrock": "botocore"}
_GEMINI: dict[str, Any] = {"retry_initial_delay": 0.01, "retry_jitter": 0}  # it ignores Retry-After
_BEDROCK = {"region": "us-east-1"}
_CACHED = frozenset({"cache_read_input_tokens"})
_AS_OPENAI = {"profile": "openai"}

ROWS: tuple[Row, ...] = (
    # the emulator plays OpenAI itself: at a base URL not OpenAI's, `profile="openai"` says so
    Row("openai-chat", "openai/gpt-4.1-mini", "openai-chat", "native", "native", settings=_AS_OPENAI),
    Row(
        "openai-responses",
        "openai-responses/gpt-4.1-mini",
        "openai-responses",
        "native",
        "native",
        settings=_AS_OPENAI,
    ),
    Row(
        "azure",
        "azure/gpt-4.1-mini",
        "azure-chat",
        "native",
        "native",
        path="",
        settings={"api_version": "2024-10-21"},
    ),
    Row("azure-responses", "azure-responses/gpt-4.1-mini", "azure-responses", "native", "native", path=""),
    Row("azure-ai-mistral", "azure-ai/Mistral-Large-2411", "azure-ai", "native", "tool", path=""),
    Row(
        "azure-ai-llama",
        "azure-ai/Llama-3.3-70B-Instruct",
        "azure-ai",
        "prompted",
        "deferred",
        path="",
        parallel=False,
    ),
    Row(
        "azure-ai-phi",
        "azure-ai/Phi-4",
        "azure-ai",
        "prompted",
        "deferred",
        path="",
        tools=False,
        parallel=False,
    ),
    Row("hf", "hf/meta-llama/Llama-3.1-8B-Instruct", "compat", "tool", "tool"),
    Row("ollama", "ollama/llama3.2", "compat", "native", "deferred", key=None),
    Row("vllm", "vllm/Qwen/Qwen2.5-7B-Instruct", "compat", "native", "tool", key=None),
    Row(
        "anthropic",
        "anthropic/claude-haiku-4-5",
        "anthropic",
        "native",
        "native",
        path="",
        usage_counts=_CACHED,
    ),
    Row(
        "anthropic-3-5",
        "anthropic/claude-3-5-sonnet-latest",
        "anthropic",
        "tool",
        "tool",
        path="",
        usage_counts=_CACHED,
    ),
    Row(
        "gemini",
        "gemini/gemini-2.5-flash",
        "gemini",
        "native",
        "tool",
        path="",
        settings=_GEMINI,
        retries_drop=False,
    ),
    Row(
        "gemini-3",
        "gemini/gemini-3-pro-preview",
        "gemini",
        "native",
        "native",
        path="",
        settings=_GEMINI,
        retries_drop=False,
    ),
    Row(
        "bedrock",
        "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0",
        "bedrock",
        "native",
        "native",
        path="",
        key=AWS_KEY,
        settings=_BEDROCK,
        usage_counts=_CACHED,
    ),
    Row(
        "bedrock-llama",
        "bedrock/meta.llama3-3-70b-instruct-v1:0",
        "bedrock",
        "prompted",
        "deferred",
        path="",
        key=AWS_KEY,
        settings=_BEDROCK,
        parallel=False,
        usage_counts=_CACHED,
    ),
)


def transports() -> tuple[Row, ...]:
    """The first row of each transport: where the fault cases run."""
    seen: dict[str, Row] = {}
    for row in ROWS:
        seen.setdefault(row.transport, row)
    return tuple(seen.values())


def sdks() -> tuple[Row, ...]:
    """The first row of each SDK client: where a case that proves the SDK's own socket timeouts in
    real seconds runs. The transports sharing an SDK client are built with the same timeouts and
    differ in wire format and error mapping, which the other cases prove per transport."""
    seen: dict[str, Row] = {}
    for row in ROWS:
        seen.setdefault(row.sdk, row)
    return tuple(seen.values())
