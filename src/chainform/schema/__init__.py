"""Schemas: the concise DSL and resolving a schema from any of the forms users give."""

from chainform.schema.dsl import resolve_schema, schema_dsl

__all__ = ["resolve_schema", "schema_dsl"]
