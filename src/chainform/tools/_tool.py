"""`Tool`: a described Python callable whose arguments are validated and converted before the call.

`SchemaTool` (`Tool.from_schema`) is the same idea with the parameters given as JSON Schema data
(MCP servers, agents used as tools, hand-written declarations); its arguments are checked with the
cached validator that checks model answers (schema/validate.py, imported on first use).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

import pydantic
from pydantic import BaseModel

from chainform._json import load_json
from chainform._lineage import RunContext
from chainform.errors import ToolArgumentError, ToolDefinitionError
from chainform.tools._params import call_target
from chainform.tools._schema import Spec, build_spec, call_with

# Dots are allowed (``math.factorial``, MCP prefixes); each provider gets a name it accepts (tools/_names.py).
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def check_name(name: str) -> str:
    """The tool name, or a ToolDefinitionError saying what a name may contain."""
    if not _NAME.match(name):
        raise ToolDefinitionError(
            f"tool name {name!r} must be 1-128 letters, digits, '_', '-' or '.'; pass name=..."
        )
    return name


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "arguments"


def format_errors(exc: pydantic.ValidationError) -> list[str]:
    """One line per bad field, naming the field, the problem and (briefly) the value given."""
    lines = []
    for err in exc.errors(include_url=False):
        text = f"{_where(err['loc'])}: {err['msg']}"
        if err["type"] not in ("missing", "extra_forbidden") and "input" in err:
            shown = repr(err["input"])
            text += f" (got {shown[:60] + '...' if len(shown) > 60 else shown})"
        lines.append(text)
    return lines


class Tool:
    """A callable the model may use: name, description, JSON Schema parameters and safe invocation.

    `invoke` validates the model's arguments against the signature and converts them into the
    annotated types (``Path``, enums, dataclasses, pydantic models, datetimes...) before calling.
    `requires_approval = True` makes a chain stop before running it, waiting for a person
    (docs/durable.md). A tool that `takes_context` is given the chain's `RunContext` too.
    """

    requires_approval: bool = False
    takes_context: bool = False

    def __init__(self, spec: Spec, *, name: str | None = None, description: str | None = None) -> None:
        self._spec = spec
        self.name: str = check_name(name or spec.name)
        self.description: str = spec.description if description is None else description
        self.parameters: dict[str, Any] = spec.schema
        self.fn: Callable[..., Any] = spec.target
        self.takes_context = spec.takes_context
        target = spec.target
        call = getattr(target, "__call__", None)  # noqa: B004 - async callable objects
        self.is_async: bool = inspect.iscoroutinefunction(target) or (
            not inspect.isroutine(target)
            and not isinstance(target, type)
            and inspect.iscoroutinefunction(call)
        )

    @classmethod
    def from_function(cls, fn: Any, name: str | None = None, description: str | None = None) -> Tool:
        """Describe ``fn`` (function, async function, method, class) as a tool."""
        if isinstance(fn, Tool):
            return fn if name is None and description is None else fn.renamed(name, description)
        if not isinstance(fn, type) and call_target(fn)[1] and inspect.isfunction(fn):
            raise ToolDefinitionError(
                f"{fn.__qualname__} is an unbound method; pass it bound to an instance (obj.{fn.__name__})"
            )
        return cls(build_spec(fn, name), name=name, description=description)

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: dict[str, Any],
        func: Callable[..., Any],
        *,
        takes_context: bool = False,
    ) -> Tool:
        """A tool described by a JSON Schema alone; `func(**arguments)` (sync or async) runs it.

        Arguments are checked against `parameters` (JSON Schema) instead of a Python signature,
        so any schema works: from MCP servers, OpenAPI documents or hand-written dicts.
        `takes_context`: `func(context, **arguments)`, `context` the `RunContext` of the chain
        calling it (None outside a chain); the model never sees it.
        """
        return SchemaTool(name, description, parameters, func, takes_context=takes_context)

    def renamed(self, name: str | None = None, description: str | None = None) -> Tool:
        """The same tool offered under another name and/or description."""
        return Tool(self._spec, name=name or self.name, description=description)

    def schema(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``, the shape `get_schema` returns."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def validate(self, arguments: Mapping[str, Any] | str | None) -> BaseModel:
        """Check and convert arguments (a mapping or a JSON object string) without calling."""
        if not isinstance(arguments, (str, bytes, Mapping, type(None))):
            raise ToolArgumentError(
                self.name, [f"arguments: expected an object, got {type(arguments).__name__}"]
            )
        try:
            if isinstance(arguments, (str, bytes)):
                return self._spec.model.model_validate_json(arguments or "{}")
            return self._spec.model.model_validate(dict(arguments or {}))
        except pydantic.ValidationError as exc:
            raise ToolArgumentError(self.name, format_errors(exc)) from None

    def invoke(self, arguments: Mapping[str, Any] | str | None = None) -> Any:
        """Validate, convert and call. An async tool is run to completion (in a worker thread if a
        loop is already running in this thread)."""
        return settle(call_with(self._spec, self.validate(arguments)))

    async def ainvoke(
        self, arguments: Mapping[str, Any] | str | None = None, *, context: RunContext | None = None
    ) -> Any:
        """Validate, convert and call; a sync tool runs in a worker thread (`asyncio.to_thread`), so
        the event loop stays free and a turn's calls run side by side. `context` goes to a tool
        that `takes_context` (a parameter annotated `RunContext`)."""
        validated = self.validate(arguments)
        if self.is_async:
            result = call_with(self._spec, validated, context)
            return await result if inspect.isawaitable(result) else result
        result = await asyncio.to_thread(call_with, self._spec, validated, context)
        return await result if inspect.isawaitable(result) else result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if the tool were not there."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, parameters={list(self.parameters.get('properties', {}))})"


def _call_kw(fn: Callable[..., Any], data: dict[str, Any]) -> Any:
    return fn(**data)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def settle(result: Any) -> Any:
    """A sync caller's view of a tool's result: an awaitable is run to completion (in a worker
    thread when this thread already runs a loop)."""
    if not inspect.isawaitable(result):
        return result
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(result))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _await(result)).result()


class Toolbox:
    """Subclass it; every public method becomes a tool, and all of them share the instance's state.

    >>> class Counter(Toolbox):
    ...     def __init__(self) -> None:
    ...         self.n = 0
    ...     def add(self, k: int) -> int:
    ...         self.n += k
    ...         return self.n
    >>> [t.name for t in Counter().tools()]
    ['add']
    """

    def tools(self) -> list[Tool]:
        """One `Tool` per public method (methods of subclasses, in definition order)."""
        cached: list[Tool] | None = self.__dict__.get("_chainform_tools")
        if cached is not None:
            return list(cached)
        names: list[str] = []
        for klass in reversed(type(self).__mro__):
            if klass in (Toolbox, object):
                continue
            for attr_name, attr in vars(klass).items():
                if attr_name.startswith("_") or attr_name in names or attr_name in vars(Toolbox):
                    continue
                if inspect.isfunction(attr) or isinstance(attr, (staticmethod, classmethod)):
                    names.append(attr_name)
        found = [Tool.from_function(getattr(self, n)) for n in names]
        self.__dict__["_chainform_tools"] = found
        return list(found)


class SchemaTool(Tool):
    """A tool from (name, description, JSON Schema parameters, func); `func(**arguments)` runs it."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        func: Callable[..., Any],
        *,
        takes_context: bool = False,
    ) -> None:
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise ToolDefinitionError(f"tool {name!r}: parameters must be a JSON Schema of type object")
        if not callable(func):
            raise ToolDefinitionError(f"tool {name!r}: func must be callable, got {type(func).__name__}")
        from chainform.schema.validate import check_schema

        check_schema(parameters)
        self.name = check_name(name)
        self.description = description or ""
        self.parameters = {"type": "object", "properties": {}, **parameters}
        self.fn = func
        self.takes_context = takes_context
        call = getattr(func, "__call__", None)  # noqa: B004 - async callable objects
        self.is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(call)

    def renamed(self, name: str | None = None, description: str | None = None) -> Tool:
        return SchemaTool(
            name or self.name,
            self.description if description is None else description,
            self.parameters,
            self.fn,
            takes_context=self.takes_context,
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
        from chainform.schema.validate import check_value

        data, problems = check_value(dict(arguments), self.parameters)
        if problems:
            raise ToolArgumentError(self.name, problems)
        return dict(data)

    def validate(self, arguments: Mapping[str, Any] | str | None) -> Any:
        return self.arguments(arguments)

    def invoke(self, arguments: Mapping[str, Any] | str | None = None) -> Any:
        return settle(self._fn(None)(**self.arguments(arguments)))

    async def ainvoke(
        self, arguments: Mapping[str, Any] | str | None = None, *, context: RunContext | None = None
    ) -> Any:
        data = self.arguments(arguments)
        fn = self._fn(context)
        result = fn(**data) if self.is_async else await asyncio.to_thread(_call_kw, fn, data)
        return await result if inspect.isawaitable(result) else result

    def _fn(self, context: RunContext | None) -> Callable[..., Any]:
        """What runs the tool: `fn`, given `context` first when it `takes_context`."""
        return functools.partial(self.fn, context) if self.takes_context else self.fn

    def __repr__(self) -> str:
        return f"Tool.from_schema(name={self.name!r}, parameters={list(self.parameters['properties'])})"
