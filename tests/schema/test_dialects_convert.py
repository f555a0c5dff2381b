"""chainform.schema.dialects on hand-written schemas: what each provider gets, and what comes back."""

from __future__ import annotations

from typing import Any

import pytest

from chainform.errors import SchemaError
from chainform.schema.dialects import convert, forward_instance, provider_accepts, restore
from chainform.schema.validate import validate

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city"],
        },
    },
    "required": ["name"],
}
TREE: dict[str, Any] = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["label"],
        }
    },
    "$ref": "#/$defs/node",
}


def roundtrip(value: Any, schema: Any, dialect: Any) -> Any:
    conv = convert(schema, dialect)
    emitted = forward_instance(value, schema, dialect)
    assert provider_accepts(emitted, conv), (dialect, emitted, conv.schema)
    back = restore(emitted, schema, dialect)
    assert validate(back, schema) == []
    return back


def objects(schema: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            found.append(schema)
        for v in schema.values():
            found += objects(v)
    elif isinstance(schema, list):
        for v in schema:
            found += objects(v)
    return found


def test_openai_strict_requires_everything_and_closes_objects() -> None:
    conv = convert(PERSON, "openai-strict")
    for obj in objects(conv.schema):
        assert obj["additionalProperties"] is False
        assert set(obj["required"]) == set(obj["properties"])
    props = conv.schema["properties"]
    assert props["age"]["type"] == ["integer", "null"] and props["age"]["minimum"] == 0
    assert props["name"]["type"] == "string" and "minLength" in props["name"]["description"]
    assert props["email"]["format"] == "email"
    assert "format" not in props["site"] and "uri" in props["site"]["description"]
    assert props["address"]["properties"]["zip"]["pattern"] == "^[0-9]{5}$"
    assert any("minLength" in n for n in conv.notes)


def test_openai_strict_optional_nulls_are_removed_on_restore() -> None:
    emitted = {
        "name": "Ada",
        "age": None,
        "email": None,
        "site": None,
        "address": {"city": "Rome", "zip": None},
    }
    assert provider_accepts(emitted, convert(PERSON, "openai-strict"))
    assert restore(emitted, PERSON, "openai-strict") == {"name": "Ada", "address": {"city": "Rome"}}
    assert forward_instance({"name": "Ada", "address": {"city": "Rome"}}, PERSON, "openai-strict") == emitted


@pytest.mark.parametrize(
    "dialect", ["openai-strict", "gemini", "anthropic", "bedrock", "llguidance", "jsonschema"]
)
def test_round_trip_of_valid_values(dialect: str) -> None:
    for value in ({"name": "Ada"}, {"name": "Bo", "age": 3, "address": {"city": "Oslo", "zip": "12345"}}):
        assert roundtrip(value, PERSON, dialect) == value


def test_refs_are_kept_for_openai_with_recursion() -> None:
    conv = convert(TREE, "openai-strict")
    assert "$defs" in conv.schema
    value = {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}
    assert roundtrip(value, TREE, "openai-strict") == value


def test_gemini_inlines_refs_and_bounds_recursion() -> None:
    conv = convert(TREE, "gemini")
    assert "$ref" not in str(conv.schema) and "$defs" not in conv.schema
    assert any("recursion" in n for n in conv.notes)
    shallow = {"label": "a", "children": [{"label": "b"}]}
    assert roundtrip(shallow, TREE, "gemini") == shallow
    deep: dict[str, Any] = {"label": "x"}
    for _ in range(6):
        deep = {"label": "x", "children": [deep]}
    # The node appears three times (root + 2); the level below is JSON text, so nothing is lost.
    assert str(conv.schema).count("'items'") == 3
    assert any("JSON text" in n for n in conv.notes)
    assert roundtrip(deep, TREE, "gemini") == deep


def test_anthropic_writes_required_recursion_as_json_text() -> None:
    schema = {
        "$defs": {
            "n": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]},
                },
                "required": ["v", "next"],
            }
        },
        "$ref": "#/$defs/n",
    }
    conv = convert(schema, "anthropic")
    assert any("JSON text" in n for n in conv.notes)
    value = {"v": 1, "next": {"v": 2, "next": {"v": 3, "next": None}}}
    emitted = forward_instance(value, schema, "anthropic")
    assert set(emitted["value"]["next"]) == {"json"}  # the recursive level travels as JSON text
    assert roundtrip(value, schema, "anthropic") == value
    assert "$defs" in convert(schema, "openai-strict").schema


def test_non_object_root_is_wrapped_and_unwrapped() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    for dialect in ("openai-strict", "anthropic", "bedrock"):
        conv = convert(schema, dialect)
        assert conv.schema["type"] == "object" and conv.root_key == "value"
        assert forward_instance([1, 2], schema, dialect) == {"value": [1, 2]}
        assert restore({"value": [1, 2]}, schema, dialect) == [1, 2]
    assert convert(schema, "gemini").root_key is None


def test_anyof_enum_const_and_type_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "kind": {"const": "dog"},
            "size": {"enum": [1, 2, 3]},
            "id": {"type": ["string", "integer", "null"]},
            "pet": {
                "anyOf": [{"type": "object", "properties": {"bark": {"type": "boolean"}}}, {"type": "string"}]
            },
        },
        "required": ["kind"],
    }
    gem = convert(schema, "gemini").schema["properties"]
    assert gem["kind"] == {"type": "string", "enum": ["dog"]}
    assert gem["size"]["enum"] == ["1", "2", "3"]  # Gemini enums are strings only: spelled, mapped back
    assert [b["type"] for b in gem["id"]["anyOf"]] == ["string", "integer"] and gem["id"]["anyOf"][0][
        "nullable"
    ]
    oai = convert(schema, "openai-strict").schema["properties"]
    assert oai["kind"]["enum"] == ["dog"] and oai["size"]["enum"] == [1, 2, 3, None]
    assert {"type": "null"} in oai["pet"]["anyOf"]
    for dialect in ("openai-strict", "gemini", "anthropic"):
        for value in ({"kind": "dog", "pet": {"bark": True}, "id": 4}, {"kind": "dog", "pet": "rex"}):
            assert roundtrip(value, schema, dialect) == value
    # Strict mode says "absent" with null: an explicit null on an optional nullable field is boxed.
    assert forward_instance({"kind": "dog", "id": None}, schema, "openai-strict")["id"] == {"value": None}
    assert roundtrip({"kind": "dog", "id": None}, schema, "openai-strict") == {"kind": "dog", "id": None}
    assert roundtrip({"kind": "dog", "size": 2}, schema, "gemini") == {"kind": "dog", "size": 2}
    assert roundtrip({"kind": "dog", "id": None}, schema, "gemini") == {"kind": "dog", "id": None}


def test_allof_is_merged_for_subset_dialects() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer", "maximum": 5}}, "required": ["b"]},
        ]
    }
    conv = convert(schema, "gemini")
    assert "allOf" not in conv.schema and set(conv.schema["required"]) == {"a", "b"}
    assert roundtrip({"a": "x", "b": 2}, schema, "openai-strict") == {"a": "x", "b": 2}


def test_draft04_definitions_and_boolean_exclusive_bounds() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "definitions": {"n": {"type": "number", "maximum": 10, "exclusiveMaximum": True}},
        "type": "object",
        "properties": {"x": {"$ref": "#/definitions/n"}},
    }
    conv = convert(schema, "openai-strict")
    assert conv.schema["$defs"]["n"]["exclusiveMaximum"] == 10 and "maximum" not in conv.schema["$defs"]["n"]


def test_unexpressible_schemas_raise_schema_error() -> None:
    with pytest.raises(SchemaError):
        convert({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}, "gemini")
    with pytest.raises(SchemaError):
        convert({"type": "objekt"}, "openai-strict")
    with pytest.raises(SchemaError, match="Unknown schema dialect"):
        convert({"type": "string"}, "cobol")  # type: ignore[arg-type]


def test_identity_dialects_and_copies() -> None:
    conv = convert(PERSON, "jsonschema")
    assert conv.schema == PERSON and conv.lossless
    conv.schema["properties"].clear()
    assert convert(PERSON, "llguidance").schema == PERSON  # the cache hands out copies


def test_invalid_values_still_fail_the_final_check() -> None:
    bad = {"name": "", "age": -1}
    for dialect in ("openai-strict", "gemini", "anthropic", "bedrock"):
        back = restore(forward_instance(bad, PERSON, dialect), PERSON, dialect)
        assert validate(back, PERSON)  # minLength/minimum were relaxed for the provider, not for the caller


def test_a_profile_carries_its_dialect_for_both_directions() -> None:
    from chainform.schema.dialects import Dialect, get_dialect
    from chainform.types import ModelProfile

    profile = ModelProfile(schema_dialect="openai-strict")
    dialect = profile.dialect
    assert (
        isinstance(dialect, Dialect)
        and dialect is get_dialect("openai-strict")
        and dialect.name == "openai-strict"
    )
    conv = dialect.convert(PERSON)
    assert conv.schema == convert(PERSON, "openai-strict").schema and conv.dialect == "openai-strict"
    value = {"name": "Ada", "age": 36}
    sent = dialect.forward(value, PERSON)
    assert sent != value and dialect.restore(sent, PERSON) == value == restore(sent, PERSON, "openai-strict")
    with pytest.raises(SchemaError, match="Unknown schema dialect"):
        get_dialect("yaml")
