"""The concise schema DSL and resolve_schema."""

import json
import re
import types
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from pydantic import BaseModel

from chainform.errors import SchemaError
from chainform.schema import resolve_schema, schema_dsl

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

EXPECTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "bio": {"type": "string", "description": "a short bio"},
    },
    "required": ["name", "age", "bio"],
}


def test_comma_separated() -> None:
    assert schema_dsl("name, age int, bio: a short bio") == EXPECTED


def test_one_field_per_line_allows_commas_in_descriptions() -> None:
    schema = schema_dsl(
        """
        name: the name, in full
        score float: between 0 and 1
        ok bool
        note str
        """
    )
    assert schema["properties"] == {
        "name": {"type": "string", "description": "the name, in full"},
        "score": {"type": "number", "description": "between 0 and 1"},
        "ok": {"type": "boolean"},
        "note": {"type": "string"},
    }
    assert schema["required"] == ["name", "score", "ok", "note"]


def test_multi_wraps_in_items() -> None:
    assert schema_dsl("name, age int, bio: a short bio", multi=True) == {
        "type": "object",
        "properties": {"items": {"type": "array", "items": EXPECTED}},
        "required": ["items"],
    }


def test_dsl_schema_validates_instances() -> None:
    validator = jsonschema.Draft202012Validator(schema_dsl("name, age int"))
    assert validator.is_valid({"name": "a", "age": 3})
    assert not validator.is_valid({"name": "a"})
    assert not validator.is_valid({"name": "a", "age": "3"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name, age integer", "unknown type 'integer'"),
        ("name, name int", "defined twice"),
        ("name age int", "cannot read schema field 'name age int'"),
        (" , ", "no fields"),
        ("9lives int", "cannot read"),
    ],
)
def test_dsl_errors(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        schema_dsl(text)


class Dog(BaseModel):
    name: str
    age: int


@dataclass
class Cat:
    name: str


def test_resolve_every_form(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(EXPECTED))
    assert resolve_schema(EXPECTED) == EXPECTED
    assert resolve_schema(json.dumps(EXPECTED)) == EXPECTED
    assert resolve_schema(str(path)) == EXPECTED
    assert resolve_schema(path) == EXPECTED
    assert resolve_schema("name, age int, bio: a short bio") == EXPECTED
    assert resolve_schema(Dog) == Dog.model_json_schema()
    assert resolve_schema(Cat)["properties"] == {"name": {"title": "Name", "type": "string"}}


def test_resolve_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(SchemaError, match=r"not valid JSON.*line 1, column 2"):
        resolve_schema("{nope")
    with pytest.raises(SchemaError, match=re.escape(f"schema file {bad}")):
        resolve_schema(str(bad))
    with pytest.raises(SchemaError, match="not found"):
        resolve_schema(str(tmp_path / "missing.json"))
    with pytest.raises(SchemaError, match=r"JSON Schema at \$?\.?type"):
        resolve_schema({"type": "strnig"})
    with pytest.raises(SchemaError, match="JSON Schema"):
        resolve_schema('{"properties": {"a": {"minimum": "3"}}}')
    with pytest.raises(SchemaError, match="must be a JSON object"):
        resolve_schema("[1, 2]")
    with pytest.raises(SchemaError, match="empty"):
        resolve_schema("   ")
    with pytest.raises(SchemaError, match="cannot use a int"):
        resolve_schema(3)
    with pytest.raises(SchemaError, match="cannot describe"):
        resolve_schema(types.FunctionType)
