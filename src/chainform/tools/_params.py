"""What a tool's parameters are: the callable whose signature counts and its raw parameters.

Functions, bound and unbound methods, static/class methods, classes (their ``__init__``),
dataclasses, NamedTuples, TypedDicts and pydantic models each keep their parameters in a different
place; this module turns all of them into one list for tools/_schema.py to describe.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import typing_extensions
from pydantic import BaseModel, Field

from chainform.errors import ToolDefinitionError

EMPTY = inspect.Parameter.empty


def _hide_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


# a TypedDict key that may be left out: no default to show, and left out of the result when unset
OPTIONAL_KEY = Field(default=None, json_schema_extra=_hide_default)


def class_doc(cls: Any) -> str | None:
    """The class's own docstring: not inherited, and not the signature dataclasses make up."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc.startswith(f"{cls.__name__}("):
        return None
    return doc


def init_of(cls: type) -> Any:
    return next((k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__), object.__init__)


def qualname(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj))


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def is_std_dataclass(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp) and not hasattr(tp, "__pydantic_validator__")


def call_target(obj: Any) -> tuple[Any, bool, str]:
    """(callable whose signature matters, whether its first parameter is self/cls, call style)."""
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__, isinstance(obj, classmethod), "call"
    if isinstance(obj, type):
        if is_model(obj):
            return obj, False, "model"
        if is_typeddict(obj):
            return obj, False, "typeddict"
        if is_namedtuple(obj) or dataclasses.is_dataclass(obj):
            return obj, False, "call"
        return init_of(obj), True, "call"
    if inspect.isroutine(obj):
        params = list(signature_of(obj).parameters)
        unbound = (
            inspect.isfunction(obj)
            and "." in obj.__qualname__
            and "<locals>" not in obj.__qualname__.split(".")[-2]
        )
        return obj, bool(unbound and params and params[0] in ("self", "cls")), "call"
    if callable(obj):
        return obj.__call__, False, "call"
    raise ToolDefinitionError(f"{obj!r} is not a function, method or class")


def signature_of(fn: Any) -> inspect.Signature:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"{qualname(fn)}: no inspectable signature ({exc})") from exc


def raw_params(
    obj: Any, target: Any, drop_first: bool, kind: str, where: str
) -> list[tuple[str, Any, Any, Any]]:
    if kind == "typeddict":
        required = obj.__required_keys__
        return [
            (n, inspect.Parameter.KEYWORD_ONLY, a, EMPTY if n in required else OPTIONAL_KEY)
            for n, a in obj.__annotations__.items()
        ]
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        out = []
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            default = f.default
            if f.default_factory is not dataclasses.MISSING:
                default = Field(default_factory=f.default_factory)
            out.append(
                (
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    f.type,
                    EMPTY if default is dataclasses.MISSING else default,
                )
            )
        return out
    params = list(signature_of(target).parameters.values())
    if drop_first and params:
        params = params[1:]
    return [(p.name, p.kind, p.annotation, p.default) for p in params]
