"""Lossless encodings of the strict dialects: each construct round-trips EXACTLY, nested and recursive."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from chainform.errors import SchemaError
from chainform.schema.dialects import convert, forward_instance, provider_accepts, restore
from chainform.schema.validate import is_valid, validate

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

STRICT = ["openai-strict", "anthropic"]
ALL = ["openai-strict", "anthropic", "gemini", "bedrock"]


def exact(value: Any, schema: Any, dialect: Any) -> Any:
    """The emitted form of `value`, after checking it is accepted and restores to `value` exactly."""
    conv = convert(schema, dialect)
    emitted = forward_instance(value, schema, dialect)
    assert provider_accepts(emitted, conv), (dialect, emitted, conv.schema)
    back = restore(emitted, schema, dialect)
    assert back == value and json.dumps(back) == json.dumps(value), (dialect, emitted, back)
    assert validate(back, schema) == []
    return emitted


def unwrap(emitted: Any) -> Any:
    return emitted["value"] if isinstance(emitted, dict) and set(emitted) == {"value"} else emitted


FREE = {"type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]}


@pytest.mark.parametrize("dialect", ALL)
def test_free_form_object_keeps_any_keys_and_values(dialect: str) -> None:
    for meta in ({}, {"a": 1}, {"x": [1, {"y": None}], "z": {"deep": [True, 2.5, "s"]}, "": None}):
        emitted = exact({"meta": meta}, FREE, dialect)
        if dialect in STRICT and (meta or dialect == "openai-strict"):  # anthropic: optional when empty
            assert isinstance(emitted["meta"]["entries"], list)  # closed dialects: key/value pairs
    if dialect in STRICT:
        notes = convert(FREE, dialect).notes
        assert any("key/value pairs in 'entries'" in n for n in notes)


def test_openai_any_value_is_a_scalar_or_json_text() -> None:
    emitted = exact({"meta": {"k": [1, 2], "s": "text"}}, FREE, "openai-strict")
    pairs = {p["key"]: p["value"] for p in emitted["meta"]["entries"]}
    assert pairs == {"k": {"json": "[1, 2]"}, "s": "text"}


@pytest.mark.parametrize("dialect", STRICT)
def test_additional_and_pattern_properties_as_pairs(dialect: str) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}, "^y-": {"type": "boolean"}},
        "additionalProperties": {"type": "string"},
    }
    conv = convert(schema, dialect)
    extra = conv.schema["properties"]["_extra"]
    branches = extra["items"]["anyOf"]
    assert [b["properties"]["key"].get("pattern") for b in branches] == ["^x-", "^y-", None]
    assert branches[0]["properties"]["value"]["type"] in ("integer", ["integer"])
    value = {"name": "n", "x-a": 1, "y-b": True, "other": "s"}
    emitted = exact(value, schema, dialect)
    assert emitted["_extra"] == [
        {"key": "x-a", "value": 1},
        {"key": "y-b", "value": True},
        {"key": "other", "value": "s"},
    ]
    exact({"name": "n"}, schema, dialect)
    # An invalid extra still comes back as it was, and the final check rejects it.
    bad = {"name": "n", "x-a": "not an int"}
    assert restore(forward_instance(bad, schema, dialect), schema, dialect) == bad
    assert not is_valid(bad, schema)


def test_extra_keys_property_never_collides() -> None:
    schema = {"type": "object", "properties": {"_extra": {"type": "integer"}}, "additionalProperties": True}
    conv = convert(schema, "openai-strict")
    assert set(conv.schema["properties"]) == {"_extra", "__extra"}
    exact({"_extra": 1, "__extra": 2, "k": "v"}, schema, "openai-strict")


@pytest.mark.parametrize("dialect", ALL)
def test_unions_keep_every_branch(dialect: str) -> None:
    schema = {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["kind"],
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    exact({"kind": "k", "a": 1}, schema, dialect)
    exact({"kind": "k", "b": "x"}, schema, dialect)
    if dialect in STRICT:
        branches = convert(schema, dialect).schema["properties"]["value"]["anyOf"]  # root wrapped
        assert len(branches) == 2 and all("kind" in b["properties"] for b in branches)
        assert any("merged into each branch" in n for n in convert(schema, dialect).notes)
    mixed = {"anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "array"}]}
    for value in ({"n": 1}, [], [{"key": "k", "value": 1}], {}):
        exact(value, mixed, dialect)


@pytest.mark.parametrize("dialect", ALL)
def test_enum_and_const_values_of_any_type(dialect: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "e": {"enum": [1, "1", None, True, {"k": [1]}, [1, 2], 2.5]},
            "c": {"const": {"a": 1}},
        },
    }
    for e in (1, "1", None, True, {"k": [1]}, [1, 2], 2.5):
        exact({"e": e, "c": {"a": 1}}, schema, dialect)
    exact({}, schema, dialect)


@pytest.mark.parametrize("dialect", ALL)
def test_unsupported_keywords_never_reject_a_valid_value(dialect: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "minItems": 2},
            "n": {"type": "integer", "not": {"const": 3}, "multipleOf": 2},
            "a": {"type": "string"},
            "b": {"type": "string"},
        },
        "dependentRequired": {"a": ["b"]},
        "dependencies": {"b": {"required": ["tags"]}},
        "minProperties": 1,
    }
    exact({"tags": ["x", "y"], "n": 4, "a": "1", "b": "2"}, schema, dialect)
    exact({"n": 2}, schema, dialect)
    for bad in ({"tags": ["x", "x"]}, {"n": 3}, {"a": "only"}, {}):
        back = restore(forward_instance(bad, schema, dialect), schema, dialect)
        assert back == bad and not is_valid(back, schema)  # the final check enforces what moved
    if dialect != "bedrock":
        assert any("moved to description" in n for n in convert(schema, dialect).notes)


@pytest.mark.parametrize("dialect", ALL)
def test_explicit_null_and_absent_stay_apart(dialect: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "maybe": {"type": ["string", "null"]},
            "plain": {"type": "string"},
            "list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        },
        "$defs": {
            "item": {
                "type": "object",
                "properties": {"note": {"anyOf": [{"type": "null"}, {"type": "integer"}]}},
            }
        },
    }
    for value in (
        {},
        {"maybe": None},
        {"maybe": "s", "plain": "p"},
        {"list": [{}, {"note": None}, {"note": 3}]},
    ):
        exact(value, schema, dialect)
    if dialect == "openai-strict":
        emitted = forward_instance({"maybe": None, "list": [{}]}, schema, dialect)
        assert emitted["maybe"] == {"value": None} and emitted["plain"] is None
        assert emitted["list"] == [{"note": None}]


TREE: dict[str, Any] = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "attrs": {"type": "object", "additionalProperties": {"type": ["string", "null"]}},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["label"],
        }
    },
    "$ref": "#/$defs/node",
}


@pytest.mark.parametrize("dialect", ALL)
def test_recursive_schema_with_maps_round_trips_at_any_depth(dialect: str) -> None:
    value: dict[str, Any] = {"label": "leaf", "attrs": {"k": None, "j": "v"}}
    for depth in range(7):
        value = {"label": f"n{depth}", "attrs": {} if depth % 2 else {"d": str(depth)}, "children": [value]}
        exact(value, TREE, dialect)


def test_restore_leaves_unexpected_shapes_alone() -> None:
    schema = {"type": "object", "properties": {"m": {"type": "object"}, "x": {"enum": [[1], {"a": 2}]}}}
    odd = {"m": {"entries": [{"nokey": 1}, 5]}, "x": "not spelled"}
    assert restore(odd, schema, "openai-strict") == {"m": {"entries": [{"nokey": 1}, 5]}, "x": "not spelled"}
    assert restore({"m": {"entries": "nope"}}, schema, "anthropic") == {"m": {"entries": "nope"}}
    assert restore("just text", schema, "openai-strict") == "just text"
    text_node = {"type": "object", "properties": {"v": {"$ref": "#"}}}
    assert restore({"v": "{not json"}, text_node, "anthropic") == {"v": "{not json"}


def test_provider_limits_are_checked_with_the_limit_named() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    with pytest.raises(SchemaError, match="nesting_depth: 11"):
        convert(deep, "openai-strict")
    convert(deep, "bedrock")  # no such limit there
    many = {"type": "object", "properties": {"e": {"enum": list(range(1001))}}}
    with pytest.raises(SchemaError, match="enum_values"):
        convert(many, "openai-strict")
    wide = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(5001)}}
    with pytest.raises(SchemaError, match="properties: 5001"):
        convert(wide, "openai-strict")
    names = {"type": "string", "enum": [f"{i:0>60}" for i in range(300)]}
    with pytest.raises(SchemaError, match="large_enum_chars"):
        convert(names, "openai-strict")


def test_cli_schemas_show_dialect(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from chainform.cli import cli

    monkeypatch.setenv("CHAINFORM_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(
        cli, ["schemas", "show", "--dialect", "openai-strict", json.dumps(FREE)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["schema"] == convert(FREE, "openai-strict").schema
    assert any("entries" in n for n in shown["notes"])
    bad = CliRunner().invoke(cli, ["schemas", "show", "--dialect", "cobol", "{}"])
    assert bad.exit_code != 0
