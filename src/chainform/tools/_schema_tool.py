"""`Tool.from_schema`: a tool whose parameters are a JSON Schema given as data, not read from Python.

MCP servers, agents used as tools and hand-written declarations all arrive as JSON Schema; their
arguments are checked with the same cached validator that checks model answers (schema/validate.py).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from chainform._json import load_json
from chainform.errors import ToolArgumentError, ToolDefinitionError
from chainform.schema.validate import check_schema, check_value
from chainform.tools._tool import Tool, check_name, settle


class SchemaTool(Tool):
    """A tool from (name, description, JSON Schema parameters, func); `func(**arguments)` runs it."""

    def __init__(
        self, name: str, description: str, parameters: dict[str, Any], func: Callable[..., Any]
    ) -> None:
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise ToolDefinitionError(f"tool {name!r}: parameters must be a JSON Schema of type object")
        if not callable(func):
            raise ToolDefinitionError(f"tool {name!r}: func must be callable, got {type(func).__name__}")
        check_schema(parameters)
        self.name = check_name(name)
        self.description = description or ""
        self.parameters = {"type": "object", "properties": {}, **parameters}
        self.fn = func
        call = getattr(func, "__call__", None)  # noqa: B004 - async callable objects
        self.is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(call)

    def renamed(self, name: str | None = None, description: str | None = None) -> Tool:
        return SchemaTool(
            name or self.name,
            self.description if description is None else description,
            self.parameters,
            self.fn,
        )

    def arguments(self, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """The arguments as a dict, checked against the JSON Schema (ToolArgumentError otherwise)."""
        if isinstance(arguments, (str, bytes)):
            try:
                text = arguments.decode() if isinstance(arguments, bytes) else arguments
                arguments = load_json(text or "{}")
            except ValueError as exc:
                raise ToolArgumentError(self.name, [f"arguments: not valid JSON ({exc})"]) from None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                self.name, [f"arguments: expected an object, got {type(arguments).__name__}"]
            )
        data, problems = check_value(dict(arguments), self.parameters)
        if problems:
            raise ToolArgumentError(self.name, problems)
        return dict(data)

    def validate(self, arguments: Mapping[str, Any] | str | None) -> Any:
        return self.arguments(arguments)

    def invoke(self, arguments: Mapping[str, Any] | str | None = None) -> Any:
        return settle(self.fn(**self.arguments(arguments)))

    async def ainvoke(self, arguments: Mapping[str, Any] | str | None = None) -> Any:
        data = self.arguments(arguments)
        result = self.fn(**data) if self.is_async else await asyncio.to_thread(self.fn, **data)
        return await result if inspect.isawaitable(result) else result

    def __repr__(self) -> str:
        return f"Tool.from_schema(name={self.name!r}, parameters={list(self.parameters['properties'])})"
