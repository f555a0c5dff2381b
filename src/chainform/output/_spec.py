"""OutputSpec: the user's schema in every form the strategies need, and the one validation path.

Finding the JSON in a model's reply (`extract_json`): fenced, bare, or surrounded by chatter.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from chainform._json import canonical_json, content_id, decode_prefix, load_json
from chainform.errors import JSONLimitError, SchemaError, StructuredOutputGenerationError
from chainform.types import FunctionSpec, ResponseFormat, arguments_error

if TYPE_CHECKING:
    from chainform.schema.dialects import Dialect

OUTPUT_TOOL_NAME = "final_result"


@dataclass
class OutputSpec:
    """A JSON Schema plus, when the user gave a Python type, the pydantic validator behind it."""

    schema: dict[str, Any]
    python_type: Any = None
    name: str = "response"
    description: str | None = None
    content: tuple[str, str] | None = None
    """The schema's canonical JSON and its content address (the log's schema id), when known:
    worked out once per Python type, not once per chain."""

    @classmethod
    def from_user(cls, schema: Any) -> OutputSpec:
        """Accept a dict, JSON text, a JSON file path, schema DSL, a pydantic model or any pydantic-able type."""
        if isinstance(schema, OutputSpec):
            return schema
        if isinstance(schema, dict | str) or hasattr(schema, "__fspath__"):
            from chainform.schema.dsl import resolve_schema

            resolved = resolve_schema(schema)
            return cls(resolved, None, _title(resolved), resolved.get("description"))
        if isinstance(schema, type) or hasattr(schema, "__origin__"):
            from chainform.schema.dsl import type_schema

            js = type_schema(schema)
            try:
                content: tuple[str, str] | None = _type_content(schema)
            except TypeError:  # an unhashable type expression: not cached
                content = None
            name = getattr(schema, "__name__", "response")
            return cls(js, schema, name, js.get("description"), content)
        raise SchemaError(
            f"unsupported schema {type(schema).__name__}: give a dict, JSON text, a file path, "
            "schema DSL ('name, age int') or a pydantic model"
        )

    def response_format(self) -> ResponseFormat:
        return ResponseFormat.json_schema(
            self.schema, name=_safe_name(self.name), description=self.description
        )

    @property
    def wraps_for_tool(self) -> bool:
        return self.schema.get("type") != "object"

    def output_tool(self) -> FunctionSpec:
        """The `final_result` tool whose arguments are the answer (non-object roots are wrapped)."""
        params: dict[str, Any]
        if self.wraps_for_tool:
            inner = copy.deepcopy(self.schema)
            defs = inner.pop("$defs", None)
            params = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
            if defs:
                params["$defs"] = defs
        else:
            params = self.schema
        return FunctionSpec(
            OUTPUT_TOOL_NAME,
            "Call this exactly once, with the final answer, when you are done. "
            "Its arguments ARE the answer and must match the schema."
            + (f" The answer: {self.description}" if self.description else ""),
            params,
        )

    def instructions(self) -> str:
        """How the prompted strategy describes the schema to the model."""
        return (
            "Answer with ONE JSON value that validates against this JSON Schema, and nothing else "
            "(no prose; a ```json fence is fine):\n" + json.dumps(self.schema, indent=2)
        )

    def check(self, data: Any, *, dialect: Dialect | str = "jsonschema", raw_text: str = "") -> Any:
        """Restore `data` from the dialect it was asked in (the profile's `Dialect`, or its name) and
        validate it against the original schema; returns the value (a model instance for pydantic types)."""
        from chainform.schema.dialects import get_dialect
        from chainform.schema.validate import check_value

        data = (get_dialect(dialect) if isinstance(dialect, str) else dialect).restore(data, self.schema)
        data, errors = check_value(data, self.schema)
        if errors:
            listed = "\n".join(f"- {e}" for e in errors[:20])
            raise StructuredOutputGenerationError(
                f"The output does not match the schema:\n{listed}", raw_text=raw_text, value=data
            )
        if self.python_type is None:
            return data
        try:
            return self._adapter.validate_python(data)
        except ValidationError as exc:
            listed = "\n".join(
                f"- {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
            )
            raise StructuredOutputGenerationError(
                f"The output failed validation:\n{listed}", raw_text=raw_text, value=data
            ) from exc

    @functools.cached_property
    def _adapter(self) -> Any:
        """The pydantic validator of `python_type`, built once per type (each chain makes its spec)."""
        try:
            return _type_adapter(self.python_type)
        except TypeError:  # an unhashable type (Annotated with a dict in it): built for this spec
            return TypeAdapter(self.python_type)

    def check_text(self, text: str, *, dialect: Dialect | str = "jsonschema") -> Any:
        try:
            data = extract_json(text)
        except ValueError as exc:
            raise StructuredOutputGenerationError(str(exc), raw_text=text) from exc
        return self.check(data, dialect=dialect, raw_text=text)

    def check_tool_arguments(
        self, arguments: dict[str, Any] | None, raw: str, *, dialect: Dialect | str
    ) -> Any:
        if arguments is None:
            reason = arguments_error(raw) or f"arguments are not a JSON object: {raw[:200]!r}"
            raise StructuredOutputGenerationError(f"The {OUTPUT_TOOL_NAME} {reason}", raw_text=raw)
        data: Any = arguments
        if self.wraps_for_tool:
            if "result" not in arguments:
                raise StructuredOutputGenerationError(
                    f"{OUTPUT_TOOL_NAME} needs a 'result' argument holding the answer", raw_text=raw
                )
            data = arguments["result"]
        return self.check(data, dialect=dialect, raw_text=raw)


def _title(schema: dict[str, Any]) -> str:
    title = schema.get("title")
    return title if isinstance(title, str) and title else "response"


@functools.lru_cache(maxsize=256)
def _type_adapter(python_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(python_type)


@functools.lru_cache(maxsize=256)
def _type_content(schema: Any) -> tuple[str, str]:
    """The type's canonical schema text and content address, worked out once per type."""
    from chainform.schema.dsl import type_schema

    text = canonical_json(type_schema(schema))
    return text, content_id(text)


def _safe_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
    return cleaned or "response"


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 32  # brackets tried as the start of the JSON; each try may scan the rest of the text


def extract_json(text: str) -> Any:
    """The JSON value in `text`. Raises ValueError saying what was wrong (fed back to the model)."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply was empty; expected a JSON value")
    try:
        return load_json(stripped)
    except JSONLimitError:
        raise
    except ValueError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return load_json(block.strip())
        except ValueError:
            continue
    first_error: str | None = None
    for _, match in zip(range(_MAX_STARTS), re.finditer(r"[\[{]", stripped), strict=False):
        try:
            return decode_prefix(stripped, match.start())[0]
        except JSONLimitError:
            raise
        except ValueError as exc:
            first_error = first_error or str(exc)
    detail = f" ({first_error})" if first_error else ""
    raise ValueError(f"no valid JSON found in the reply{detail}: {stripped[:200]!r}")
