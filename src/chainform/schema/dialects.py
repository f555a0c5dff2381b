"""Provider schema dialects: convert the user's JSON Schema into what a provider accepts, and map the
provider's output back so that it validates against the user's ORIGINAL schema.

Each provider accepts a different subset of JSON Schema (OpenAI strict mode, Gemini's OpenAPI subset,
Anthropic's structured outputs, Bedrock tool specs). `convert` rewrites the schema with rules held as
data (`POLICIES`) and lists every change in `ConvertedSchema.notes`. Changes are relaxations
(constraints moved into descriptions) or encodings that `restore` undoes exactly (key/value pairs for
free-form maps, JSON text for values a dialect cannot type, nulls for absent optional fields, a wrapper
around a non-object root; see `_dialect_codecs`). The final check is always against the original schema,
so nothing a dialect relaxes is ever lost for the caller, and no valid answer is made unproducible.

Behind this module, three concepts, each arrow pointing one way (rules <- converter, codecs):
- `_dialect_rules`: what each provider accepts (`Policy`, `POLICIES`) and its documented size limits;
- the converter: `_dialect_convert` (the walk and `$ref`s), `_dialect_shapes` (its keyword groups, a
  mixin split off for size) and `_dialect_refs` (the user's schema read into one shape: refs followed,
  allOf merged, draft-04 read as 2020-12);
- `_dialect_codecs`: the encodings' marks and the walks that apply (`forward`) or undo (`restore`) them.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, get_args

from chainform._dialect_names import SchemaDialect
from chainform._json import copy_json
from chainform.errors import SchemaError
from chainform.schema._dialect_codecs import Codecs, strip
from chainform.schema._dialect_convert import ROOT_KEY, Converter
from chainform.schema._dialect_rules import POLICIES, check_limits
from chainform.schema.validate import check_schema, compile_validator, schema_text

__all__ = [
    "POLICIES",
    "ConvertedSchema",
    "Dialect",
    "SchemaDialect",
    "convert",
    "forward_instance",
    "get_dialect",
    "provider_accepts",
    "restore",
]

_IDENTITY = ("jsonschema", "llguidance")


@dataclass(frozen=True)
class ConvertedSchema:
    """A provider-ready schema plus what the conversion gave up.

    `root_key` is set when a non-object root was wrapped (`{"value": ...}`); `restore` unwraps it.
    """

    schema: dict[str, Any] | bool
    dialect: SchemaDialect
    notes: list[str] = field(default_factory=list)
    root_key: str | None = None
    _codecs: Codecs | None = field(default=None, repr=False, compare=False)

    @property
    def lossless(self) -> bool:
        return not self.notes


_cache: OrderedDict[tuple[str, str], ConvertedSchema] = OrderedDict()


def _converted(schema: dict[str, Any] | bool, dialect: SchemaDialect) -> ConvertedSchema:
    key = (dialect, schema_text(schema))
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit
    check_schema(schema)
    if dialect in _IDENTITY:
        result = ConvertedSchema(copy.deepcopy(schema), dialect)
    else:
        policy = POLICIES[dialect]
        conv = Converter(schema, policy)
        marked, wrapped = conv.run()
        out, codecs = strip(marked)
        check_limits(out, policy.limits, dialect)
        accepts = _nullable_accepts if policy.nullable_keyword else _accepts
        result = ConvertedSchema(
            out, dialect, _dedupe(conv.notes), ROOT_KEY if wrapped else None, Codecs(out, codecs, accepts)
        )
    _cache[key] = result
    if len(_cache) > 256:
        _cache.popitem(last=False)
    return result


@dataclass(frozen=True)
class Dialect:
    """One provider's schema language, as `ModelProfile.dialect` hands it out: the adapter converts a
    schema through it and the engine restores the provider's output through the same object, so the
    two directions can never disagree on which dialect a call used."""

    name: SchemaDialect

    def convert(self, schema: dict[str, Any] | bool) -> ConvertedSchema:
        """`schema` rewritten for this dialect; raises `SchemaError` when it cannot be expressed here."""
        cached = _converted(schema, self.name)
        return ConvertedSchema(
            copy_json(cached.schema), self.name, list(cached.notes), cached.root_key, cached._codecs
        )

    def restore(self, value: Any, original_schema: dict[str, Any] | bool) -> Any:
        """A provider's output for the converted schema, mapped back into the shape of `original_schema`.

        It undoes every encoding of `convert` exactly (root wrapper, key/value pairs, JSON text, nulls
        standing for absent optional fields, boxed explicit nulls, spelled enum values); it never
        validates, and output without the encoded shape passes unchanged. Validate the result against
        `original_schema` afterwards: that is the final check.
        """
        conv = _converted(original_schema, self.name)
        return conv._codecs.decode(value) if conv._codecs is not None else value

    def forward(self, value: Any, original_schema: dict[str, Any] | bool) -> Any:
        """What a provider honouring `convert(original_schema)` could emit for `value` (see
        `forward_instance`)."""
        conv = _converted(original_schema, self.name)
        return conv._codecs.encode(value) if conv._codecs is not None else value


_DIALECTS: dict[str, Dialect] = {name: Dialect(name) for name in get_args(SchemaDialect)}


def get_dialect(name: str) -> Dialect:
    """The `Dialect` called `name`; raises `SchemaError` for a name no provider family uses."""
    hit = _DIALECTS.get(name)
    if hit is None:
        raise SchemaError(
            f"Unknown schema dialect {name!r}; expected one of {', '.join(get_args(SchemaDialect))}"
        )
    return hit


def convert(schema: dict[str, Any] | bool, dialect: SchemaDialect) -> ConvertedSchema:
    """`schema` rewritten for `dialect`; raises `SchemaError` when it cannot be expressed there."""
    return get_dialect(dialect).convert(schema)


def restore(value: Any, original_schema: dict[str, Any] | bool, dialect: SchemaDialect) -> Any:
    """`Dialect.restore` of the dialect called `dialect`."""
    return get_dialect(dialect).restore(value, original_schema)


def forward_instance(value: Any, original_schema: dict[str, Any] | bool, dialect: SchemaDialect) -> Any:
    """What a provider honouring `convert(original_schema, dialect)` could emit for `value`.

    The inverse of `restore`, for measuring and testing round trips: every encoding of `convert` applied
    (explicit nulls for absent optional fields under openai-strict, open keys as key/value pairs, ...).
    A value the converted schema cannot carry comes out as close as it gets, and fails `provider_accepts`.
    """
    return get_dialect(dialect).forward(value, original_schema)


def provider_accepts(value: Any, converted: ConvertedSchema) -> bool:
    """Whether `value` satisfies the converted schema as the provider reads it (Gemini's `nullable`)."""
    if not _uses_nullable(converted.schema):
        return bool(compile_validator(converted.schema).is_valid(value))
    return bool(_nullable_validator(schema_text(converted.schema), converted.schema).is_valid(value))


def _accepts(value: Any, schema: Any) -> bool:
    return bool(compile_validator(schema).is_valid(value))


def _nullable_accepts(value: Any, schema: Any) -> bool:
    return provider_accepts(value, ConvertedSchema(schema, "gemini"))


def _uses_nullable(schema: Any) -> bool:
    return '"nullable":true' in schema_text(schema)


_nullable_cache: dict[str, Any] = {}


def _nullable_validator(key: str, schema: Any) -> Any:
    hit = _nullable_cache.get(key)
    if hit is None:
        from jsonschema import Draft202012Validator, validators

        def null_allowed(keyword: str) -> Any:
            check: Any = Draft202012Validator.VALIDATORS[keyword]

            def run(validator: Any, expected: Any, instance: Any, node: Any) -> Any:
                if instance is None and node.get("nullable") is True:
                    return
                yield from check(validator, expected, instance, node)

            return run

        overrides = {k: null_allowed(k) for k in ("type", "enum")}
        cls: Any = validators.extend(Draft202012Validator, overrides)  # type: ignore[no-untyped-call]
        hit = _nullable_cache[key] = cls(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        if len(_nullable_cache) > 256:
            _nullable_cache.pop(next(iter(_nullable_cache)))
    return hit


def _dedupe(notes: list[str]) -> list[str]:
    return list(dict.fromkeys(notes))
