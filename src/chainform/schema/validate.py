"""JSON Schema validation with readable errors, cached compiled validators and no network access.

The chain engine checks every model answer against the user's schema, often the same schema many times,
so compiled validators are cached by the schema's canonical JSON text. `$schema` is honoured (draft-04 to
2020-12); a schema without it is read as Draft 2020-12. Formats are asserted (date-time, email, uri, ...)
because a value that "looks like" a date is exactly what a model gets wrong; the checkers that need
optional packages are dependencies of chainform. IRIs are checked by mapping them to URIs (RFC 3987
section 3.1) rather than through rfc3987-syntax, whose import alone costs seconds. Remote ``$ref`` targets are never fetched: a
schema must be self-contained (or the caller passes a `referencing.Registry`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from chainform._json import MAX_DEPTH, NonIntegral, canonical_json, check_depth, load_json
from chainform.errors import JSONLimitError, SchemaError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Registry

__all__ = [
    "check_schema",
    "check_value",
    "compile_validator",
    "is_valid",
    "schema_text",
    "validate",
    "validate_json",
]

_CACHE_SIZE = 512
_cache: OrderedDict[str, Validator] = OrderedDict()


def schema_text(schema: Any) -> str:
    """The schema's canonical JSON (`canonical_json`), the key of every cache of schemas; a schema
    that is not JSON (a set, NaN, a cycle) raises `SchemaError`."""
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"A JSON Schema must be an object or a boolean, not {type(schema).__name__}")
    try:
        return canonical_json(schema)
    except RecursionError:
        raise _too_deep() from None
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"The schema is not JSON-serialisable: {exc}") from exc


def _too_deep() -> SchemaError:
    return SchemaError(f"The schema is nested more than {MAX_DEPTH} levels deep")


def _check_depth(schema: Any, text: str) -> None:
    """A schema deeper than `MAX_DEPTH` would overflow the recursive metaschema check, validation and
    dialect conversion (a RecursionError, untyped); refused before any of them runs."""
    try:
        check_depth(schema, text)
    except JSONLimitError:
        raise _too_deep() from None


def _no_retrieval(uri: str) -> Any:
    """Refuse to fetch remote schemas: validation must never reach the network."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


def _offline(registry: Registry | None) -> Registry:
    """`registry` (or an empty one) plus the official metaschemas, never fetching anything else."""
    from jsonschema_specifications import REGISTRY as METASCHEMAS  # type: ignore[import-untyped]
    from referencing import Registry

    base: Registry = Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]
    return base.combine(METASCHEMAS, *([registry] if registry is not None else []))


def compile_validator(
    schema: dict[str, Any] | bool, *, registry: Registry | None = None, formats: bool = True
) -> Validator:
    """A checked validator for `schema` (cached unless a registry is given).

    `formats=False` treats ``format`` as an annotation only, as Draft 2020-12 does by default.
    """
    text = schema_text(schema)
    cache_key = ("F" if formats else "A") + text
    if registry is None and (hit := _cache.get(cache_key)) is not None:
        _cache.move_to_end(cache_key)
        return hit
    _check_depth(schema, text)
    from jsonschema import Draft202012Validator, FormatChecker, exceptions, validators

    cls: Any = _exact_integers(validators.validator_for(schema, default=Draft202012Validator))
    try:
        cls.check_schema(schema)  # type: ignore[arg-type]
    except exceptions.SchemaError as exc:
        where = exc.json_path if hasattr(exc, "json_path") else "$"
        raise SchemaError(f"Invalid JSON Schema at {where}: {exc.message}") from exc
    validator: Validator = cls(
        schema,
        # Every known format, not only the draft's own: a draft-04 schema saying "date" means a date.
        format_checker=_format_checker(FormatChecker) if formats else None,
        registry=_offline(registry),
    )
    if registry is None:
        _cache[cache_key] = validator
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return validator


_EXACT: dict[type, Any] = {}


def _exact_integers(cls: Any) -> Any:
    """`cls` judging ``integer`` on the number as written: a `NonIntegral` (`1.0e-400`, read as 0.0)
    is no integer; a `_Whole` float that is one (`3.0`) is marked for `check_value` to return as an int."""
    hit = _EXACT.get(cls)
    if hit is None:
        from jsonschema import validators

        base = cls.TYPE_CHECKER

        def is_integer(checker: Any, instance: Any) -> bool:
            if isinstance(instance, NonIntegral) or not base.is_type(instance, "integer"):
                return False
            if isinstance(instance, _Whole):
                instance.integer = True
            return True

        checker = base.redefine("integer", is_integer)
        hit = _EXACT[cls] = validators.extend(cls, type_checker=checker)  # type: ignore[no-untyped-call]
    return hit


def _iri_to_uri(iri: str) -> str:
    """RFC 3987 3.1: percent-encode the UTF-8 of every non-ASCII character."""
    from urllib.parse import quote

    return "".join(c if ord(c) < 128 else quote(c, safe="") for c in iri)


def _format_checker(factory: Any) -> Any:
    """Every format jsonschema knows, plus iri / iri-reference when its own checker is unavailable."""
    checker = factory()
    if "iri" in checker.checkers:
        return checker
    try:
        from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]
    except ImportError:
        return checker

    def iri(rule: str) -> Any:
        def check(instance: object) -> bool:
            return not isinstance(instance, str) or bool(validate_rfc3986(_iri_to_uri(instance), rule=rule))

        return check

    checker.checks("iri")(iri("URI"))
    checker.checks("iri-reference")(iri("URI_reference"))
    return checker


def check_schema(schema: dict[str, Any] | bool) -> None:
    """Raise `SchemaError` when `schema` is not a valid JSON Schema for its declared draft."""
    compile_validator(schema)


def validate(
    value: Any, schema: dict[str, Any] | bool, *, registry: Registry | None = None, formats: bool = True
) -> list[str]:
    """Every reason `value` fails `schema`, as ``"$.path: message"`` lines; empty when it is valid.

    A `$ref` that cannot be resolved is a fault of the schema, so it raises `SchemaError` instead of
    being reported as a problem with the value.
    """
    from referencing.exceptions import Unresolvable

    validator = compile_validator(schema, registry=registry, formats=formats)
    try:
        errors = sorted(
            validator.iter_errors(value), key=lambda e: ([str(p) for p in e.absolute_path], e.message)
        )
    except Unresolvable as exc:
        raise SchemaError(f"The schema has a $ref that cannot be resolved: {exc}") from exc
    return [f"{e.json_path}: {_message(e)}" for e in errors]


def check_value(
    value: Any, schema: dict[str, Any] | bool, *, registry: Registry | None = None, formats: bool = True
) -> tuple[Any, list[str]]:
    """`validate`, and `value` with each whole float that an ``integer`` schema accepted as an `int`
    (a model's `3.0` for an integer field comes back as 3; a number field keeps its float)."""
    marked = _marked(value)
    errors = validate(marked, schema, registry=registry, formats=formats)
    return (_as_ints(marked) if _any_integer(marked) else value), errors


def validate_json(
    text: str, schema: dict[str, Any] | bool, *, registry: Registry | None = None, formats: bool = True
) -> tuple[Any, list[str]]:
    """JSON `text` parsed under chainform's limits and checked as `check_value` checks it; integers
    are judged on the literal (`1.0e-400` is not the integer 0). Raises ValueError for text that is
    not JSON."""
    return check_value(load_json(text), schema, registry=registry, formats=formats)


class _Whole(float):
    """A whole float of the value being checked, carrying whether an ``integer`` schema accepted it:
    the mark travels with the value through validation (`_exact_integers`), so concurrent checks
    never share it."""

    __slots__ = ("integer",)

    def __init__(self, _: float) -> None:
        self.integer = False


def _marked(value: Any) -> Any:
    """`value` with each whole float (`3.0`, not a `NonIntegral`) as a fresh `_Whole`; `value`
    itself, and each part of it, where there is none."""
    if type(value) is float:
        return _Whole(value) if value.is_integer() else value
    if isinstance(value, dict):
        items = {key: _marked(item) for key, item in value.items()}
        changed = any(items[key] is not item for key, item in value.items())
        return items if changed else value
    if isinstance(value, list):
        marked = [_marked(item) for item in value]
        return marked if any(m is not v for m, v in zip(marked, value, strict=True)) else value
    return value


def _any_integer(value: Any) -> bool:
    if isinstance(value, _Whole):
        return value.integer
    if isinstance(value, dict):
        return any(_any_integer(item) for item in value.values())
    if isinstance(value, list):
        return any(_any_integer(item) for item in value)
    return False


def _as_ints(value: Any) -> Any:
    """`value` with each `_Whole` an ``integer`` schema accepted as an int, the others plain floats."""
    if isinstance(value, _Whole):
        return int(value) if value.integer else float(value)
    if isinstance(value, dict):
        return {key: _as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_ints(item) for item in value]
    return value


def _message(error: Any) -> str:
    """The error's message; for anyOf/oneOf failures, also the closest branch's first complaint."""
    if error.context:
        from jsonschema.exceptions import best_match

        inner = best_match(error.context)
        if inner is not None:
            return f"{error.message} (closest: {inner.message})"
    return str(error.message)


def is_valid(
    value: Any, schema: dict[str, Any] | bool, *, registry: Registry | None = None, formats: bool = True
) -> bool:
    """True when `value` satisfies `schema` (cheaper than `validate` when reasons are not needed)."""
    from referencing.exceptions import Unresolvable

    try:
        return bool(compile_validator(schema, registry=registry, formats=formats).is_valid(value))
    except Unresolvable as exc:
        raise SchemaError(f"The schema has a $ref that cannot be resolved: {exc}") from exc
