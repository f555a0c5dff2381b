"""Schemas: the concise DSL, resolving user input, validation, provider dialects, partial JSON.

`chainform.schema.validate` is the validation module (its `validate(value, schema)` lists errors).
"""

from chainform.schema.dialects import ConvertedSchema, convert, restore
from chainform.schema.dsl import resolve_schema, schema_dsl
from chainform.schema.partial import parse_partial
from chainform.schema.validate import check_schema, is_valid

__all__ = [
    "ConvertedSchema",
    "check_schema",
    "convert",
    "is_valid",
    "parse_partial",
    "resolve_schema",
    "restore",
    "schema_dsl",
]
