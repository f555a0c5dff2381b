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

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

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


COUNT = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
    "required": ["n"],
}


@pytest.mark.parametrize("literal", ["1.0e-400", "1.00000000000000001", "-2.5e-330"])
def test_a_fraction_that_rounds_to_a_whole_float_is_no_integer(literal: str) -> None:
    from chainform._json import load_json
    from chainform.schema.validate import validate_json

    _, errors = validate_json(f'{{"n": {literal}}}', COUNT)
    assert errors == [f"$.n: {literal} is not of type 'integer'"]
    assert validate(load_json(literal), {"type": "integer"}) != []
    assert validate(load_json(literal), {"type": "number"}) == []


def test_an_integral_float_for_an_integer_comes_back_as_int() -> None:
    from chainform.schema.validate import check_value, validate_json

    value, errors = validate_json('{"n": 3.0, "x": 2.0}', COUNT)
    assert errors == [] and value == {"n": 3, "x": 2.0}
    assert type(value["n"]) is int and type(value["x"]) is float
    assert validate_json("1e2", {"type": "integer"}) == (100, [])
    assert check_value(4.0, {"anyOf": [{"type": "string"}, {"type": "integer"}]}) == (4, [])
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    assert validate_json("1.0", draft4)[1] != []  # draft-04 counts no float as an integer


def test_a_chain_judges_integers_on_the_text_the_model_wrote() -> None:
    client = ScriptedClient(['{"n": 1.0e-400}', '{"n": 3.0, "x": 2.0}'])
    response = cf.Model(client).chain("count", schema=COUNT, log=False)
    assert response.value == {"n": 3, "x": 2.0} and type(response.value["n"]) is int
    assert len(client.requests) == 2  # the first answer was fed back as invalid
    assert "1.0e-400 is not of type 'integer'" in str(client.requests[1])


def test_a_schema_tool_gets_integers_judged_on_the_text() -> None:
    tool = cf.Tool.from_schema("count", "Count.", COUNT, lambda n, x=None: (n, x))
    assert tool.invoke('{"n": 3.0, "x": 2.0}') == (3, 2.0) and type(tool.invoke('{"n": 3.0}')[0]) is int
    with pytest.raises(cf.errors.ToolArgumentError, match=r"1\.0e-400 is not of type 'integer'"):
        tool.invoke('{"n": 1.0e-400}')


def test_each_whole_float_is_judged_where_it_stands_and_the_value_is_untouched() -> None:
    """The mark that an ``integer`` schema accepted a whole float travels with that place in the
    value (no context variable, no id): one float object under an integer field and a number field
    comes back as an int in the first only; the caller's value is not changed."""
    from chainform.schema.validate import check_value

    three = 3.0
    given = {"n": three, "x": three, "xs": [three, 2.5]}
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "x": {"type": "number"}, "xs": {"type": "array"}},
    }
    value, errors = check_value(given, schema)
    assert errors == [] and value == {"n": 3, "x": 3.0, "xs": [3.0, 2.5]}
    assert [type(value["n"]), type(value["x"]), type(value["xs"][0])] == [int, float, float]
    assert given == {"n": three, "x": three, "xs": [three, 2.5]} and type(given["n"]) is float
    plain = {"x": 1.0}
    assert check_value(plain, {"properties": {"x": {"type": "number"}}})[0] is plain
