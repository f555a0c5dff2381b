"""What the adapter tests share besides fixtures: the weather tool, its answer schema, and the
adapters to close after a test (the `emu` fixture in conftest.py closes them)."""

from __future__ import annotations

from typing import Any, TypeVar

from chainform.types import FunctionSpec

C = TypeVar("C")

WEATHER = FunctionSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

OPEN: list[Any] = []


def opened(client: C) -> C:
    """`client`, closed by the `emu` fixture when the test ends (inside the test's event loop)."""
    OPEN.append(client)
    return client


def gemini_client(emu: Any, model: str = "gemini-2.5-flash", **kwargs: Any) -> Any:
    """A Gemini adapter on the emulator (the SDK's retry delays near zero), closed after the test."""
    from chainform.clients.gemini import create_client

    made = create_client(
        model,
        key="gemini-test-key",
        base_url=emu.base_url,
        max_retries=1,
        retry_initial_delay=0.01,
        retry_jitter=0,
        **kwargs,
    )
    return opened(made)


def bedrock_client(
    emu: Any, model: str = "anthropic.claude-sonnet-4-5-20250929-v1:0", max_retries: int = 1, **kwargs: Any
) -> Any:
    """A Bedrock adapter on the emulator with test credentials."""
    from chainform.clients.bedrock import create_client

    return create_client(
        model,
        base_url=emu.base_url,
        region="us-east-1",
        max_retries=max_retries,
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret-test",
        **kwargs,
    )
