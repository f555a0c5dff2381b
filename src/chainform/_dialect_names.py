"""The names of the JSON-Schema dialects (one per provider family).

A module of its own, with nothing but `typing` behind it, so that `chainform schemas show --help`
can list the choices without loading `chainform.types` (pydantic_core and every content type).
"""

from __future__ import annotations

from typing import Literal

SchemaDialect = Literal["jsonschema", "openai-strict", "gemini", "anthropic", "bedrock", "llguidance"]
