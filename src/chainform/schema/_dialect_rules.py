"""What each provider's schema language accepts, as data: one `Policy` per dialect (`POLICIES`) and the
documented size limits checked on a converted schema before it is ever sent.

The converter (`_dialect_convert`, `_dialect_shapes`) reads a policy and nothing else about a provider.
A provider answers an over-large schema with a 400 at request time, after the user has paid for the
round trip; `check_limits` names the limit up front as a `SchemaError`. The numbers are the documented
ones (OpenAI Structured Outputs "Supported schemas", as of 2026-11).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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


@dataclass(frozen=True)
class Policy:
    """What one provider's schema language accepts, as data."""

    keep: frozenset[str]  # constraint keywords passed through unchanged (when not rewritten)
    formats: frozenset[str] | None = None  # string formats kept; None = every format
    close_objects: bool = False  # additionalProperties: false on every object (open keys as pairs)
    all_required: bool = False  # every property required; optional ones become nullable
    wrap_root: bool = False  # a non-object root goes under {"value": ...}
    refs: Literal["keep", "inline"] = "keep"
    recursion: bool = True  # may a converted schema refer to itself?
    inline_depth: int = 3  # how often a recursive $ref is unrolled when refs are inlined
    nullable_keyword: bool = False  # OpenAPI "nullable: true" instead of "null" in type
    enums: Literal["any", "primitive", "string"] = "any"
    const_to_enum: bool = False
    typed: bool = False  # every schema must state a type (untyped ones become a scalar anyOf)
    property_ordering: bool = False  # Gemini: say the order properties should be generated in
    max_min_items: int | None = None  # largest minItems accepted (Anthropic: 1)
    simple_patterns: bool = False  # no lookaround/backreferences in pattern
    oneof_as_anyof: bool = True
    limits: dict[str, int] = field(default_factory=dict)  # documented provider limits (OPENAI_LIMITS)


_OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_NUMERIC = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})

#: What each provider accepts, from its documentation (see docs/schema-dialects.md for the sources).
POLICIES: dict[str, Policy] = {
    # OpenAI Structured Outputs / strict function calling.
    "openai-strict": Policy(
        keep=_NUMERIC | {"pattern", "format", "minItems", "maxItems", "title"},
        formats=_OPENAI_FORMATS,
        close_objects=True,
        all_required=True,
        wrap_root=True,
        refs="keep",
        enums="primitive",
        typed=True,
        limits=OPENAI_LIMITS,
    ),
    # Gemini responseSchema (OpenAPI 3.0 subset): no $ref, nullable instead of type arrays, string enums.
    "gemini": Policy(
        keep=frozenset({"minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern"})
        | {"minProperties", "maxProperties", "format", "title"},
        formats=frozenset({"date-time", "enum"}),
        refs="inline",
        recursion=True,
        inline_depth=3,
        nullable_keyword=True,
        enums="string",
        const_to_enum=True,
        typed=True,
        property_ordering=True,
    ),
    # Anthropic structured outputs / strict tool use: no recursion, no numeric or length bounds.
    "anthropic": Policy(
        keep=frozenset({"pattern", "format", "minItems", "const", "title"}),
        formats=_OPENAI_FORMATS | {"uri"},
        close_objects=True,
        wrap_root=True,
        refs="keep",
        recursion=False,
        enums="primitive",
        max_min_items=1,
        simple_patterns=True,
    ),
    # Bedrock Converse toolSpec.inputSchema.json: plain JSON Schema whose root is an object.
    "bedrock": Policy(
        keep=frozenset(
            {"minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "contains"}
            | _NUMERIC
            | {"minProperties", "maxProperties", "patternProperties", "propertyNames", "dependentRequired"}
            | {"additionalProperties", "prefixItems", "not", "if", "then", "else", "const", "title"}
            | {"dependentSchemas", "minContains", "maxContains"}
        ),
        wrap_root=True,
        refs="keep",
        oneof_as_anyof=False,
    ),
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
