"""Safe name spaces: the model can call what was registered, by its exact name, and nothing else.

Lookups are plain dictionary lookups of a string key. Nothing is resolved with ``getattr``,
``eval`` or an import, so names such as ``__class__``, ``os.system`` or ``f.__globals__`` can only
ever be "unknown", never a path to something that was not registered.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator, Mapping
from typing import Any

from chainform.errors import ToolDefinitionError, UnknownToolError
from chainform.tools._tool import Tool, Toolbox


class Namespace(Mapping[str, Tool]):
    """An immutable mapping of tool name to `Tool`, holding exactly what was registered."""

    def __init__(self, tools: list[Tool]) -> None:
        table: dict[str, Tool] = {}
        for tool in tools:
            if tool.name.startswith("_"):
                raise ToolDefinitionError(f"tool name {tool.name!r} is private; give it a public name")
            if tool.name in table:
                raise ToolDefinitionError(
                    f"two tools are named {tool.name!r}; rename one (Tool.from_function(fn, name=...))"
                )
            table[tool.name] = tool
        self._tools = types.MappingProxyType(table)

    def __getitem__(self, name: str) -> Tool:
        if type(name) is not str or name not in self._tools:
            raise UnknownToolError(f"no tool named {name!r}; available: {', '.join(self._tools) or '(none)'}")
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return type(name) is str and name in self._tools

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's ``{"name", "description", "parameters"}``."""
        return [t.schema() for t in self._tools.values()]

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Any:
        """Validate and call the tool registered as ``name``."""
        return self[name].invoke(arguments)

    async def acall(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Any:
        """Async `call`: sync tools run in a thread."""
        return await self[name].ainvoke(arguments)

    def __repr__(self) -> str:
        return f"Namespace({', '.join(self._tools)})"


def _public_methods(obj: Any) -> list[Tool]:
    """Public functions of a module (defined in it) or public methods of an object's class."""
    if isinstance(obj, types.ModuleType):
        return [
            Tool.from_function(v)
            for n, v in vars(obj).items()
            if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == obj.__name__
        ]
    out: list[Tool] = []
    seen: set[str] = set()
    for klass in reversed(type(obj).__mro__):
        if klass is object:
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            if inspect.isfunction(attr) or isinstance(attr, (staticmethod, classmethod)):
                seen.add(name)
                out.append(Tool.from_function(getattr(obj, name)))
    if not out:
        raise ToolDefinitionError(f"{obj!r} has no public methods to register")
    return out


def namespace(*functions_or_objects: Any) -> Namespace:
    """Register functions, classes, `Tool` objects, `Toolbox` instances, modules or objects.

    A `Toolbox` contributes its tools; another object (or module) its public methods (functions).
    """
    tools: list[Tool] = []
    for item in functions_or_objects:
        if isinstance(item, Tool):
            tools.append(item)
        elif isinstance(item, Namespace):
            tools.extend(item.tools)
        elif isinstance(item, Toolbox):
            tools.extend(item.tools())
        elif inspect.isroutine(item) or isinstance(item, type):
            tools.append(Tool.from_function(item))
        else:
            tools.extend(_public_methods(item))
    return Namespace(tools)


def call(ns: Namespace, name: str, arguments: Mapping[str, Any] | str | None = None) -> Any:
    """Call the tool registered in ``ns`` under exactly ``name``; anything else is `UnknownToolError`."""
    return ns.call(name, arguments)
