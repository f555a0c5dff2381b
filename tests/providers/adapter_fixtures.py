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
