"""JSON Schema for Python callables and classes.

The signature becomes a pydantic model built on the fly, so the schema the model sees and the
validation its arguments go through come from one source. Plain classes and stdlib dataclasses in
annotations are rewritten into generated models (that convert back to the real class after
validation); pydantic models, enums, TypedDicts and NamedTuples are left to pydantic.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ForwardRef, Literal, Union

import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.fields import FieldInfo

from chainform._lineage import RunContext
from chainform.errors import SchemaError, ToolDefinitionError
from chainform.tools import _docs
from chainform.tools._params import (
    EMPTY,
    call_target,
    class_doc,
    init_of,
    is_model,
    is_namedtuple,
    is_std_dataclass,
    is_typeddict,
    qualname,
    raw_params,
)

_NATIVE_OK: dict[type, bool] = {}
_ANNOTATED: Any = Annotated  # subscripted with runtime values, which type checkers cannot follow


@dataclass
class Param:
    """One argument of the tool: its name, how to pass it to the callable, and its model field."""

    name: str
    field: str  # "" for the parameter annotated RunContext: the engine gives it, the model never
    kind: inspect._ParameterKind
    required: bool


@dataclass
class Spec:
    """Everything `Tool` needs: the description parts, the arguments model and how to call back."""

    name: str
    summary: str
    returns: str
    model: type[BaseModel]
    params: list[Param]
    target: Callable[..., Any]
    kind: str  # "call" (keyword/positional call), "model" (a pydantic model), "typeddict"
    schema: dict[str, Any]

    @property
    def takes_context(self) -> bool:
        """Whether a parameter is annotated RunContext (the chain's, given beside the arguments)."""
        return any(not p.field for p in self.params)

    @property
    def description(self) -> str:
        return "\n\n".join(p for p in (self.summary, self.returns) if p)


def _native(tp: type) -> bool:
    """Whether pydantic describes and validates this class on its own."""
    if tp not in _NATIVE_OK:
        try:
            TypeAdapter(tp)
            _NATIVE_OK[tp] = True
        except pydantic.PydanticSchemaGenerationError:
            _NATIVE_OK[tp] = False
    return _NATIVE_OK[tp]


def strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` keywords; they add tokens and no meaning for a model."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas"):
            out[key] = {k: strip_titles(v) for k, v in value.items()}
        elif key in ("prefixItems", "anyOf", "allOf", "oneOf") and isinstance(value, list):
            out[key] = [strip_titles(v) for v in value]
        elif key in (
            "items",
            "additionalProperties",
            "not",
            "if",
            "then",
            "else",
            "contains",
            "propertyNames",
        ):
            out[key] = strip_titles(value)
        else:
            out[key] = value
    return out


def type_name(tp: Any) -> str:
    """A short, readable spelling of an annotation for the tool description."""
    if tp is type(None) or tp is None:
        return "None"
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return str(tp).replace("typing.", "").replace("collections.abc.", "").replace("NoneType", "None")


class _Builder:
    """Builds argument models; shares generated class models (and recursion) across one schema."""

    def __init__(self) -> None:
        self.memo: dict[type, Any] = {}
        self.forward: dict[str, Any] = {}
        self.models: list[type[BaseModel]] = []

    # -- annotations -------------------------------------------------------------------------
    def rewrite(self, tp: Any, globalns: dict[str, Any], where: str) -> Any:
        """Return an annotation pydantic understands, with plain classes swapped for models."""
        if isinstance(tp, str):
            tp = ForwardRef(tp)
        if isinstance(tp, ForwardRef):
            try:
                tp = eval(tp.__forward_arg__, globalns, dict(self._names()))
            except Exception as exc:
                raise ToolDefinitionError(
                    f"{where}: cannot resolve annotation {tp.__forward_arg__!r} ({exc})"
                ) from exc
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Annotated:
            meta = [Field(description=m) if isinstance(m, str) else m for m in tp.__metadata__]
            return _ANNOTATED[tuple([self.rewrite(args[0], globalns, where), *meta])]
        if getattr(origin, "_name", None) in ("Required", "NotRequired", "ReadOnly"):
            return self.rewrite(args[0], globalns, where)  # TypedDict key markers; required-ness is known
        if origin is Literal or tp is typing.Any:
            return tp
        if origin in (Union, types.UnionType):
            return Union[tuple(self.rewrite(a, globalns, where) for a in args)]
        if origin is collections.abc.Callable or tp is collections.abc.Callable or tp is Callable:
            raise ToolDefinitionError(f"{where}: a callable ({type_name(tp)}) cannot be described as JSON")
        if origin is not None and args:
            new = tuple(a if a is Ellipsis else self.rewrite(a, globalns, where) for a in args)
            if isinstance(tp, types.GenericAlias):
                return types.GenericAlias(origin, new)
            copy_with = getattr(tp, "copy_with", None)
            return copy_with(new) if copy_with is not None else tp
        if isinstance(tp, type) and tp in self.memo:
            return self.memo[tp]
        if (
            is_std_dataclass(tp)
            or is_typeddict(tp)
            or (
                isinstance(tp, type)
                and tp.__module__ != "builtins"
                and not (is_model(tp) or is_typeddict(tp) or is_namedtuple(tp))
                and not _native(tp)
            )
        ):
            return self.class_model(tp)
        return tp

    def _names(self) -> dict[str, Any]:
        return {cls.__name__: cls for cls in self.memo}

    def class_model(self, cls: type) -> Any:
        """An annotation that validates a JSON object into an instance of ``cls``."""
        ref = f"__chainform_{cls.__name__}_{id(cls)}"
        self.memo[cls] = ForwardRef(ref)
        spec = self.build(cls)
        annotated = _ANNOTATED[spec.model, AfterValidator(lambda m: call_with(spec, m))]
        self.memo[cls] = annotated
        self.forward[ref] = annotated
        return annotated

    # -- callables and classes ---------------------------------------------------------------
    def build(self, obj: Any, name: str | None = None) -> Spec:
        target, drop_first, kind = call_target(obj)
        where = qualname(obj)
        globalns = dict(
            getattr(inspect.unwrap(target) if inspect.isroutine(target) else target, "__globals__", {})
        )
        if isinstance(obj, type):
            globalns = dict(vars(sys.modules.get(obj.__module__, types.ModuleType("x"))))
            globalns.setdefault(obj.__name__, obj)
        doc = _docs.parse_docstring(class_doc(obj) if isinstance(obj, type) else inspect.getdoc(target))
        if isinstance(obj, type) and not doc.params and init_of(obj) is not object.__init__:
            init_doc = _docs.parse_docstring(inspect.getdoc(init_of(obj)))
            doc.params = init_doc.params
        tool_name = name or getattr(obj, "__name__", None) or type(obj).__name__
        if is_model(obj):
            return self._model_spec(obj, tool_name, doc)
        fields, params, hints = self._fields(obj, target, drop_first, kind, where, globalns, doc)
        try:
            model = pydantic.create_model(  # type: ignore[call-overload]
                tool_name if tool_name.isidentifier() else "arguments",
                __config__=ConfigDict(extra="forbid"),
                __doc__=doc.summary or None,
                **fields,
            )
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
            raise ToolDefinitionError(f"{where}: cannot describe the arguments ({exc})") from exc
        self.models.append(model)
        returns = ""
        if not isinstance(obj, type):
            rtype = hints.get("return", EMPTY)
            comments = _docs.function_comments(target)
            rdesc = comments.get(_docs.RETURN) or doc.returns
            if rtype is not EMPTY and rtype is not None and rtype is not type(None):
                returns = f"Returns {type_name(rtype)}" + (f": {rdesc}" if rdesc else ".")
            elif rdesc:
                returns = f"Returns: {rdesc}"
        return Spec(
            tool_name, doc.summary, returns, model, params, obj if isinstance(obj, type) else target, kind, {}
        )

    def _fields(
        self,
        obj: Any,
        target: Any,
        drop_first: bool,
        kind: str,
        where: str,
        globalns: dict[str, Any],
        doc: _docs.DocInfo,
    ) -> tuple[dict[str, Any], list[Param], dict[str, Any]]:
        localns = self._names()
        if isinstance(obj, type):
            localns[obj.__name__] = obj
        raw = raw_params(obj, target, drop_first, kind, where)
        hint_src = target if kind == "call" else obj
        try:
            hints = typing.get_type_hints(hint_src, globalns=globalns, localns=localns, include_extras=True)
        except Exception:
            hints = {}
        by_fields = isinstance(obj, type) and (
            dataclasses.is_dataclass(obj) or is_namedtuple(obj) or is_typeddict(obj)
        )
        comments = _docs.class_comments(obj) if by_fields else _docs.function_comments(target)
        fields: dict[str, Any] = {}
        params: list[Param] = []
        for i, (pname, pkind, annotation, default) in enumerate(raw):
            pwhere = f"{where}, parameter {pname!r}"
            if pkind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                star = "*" if pkind is inspect.Parameter.VAR_POSITIONAL else "**"
                raise ToolDefinitionError(f"{where}: {star}{pname} cannot be described; use named parameters")
            if pname in hints:
                annotation = hints[pname]
            if annotation is EMPTY:
                raise ToolDefinitionError(f"{pwhere} has no type annotation")
            if kind == "call" and _is_context(annotation):  # never in the schema the model reads
                params.append(Param(name=pname, field="", kind=pkind, required=False))
                continue
            tp = self.rewrite(annotation, {**globalns, **localns}, pwhere)
            desc = _explicit_description(tp, default) or comments.get(pname) or doc.params.get(pname)
            info = Field(alias=pname, description=desc) if desc else Field(alias=pname)
            field = f"p{i}"
            fields[field] = (_ANNOTATED[tp, info], ... if default is EMPTY else default)
            params.append(Param(name=pname, field=field, kind=pkind, required=default is EMPTY))
        return fields, params, hints

    def _model_spec(self, model: type[BaseModel], name: str, doc: _docs.DocInfo) -> Spec:
        params = [
            Param(name=f.alias or n, field=n, kind=inspect.Parameter.KEYWORD_ONLY, required=f.is_required())
            for n, f in model.model_fields.items()
        ]
        return Spec(name, doc.summary, "", model, params, model, "model", {})

    def finish(self, spec: Spec, where: str) -> dict[str, Any]:
        for model in self.models:
            if not model.__pydantic_complete__:
                model.model_rebuild(_types_namespace=self.forward)
        from chainform.schema.dsl import type_schema  # the one type -> JSON Schema path (cached)

        try:
            schema = type_schema(spec.model)
        except SchemaError as exc:
            raise ToolDefinitionError(f"{where}: {exc}") from exc
        schema = strip_titles(schema)
        if spec.kind == "model":
            comments = _docs.class_comments(spec.target)  # type: ignore[arg-type]
            doc = _docs.parse_docstring(class_doc(spec.target))
            for pname, prop in schema.get("properties", {}).items():
                extra = comments.get(pname) or doc.params.get(pname)
                if extra and isinstance(prop, dict) and "description" not in prop:
                    prop["description"] = extra
        schema.pop("description", None)
        schema.setdefault("properties", {})
        schema.setdefault("required", [])
        first = ("type", "properties", "required")
        ordered = {"type": "object", "properties": schema["properties"], "required": schema["required"]}
        ordered.update((k, v) for k, v in schema.items() if k not in first)
        spec.schema = ordered
        return ordered


def _explicit_description(tp: Any, default: Any) -> str | None:
    if isinstance(default, FieldInfo) and default.description:
        return default.description
    if typing.get_origin(tp) is Annotated:
        for meta in reversed(tp.__metadata__):
            if isinstance(meta, FieldInfo) and meta.description:
                return meta.description
    return None


def _is_context(annotation: Any) -> bool:
    """`RunContext`, or `RunContext | None`: the parameter a tool asks the chain's context with."""
    if annotation is RunContext:
        return True
    if typing.get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        return kinds == [RunContext]
    return False


def call_with(spec: Spec, validated: BaseModel, context: RunContext | None = None) -> Any:
    """Call the spec's target with validated values (positional-only ones by position), and
    `context` for a parameter annotated RunContext (None outside a chain)."""
    if spec.kind == "model":
        return validated
    if spec.kind == "typeddict":
        return {
            p.name: getattr(validated, p.field)
            for p in spec.params
            if p.field in validated.model_fields_set or p.required
        }
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in spec.params:
        value = getattr(validated, p.field) if p.field else context
        if isinstance(value, FieldInfo):
            continue
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[p.name] = value
    return spec.target(*args, **kwargs)


def build_spec(obj: Any, name: str | None = None) -> Spec:
    """Describe ``obj`` fully: raises `ToolDefinitionError` if it cannot be a tool."""
    builder = _Builder()
    spec = builder.build(obj, name)
    builder.finish(spec, qualname(obj))
    return spec


def get_schema(obj: Any) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` for a function, method or class.

    Parameter descriptions come from, in order of precedence: ``Field(description=...)`` or
    ``Annotated[T, "text"]``, a comment beside the parameter, the docstring's parameter section.
    The return annotation and its description are appended to the description.
    """
    spec = build_spec(obj)
    return {"name": spec.name, "description": spec.description, "parameters": spec.schema}
