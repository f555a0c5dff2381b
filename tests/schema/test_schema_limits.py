"""Schemas and answers at the edges: a schema nested too deep is a typed `SchemaError` everywhere it
enters (never a RecursionError), and integers are judged on the JSON text the model wrote."""

from __future__ import annotations

import json
from typing import Any

import pytest

import chainform as cf
from chainform.errors import SchemaError
from chainform.schema import resolve_schema
from chainform.schema.dialects import convert
from chainform.schema.validate import check_schema, validate
from chainform.testing import ScriptedClient

TOO_DEEP = "nested more than 100 levels deep"


def deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def deep_text(levels: int) -> str:
    return '{"type": "array", "items": ' * levels + '{"type": "string"}' + "}" * levels


@pytest.mark.parametrize("levels", [10_000, 150])
def test_a_deep_schema_is_a_schema_error_wherever_it_enters(levels: int) -> None:
    schema = deep_schema(levels)
    for enter in (
        lambda: resolve_schema(schema),
        lambda: resolve_schema(deep_text(levels)),
        lambda: check_schema(schema),
        lambda: validate([], schema),
        lambda: convert(schema, "gemini"),
        lambda: cf.Tool.from_schema("t", "d", {"type": "object", "properties": {"x": schema}}, lambda x: x),
    ):
        with pytest.raises(SchemaError, match=TOO_DEEP):
            enter()


def test_a_deep_schema_stops_a_chain_before_anything_is_sent() -> None:
    client = ScriptedClient(["[]"])
    with pytest.raises(SchemaError, match=TOO_DEEP):
        cf.Model(client).chain("x", schema=deep_schema(10_000), log=False).value
    assert client.requests == []


def test_a_schema_just_under_the_limit_still_works() -> None:
    schema = deep_schema(99)  # 100 levels of JSON objects with the innermost one
    value: Any = "x"
    for _ in range(99):
        value = [value]
    check_schema(schema)
    assert validate(value, schema) == []
    client = ScriptedClient([json.dumps(value)])
    assert cf.Model(client).chain("x", schema=schema, log=False).value == value
