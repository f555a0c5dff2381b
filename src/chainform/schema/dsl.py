"""The concise schema syntax ``llm`` users know, and `resolve_schema` for every way a schema is given.

``"name, age int, bio: a short bio"`` or one field per line (then descriptions may hold commas).
A field is ``name [type][: description]``; types are ``str`` (default), ``int``, ``float``, ``bool``;
every field is required.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

from chainform._json import MAX_DEPTH, copy_json
from chainform.errors import SchemaError

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_FIELD = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)(?:\s+(?P<type>\w+))?\s*(?::\s*(?P<desc>.*))?$", re.S)


def schema_dsl(text: str, multi: bool = False) -> dict[str, Any]:
    """JSON Schema for the concise syntax; ``multi=True`` wraps it in an ``items`` array."""
    parts = text.splitlines() if "\n" in text.strip() else text.split(",")
    properties: dict[str, Any] = {}
    for raw in parts:
        part = raw.strip()
        if not part:
            continue
        m = _FIELD.match(part)
        if m is None:
            raise SchemaError(f"cannot read schema field {part!r}: expected 'name [type][: description]'")
        name, kind, desc = m.group("name"), m.group("type") or "str", (m.group("desc") or "").strip()
        if kind not in _TYPES:
            raise SchemaError(f"field {name!r}: unknown type {kind!r}; use one of {', '.join(_TYPES)}")
        if name in properties:
            raise SchemaError(f"field {name!r} is defined twice")
        properties[name] = {"type": _TYPES[kind], **({"description": desc} if desc else {})}
    if not properties:
        raise SchemaError("the schema text defines no fields")
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": list(properties)}
    return multi_schema(schema) if multi else schema


def multi_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`--schema-multi`: an object holding a list of items of `schema` under ``items``."""
    return {
        "type": "object",
        "properties": {"items": {"type": "array", "items": schema}},
        "required": ["items"],
    }


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise SchemaError(f"{source} is nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def _from_text(text: str) -> Any:
    stripped = text.strip()
    if not stripped:
        raise SchemaError("the schema is empty")
    if stripped[0] in "{[":
        return _parse_json(stripped, "the schema")
    looks_like_path = stripped.endswith(".json") or os.sep in stripped or stripped.startswith("~")
    if looks_like_path and "\n" not in stripped:
        return _from_file(Path(stripped))
    return schema_dsl(stripped)


def _from_file(path: Path) -> Any:
    path = path.expanduser()
    if not path.is_file():
        raise SchemaError(f"schema file not found: {path}")
    try:
        return _parse_json(path.read_text(encoding="utf-8"), f"schema file {path}")
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"cannot read schema file {path}: {exc}") from None


def resolve_schema(schema: Any) -> dict[str, Any]:
    """A JSON Schema dict from a dict, JSON text, a ``.json`` path, DSL text or a pydantic model class.

    Other Python types pydantic can describe (dataclasses, TypedDicts...) are accepted too.
    Raises `SchemaError` for anything malformed, including a result that is not valid JSON Schema.
    """
    if isinstance(schema, dict):
        result: Any = schema
    elif isinstance(schema, os.PathLike):
        result = _from_file(Path(os.fspath(schema)))
    elif isinstance(schema, str):
        result = _from_text(schema)
    elif isinstance(schema, type):
        result = type_schema(schema)
    else:
        raise SchemaError(
            f"cannot use a {type(schema).__name__} as a schema; give a dict, JSON, DSL text or a class"
        )
    if not isinstance(result, dict):
        raise SchemaError(f"a schema must be a JSON object, got {type(result).__name__}")
    from chainform.schema.validate import check_schema

    check_schema(result)
    return result


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema pydantic gives a Python type (a model, dataclass, TypedDict, `list[int]`, ...):
    the one place a type becomes a schema. Built once per type (a quarter of a millisecond each, and a
    program runs the same type through many chains); every caller gets its own copy."""
    try:
        schema: dict[str, Any] = copy_json(_type_schema(tp))
        return schema
    except TypeError:  # an unhashable type expression: built every time
        return _type_schema.__wrapped__(tp)


@functools.lru_cache(maxsize=256)
def _type_schema(tp: Any) -> dict[str, Any]:
    from pydantic import BaseModel, TypeAdapter

    try:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp.model_json_schema()
        return TypeAdapter(tp).json_schema()
    except Exception as exc:  # pydantic raises several error types for undescribable types
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        name = getattr(tp, "__name__", repr(tp))
        raise SchemaError(f"cannot describe {name} as JSON Schema: {reason}") from None
