"""Provider size limits, checked on the converted schema before it is ever sent.

A provider answers an over-large schema with a 400 at request time, after the user has paid for the
round trip; `check_limits` names the limit up front as a `SchemaError`. The numbers are the documented
ones (OpenAI Structured Outputs "Supported schemas", as of 2026-11), held as data in each `Policy`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chainform.errors import SchemaError

JSON = Any

OPENAI_LIMITS: dict[str, int] = {
    "nesting_depth": 10,  # levels of nested objects
    "properties": 5000,  # object properties in the whole schema
    "enum_values": 1000,  # enum values in the whole schema
    "name_chars": 120_000,  # characters of property names, definition names, enum and const values
    "large_enum_chars": 15_000,  # characters of one string enum with more than 250 values
}
_LARGE_ENUM = 250
_WHAT = {
    "nesting_depth": "levels of object nesting",
    "properties": "object properties in total",
    "enum_values": "enum values in total",
    "name_chars": "characters of property names, definition names and enum/const values",
    "large_enum_chars": "characters in one string enum of more than 250 values",
}


@dataclass
class _Size:
    nesting_depth: int = 0
    properties: int = 0
    enum_values: int = 0
    name_chars: int = 0
    large_enum_chars: int = 0


def measure(schema: JSON) -> _Size:
    """What the provider counts: nesting of objects (each `$defs` entry on its own), names, enums."""
    size = _Size()

    def walk(node: JSON, depth: int) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, depth)
            return
        if not isinstance(node, dict):
            return
        props = node.get("properties")
        if isinstance(props, dict):
            depth += 1
            size.nesting_depth = max(size.nesting_depth, depth)
            size.properties += len(props)
            size.name_chars += sum(len(k) for k in props)
        enum = node.get("enum")
        if isinstance(enum, list):
            size.enum_values += len(enum)
            chars = sum(len(v) for v in enum if isinstance(v, str))
            size.name_chars += chars
            if len(enum) > _LARGE_ENUM and all(isinstance(v, str) for v in enum):
                size.large_enum_chars = max(size.large_enum_chars, chars)
        if isinstance(node.get("const"), str):
            size.name_chars += len(node["const"])
        for key, value in node.items():
            if key == "$defs" and isinstance(value, dict):
                size.name_chars += sum(len(k) for k in value)
                for sub in value.values():
                    walk(sub, 0)
            elif key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    walk(sub, depth)
            elif key not in ("enum", "const", "description", "title", "pattern", "format"):
                walk(value, depth)

    walk(schema, 0)
    return size


def check_limits(schema: JSON, limits: dict[str, int], dialect: str) -> None:
    """Raise `SchemaError` naming the first documented limit the converted schema exceeds."""
    if not limits:
        return
    size = measure(schema)
    for name, limit in limits.items():
        got = getattr(size, name)
        if got > limit:
            raise SchemaError(
                f"The schema exceeds the {dialect} limit {name}: {got} {_WHAT[name]}, at most {limit} allowed"
            )
