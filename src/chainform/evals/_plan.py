"""A JSON Schema turned into a scorer tree: one node per field, compiled once, called per row.

Paths name fields as the report does: `total`, `customer.name` (nested objects), `items` (an
array: precision/recall/F1 of its items), `items[].price` (a field of each item of an array of
objects, over the aligned item pairs). A schema whose root is not an object has one field, `value`.

What decides how a field is scored (docs/evals.md says the same):
- `enum` / `const` / integer: exact; number: relative tolerance (`tolerance`, else the default);
  boolean: exact; string: normalised, with an optional fuzzy threshold; a string with
  `format` date, date-time or time: parsed and compared as such.
- array: a set (items matched one to one, best alignment) unless the schema says it is ordered
  (`"x-ordered": true` or `prefixItems`), then position by position.
- a custom scorer `(expected, actual) -> bool` replaces the rule of its field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from chainform.evals import _leaves
from chainform.evals._errors import EvalInputError

Scorer = Callable[[Any, Any], Any]
"""A custom field scorer: `(expected, actual) -> truthy when right`; called only for two present,
non-null values that differ."""


@dataclass
class Leaf:
    path: str
    compare: _leaves.Compare
    kind: str  # exact | number | string | date | date-time | time | boolean | enum | custom
    enum: list[Any] | None = None


@dataclass
class Obj:
    path: str
    fields: dict[str, Node] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)  # its fields' report paths (set by compile_plan)


@dataclass
class Arr:
    path: str
    item: Node
    ordered: bool
    paths: list[str] = field(default_factory=list)  # its items' report paths (set by compile_plan)


Node = Leaf | Obj | Arr


@dataclass
class Options:
    """How fields are scored. A tolerance is a relative number (`0.01`), `"abs:0.5"` or a
    `Tolerance`; `fuzzy` is the rapidfuzz threshold of every string field, `fuzzy_fields` one per
    field path (over `fuzzy`)."""

    default_tolerance: float | str | _leaves.Tolerance = 0.0
    tolerance: Mapping[str, float | str | _leaves.Tolerance] = field(default_factory=dict)
    fuzzy: float | None = None
    scorers: Mapping[str, Scorer] = field(default_factory=dict)
    fuzzy_fields: Mapping[str, float] = field(default_factory=dict)


def compile_plan(schema: dict[str, Any], options: Options | None = None) -> Node:
    """The scorer tree of `schema`; raises EvalInputError for a tolerance or scorer naming no field
    (or a tolerance on a field that is not a number)."""
    options = options or Options()
    default = _tolerance("default tolerance", options.default_tolerance)
    tolerances = {path: _tolerance(f"tolerance of {path!r}", t) for path, t in options.tolerance.items()}
    for name, threshold in (("", options.fuzzy), *options.fuzzy_fields.items()):
        if threshold is not None and not 0 <= threshold <= 1:
            where = f" of {name!r}" if name else ""
            raise EvalInputError(f"the fuzzy threshold{where} {threshold!r} is not between 0 and 1")
    options = replace(options, default_tolerance=default, tolerance=tolerances)
    root = _Compiler(schema, options).node(schema, "", depth=0)
    for node in walk(root):
        if isinstance(node, Obj):
            node.paths = field_paths(node)
        elif isinstance(node, Arr):
            node.paths = field_paths(node.item)
    known = {node.path: node for node in walk(root)}
    for path in options.scorers:
        if path not in known:
            raise EvalInputError(
                f"a scorer names {path!r}, which is no field of the schema ({_listing(known)})"
            )
    for path in options.tolerance:
        found = known.get(path)
        if found is None:
            raise EvalInputError(
                f"--tolerance names {path!r}, which is no field of the schema ({_listing(known)})"
            )
        if not (isinstance(found, Leaf) and found.kind == "number"):
            raise EvalInputError(f"--tolerance names {path!r}, which is not a number field")
    for path in options.fuzzy_fields:
        found = known.get(path)
        if found is None:
            raise EvalInputError(
                f"--fuzzy names {path!r}, which is no field of the schema ({_listing(known)})"
            )
        if not (isinstance(found, Leaf) and found.kind in ("string", *_leaves.TEMPORAL_FORMATS)):
            raise EvalInputError(f"--fuzzy names {path!r}, which is not a string field")
    return root


def _tolerance(name: str, value: float | str | _leaves.Tolerance) -> _leaves.Tolerance:
    try:
        return _leaves.Tolerance.parse(value)
    except ValueError as exc:
        raise EvalInputError(f"the {name}: {exc}") from None


def _listing(known: Mapping[str, Node]) -> str:
    return "fields: " + ", ".join(path for path in known if path)


def walk(node: Node) -> Iterator[Node]:
    """Every node, parents first."""
    yield node
    if isinstance(node, Obj):
        for child in node.fields.values():
            yield from walk(child)
    elif isinstance(node, Arr):
        yield from walk(node.item)


def field_paths(node: Node) -> list[str]:
    """The paths a report has a figure for: leaves and arrays (objects only hold them; the items
    of an array of scalars are the array's precision and recall, not a field of their own)."""
    return [n.path for n in walk(node) if not isinstance(n, Obj) and not n.path.endswith("[]")]


_MAX_DEPTH = 32


class _Compiler:
    def __init__(self, root: dict[str, Any], options: Options) -> None:
        self.root = root
        self.options = options

    def node(self, schema: Any, path: str, depth: int) -> Node:
        if depth > _MAX_DEPTH:  # a recursive schema: deeper values compare whole
            return Leaf(path or "value", _leaves.exact, "exact")
        schema = self._resolved(schema)
        if path in self.options.scorers:
            return Leaf(path or "value", _custom(self.options.scorers[path]), "custom")
        if "enum" in schema or "const" in schema:
            values = schema.get("enum", [schema.get("const")])
            return Leaf(path or "value", _leaves.exact, "enum", [v for v in values if v is not None])
        kind = _kind(schema)
        if kind == "object" and isinstance(schema.get("properties"), dict):
            prefix = f"{path}." if path else ""
            fields = {
                name: self.node(sub, prefix + name, depth + 1) for name, sub in schema["properties"].items()
            }
            return Obj(path, fields)
        if kind == "array":
            item = schema.get("items")
            ordered = bool(schema.get("x-ordered")) or "prefixItems" in schema
            item_schema = item if isinstance(item, dict) else {}
            return Arr(path or "value", self.node(item_schema, f"{path or 'value'}[]", depth + 1), ordered)
        return self._leaf(schema, path or "value", kind)

    def _leaf(self, schema: dict[str, Any], path: str, kind: str | None) -> Leaf:
        if kind == "number":
            tolerance = self.options.tolerance.get(path, self.options.default_tolerance)
            assert isinstance(tolerance, _leaves.Tolerance)  # made one by compile_plan
            return Leaf(path, _leaves.number(tolerance), "number")
        if kind == "string":
            text = _leaves.string(self.options.fuzzy_fields.get(path, self.options.fuzzy))
            fmt = schema.get("format")
            if fmt in _leaves.TEMPORAL_FORMATS:
                return Leaf(path, _leaves.temporal(fmt, text), fmt)
            return Leaf(path, text, "string")
        return Leaf(path, _leaves.exact, kind or "exact")

    def _resolved(self, schema: Any) -> dict[str, Any]:
        """Follow local `$ref`s and take the one non-null branch of an `anyOf`/`oneOf` (Optional[X])."""
        from chainform.schema._dialect_refs import resolve_ref

        for _ in range(_MAX_DEPTH):
            if not isinstance(schema, dict):
                return {}
            if "$ref" in schema:
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {**self._as_dict(resolve_ref(self.root, schema["$ref"])), **rest}
                continue
            branches = schema.get("anyOf") or schema.get("oneOf")
            if isinstance(branches, list):
                real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
                if len(real) == 1:
                    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                    schema = {**self._as_dict(real[0]), **rest}
                    continue
            return schema
        return {}

    @staticmethod
    def _as_dict(schema: Any) -> dict[str, Any]:
        return schema if isinstance(schema, dict) else {}


def _kind(schema: dict[str, Any]) -> str | None:
    """The one non-null JSON type the schema declares (`integer` scores as exact), else None."""
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    types = [t for t in types if t != "null"]
    if not types:
        if "properties" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        return None
    if set(types) <= {"integer", "number"}:
        return "integer" if types == ["integer"] else "number"
    return str(types[0]) if len(types) == 1 else None


def _custom(scorer: Scorer) -> _leaves.Compare:
    def compare(expected: Any, actual: Any) -> bool:
        return bool(scorer(expected, actual))

    return compare


__all__ = ["Arr", "Leaf", "Node", "Obj", "Options", "Scorer", "compile_plan", "field_paths", "walk"]
