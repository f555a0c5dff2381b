"""Keyword groups of the dialect converter: values (enum/const), unions, objects, arrays, any-values.

Split from `_dialect_convert` to keep modules small; `Shapes` is a mixin of `Converter`. Here live the
lossless encodings a restricted dialect needs (each marked with a codec that `restore` undoes):
- an object's keys beyond its listed properties (free-form maps, `additionalProperties`,
  `patternProperties`) as a list of `{"key", "value"}` pairs in one extra property;
- an arbitrary JSON value in a typed dialect as a scalar, or an array/object as `{"json": "<JSON text>"}`;
- enum values the dialect cannot spell, spelled as strings and mapped back;
- under all-required dialects, an optional property that itself accepts null boxed as `{"value": ...}`,
  so that null (absent) and `{"value": null}` (an explicit null) stay apart.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from chainform.errors import SchemaError
from chainform.schema._dialect_codecs import CODEC, mark
from chainform.schema._dialect_refs import ANNOTATIONS, json_type, normalize

if TYPE_CHECKING:
    from chainform.schema._dialect_rules import Policy

JSON = Any
_OPENERS = frozenset(  # keywords under which an object may hold keys its `properties` do not list
    {"additionalProperties", "patternProperties", "if", "then", "else", "dependentSchemas", "dependencies"}
    | {"unevaluatedProperties", "propertyNames", "minProperties", "maxProperties", "not", "anyOf", "oneOf"}
)


class Impossible(SchemaError):
    """A subschema no value can match; a union drops such a branch, elsewhere it is the user's error."""


class Shapes:
    """The keyword groups; `Converter` supplies `node`, `describe`, `note`, `refused` and the policy."""

    p: Policy
    root: JSON
    _null_validator: Any = None

    if TYPE_CHECKING:

        def node(self, node: JSON, path: str) -> JSON: ...
        def typed_node(self, node: dict[str, Any], path: str) -> JSON: ...
        def note(self, path: str, text: str) -> None: ...
        def refused(self, key: str, value: JSON) -> bool: ...
        def describe(
            self, out: dict[str, Any], node: dict[str, Any], moved: dict[str, Any], path: str
        ) -> JSON: ...

    # -- enum / const ------------------------------------------------------------------------------
    def enum_values(self, node: dict[str, Any]) -> list[Any] | None:
        values: list[Any] | None = [node["const"]] if "const" in node else None
        if isinstance(node.get("enum"), list):
            values = node["enum"] if values is None else [v for v in values if v in node["enum"]]
        return values

    def spellable(self, values: list[Any]) -> bool:
        return {
            "any": True,
            "primitive": all(not isinstance(v, (dict, list)) for v in values),
            "string": all(isinstance(v, str) for v in values),
        }[self.p.enums]

    def coded_values(self, node: dict[str, Any], path: str) -> JSON | None:
        """An enum/const whose values the dialect cannot spell, as a string enum mapped back exactly."""
        values = self.enum_values(node)
        if values is None or self.spellable(values):
            return None
        keep = str if self.p.enums == "string" else (str, int, float, bool, type(None))
        spelled = [v if isinstance(v, keep) else json.dumps(v, sort_keys=True) for v in values]
        if len({json.dumps(s) for s in spelled}) < len(spelled):
            spelled = [json.dumps(v, sort_keys=True) for v in values]
        kinds = list(dict.fromkeys(_value_type(s) for s in spelled))
        out: dict[str, Any] = {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": spelled}
        if self.p.nullable_keyword and "null" in kinds:
            out["type"] = next((k for k in kinds if k != "null"), "string")
            out["nullable"] = True
        self.note(path, "enum/const values this dialect cannot spell written as JSON text (restored exactly)")
        return self.describe(
            mark(out, enum=[[s, v] for s, v in zip(spelled, values, strict=True)]), node, {}, path
        )

    def values(self, node: dict[str, Any], out: dict[str, Any], moved: dict[str, Any], path: str) -> None:
        if "const" in node and "const" in self.p.keep and not self.p.const_to_enum:
            out["const"] = node["const"]
            return
        values = self.enum_values(node)
        if values is None:
            return
        out["enum"] = list(values)
        if "type" not in out and self.p.typed:
            kinds = list(dict.fromkeys(_value_type(v) for v in values))
            out["type"] = kinds[0] if len(kinds) == 1 else kinds
            if self.p.nullable_keyword and "null" in kinds:
                out["type"] = next((k for k in kinds if k != "null"), "string")
                out["nullable"] = True

    # -- unions ------------------------------------------------------------------------------------
    def spread_union(self, node: dict[str, Any], path: str) -> JSON | None:
        """`{A, anyOf: [B, C]}` as `anyOf: [A∧B, A∧C]`: closed branches cannot inherit A's keys."""
        key = "anyOf" if "anyOf" in node else "oneOf"
        rest = {k: v for k, v in node.items() if k != key and k not in ANNOTATIONS}
        if not rest or not isinstance(node[key], list):
            return None
        branches: list[JSON] = []
        for i, branch in enumerate(node[key]):
            if branch is False:
                continue
            merged = {**rest, "allOf": [branch]} if isinstance(branch, dict) else dict(rest)
            try:
                normalize(merged, self.root, [], follow_refs=False)
            except SchemaError:
                self.note(path, f"{key}[{i}] cannot match beside its siblings; left out")
                continue
            branches.append(merged)
        if not branches:
            raise Impossible(f"{path}: no branch of {key} is compatible with the keywords beside it")
        self.note(path, f"keywords beside {key} merged into each branch")
        spread = {k: v for k, v in node.items() if k in ANNOTATIONS}
        return self.typed_node({**spread, key: branches}, path)

    def union(self, node: dict[str, Any], out: dict[str, Any], path: str) -> None:
        branches = []
        for key in ("anyOf", "oneOf"):
            for i, sub in enumerate(node.get(key) or []):
                try:
                    branches.append(self.node(sub, f"{path}.{key}[{i}]"))
                except Impossible:
                    self.note(path, f"{key}[{i}] can match nothing; left out")
        if not branches:
            raise Impossible(f"{path}: no branch of the union can match anything")
        if "oneOf" in node and self.p.oneof_as_anyof:
            self.note(path, "oneOf relaxed to anyOf")
        if "anyOf" in node and "oneOf" in node:
            self.note(path, "anyOf and oneOf combined into one anyOf")
        if len(branches) == 1 and "type" not in out:
            out.update(branches[0])
        else:
            out["anyOf"] = branches

    # -- objects -----------------------------------------------------------------------------------
    def obj(self, node: dict[str, Any], out: dict[str, Any], path: str) -> None:
        required = [r for r in node.get("required") or [] if isinstance(r, str)]
        props: dict[str, JSON] = {}
        for name, sub in (node.get("properties") or {}).items():
            if sub is False:
                self.note(path, f"property {name!r} is forbidden; left out")
                continue
            props[name] = self.node(sub, f"{path}.{name}")
        extra = node.get("additionalProperties", True)
        raw = node.get("patternProperties")
        patterns: dict[str, Any] = raw if isinstance(raw, dict) else {}
        codec: dict[str, Any] = {}
        if self.p.close_objects:
            for name in required:
                if name not in props:
                    props[name] = self.node(_schema_for_key(name, patterns, extra), f"{path}.{name}")
            open_keys = extra is not False or any(s is not False for s in patterns.values())
            if open_keys and (not node.get("properties") or any(k in node for k in _OPENERS)):
                name = _free_name("_extra" if props else "entries", props)
                codec = {"extras": name, "declared": list(props), "always": self.p.all_required}
                props[name] = self.pairs(patterns, extra, path)
                if self.p.all_required:
                    required = [*required, name]
                self.note(path, f"keys beyond the listed properties as key/value pairs in {name!r}")
            elif extra is not False:
                self.note(path, "keys beyond the listed properties are not allowed by this dialect")
            out["additionalProperties"] = False
        elif "additionalProperties" in self.p.keep and "additionalProperties" in node:
            out["additionalProperties"] = extra if isinstance(extra, bool) else self.node(extra, f"{path}.*")
        elif extra is not True and "additionalProperties" in node:
            self.note(path, "additionalProperties dropped")
        if props or "properties" in node:
            out["properties"] = props
        if self.p.all_required:
            optional = [name for name in props if name not in required]
            for name in optional:
                sub = (node.get("properties") or {}).get(name, True)
                props[name] = self.add_null(
                    self.boxed(props[name]) if self.accepts_null(sub) else props[name]
                )
            if optional:
                codec["optional"] = optional
            out["required"] = list(props)
        elif required:
            out["required"] = [r for r in required if r in props or not self.p.close_objects]
        if self.p.property_ordering and len(props) > 1:
            out["propertyOrdering"] = list(props)
        if "type" not in out:
            out["type"] = "object"
        if codec:
            out[CODEC] = {**out.get(CODEC, {}), **codec}

    def pairs(self, patterns: dict[str, Any], extra: JSON, path: str) -> JSON:
        """Keys beyond the listed properties as `[{"key": ..., "value": ...}]`; patterns kept on keys."""
        branches = []
        for pattern, sub in patterns.items():
            if sub is False:
                self.note(path, f"keys matching {pattern!r} are forbidden; left to the final check")
                continue
            key: dict[str, Any] = {"type": "string", "pattern": pattern}
            if "pattern" not in self.p.keep or self.refused("pattern", pattern):
                key = {"type": "string", "description": f"matches {pattern}"}
            branches.append(self.pair(key, self.node(sub, f"{path}.~{pattern}")))
        if extra is not False:
            branches.append(self.pair({"type": "string"}, self.node(extra, f"{path}.*")))
        if not branches:
            branches.append(self.pair({"type": "string"}, self.any_schema(path)))
        items = branches[0] if len(branches) == 1 else {"anyOf": branches}
        text = "Keys of this object beyond the listed properties, as key/value pairs"
        return mark({"type": "array", "items": items, "description": text}, pairs=True)

    def pair(self, key: JSON, value: JSON) -> dict[str, Any]:
        out = {"type": "object", "properties": {"key": key, "value": value}, "required": ["key", "value"]}
        return {**out, "additionalProperties": False}

    def boxed(self, schema: JSON) -> dict[str, Any]:
        """`{"value": schema}`: a present (possibly null) optional value, apart from null = absent."""
        out = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
        return mark({**out, "additionalProperties": False}, box="value")

    def accepts_null(self, sub: JSON) -> bool:
        """Whether the user's subschema `sub` admits an explicit null."""
        if self._null_validator is None:
            from chainform.schema.validate import compile_validator

            self._null_validator = compile_validator(self.root)
        return bool(self._null_validator.evolve(schema=sub).is_valid(None))

    # -- arrays ------------------------------------------------------------------------------------
    def arr(self, node: dict[str, Any], out: dict[str, Any], path: str) -> None:
        items = node.get("items")
        prefix = (
            node.get("prefixItems") if "prefixItems" in node else items if isinstance(items, list) else None
        )
        if prefix is not None and "prefixItems" in self.p.keep:
            out["prefixItems"] = [self.node(s, f"{path}[{i}]") for i, s in enumerate(prefix)]
            rest = items if "prefixItems" in node else node.get("additionalItems")
            if rest is not None:
                out["items"] = rest if isinstance(rest, bool) else self.node(rest, f"{path}[]")
            return
        if prefix is not None:
            rest = items if "prefixItems" in node else node.get("additionalItems", True)
            tail = [rest] if rest is not False and rest is not None else []
            self.note(path, "tuple (prefixItems) relaxed to one item schema")
            out["items"] = self.node(
                {"anyOf": [*prefix, *tail]} if len(prefix) + len(tail) > 1 else prefix[0], f"{path}[]"
            )
        elif isinstance(items, (dict, bool)):
            out["items"] = self.node(items, f"{path}[]")
        if "type" not in out:
            out["type"] = "array"

    # -- any value ---------------------------------------------------------------------------------
    def any_schema(self, path: str) -> JSON:
        if not self.p.typed:
            return {}
        self.note(path, 'any JSON value: scalars as they are, arrays and objects as {"json": "<JSON text>"}')
        scalars: list[dict[str, Any]] = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]
        if self.p.nullable_keyword:
            scalars[0]["nullable"] = True
        else:
            scalars.append({"type": "null"})
        box = self.json_box("An array or object, written as JSON text")
        return {"anyOf": [*scalars, mark(box, jsonbox="composite")]}

    def json_text(self, path: str, why: str) -> JSON:
        """Any value as `{"json": "<JSON text>"}`: an object, so never mistaken for a plain string."""
        self.note(path, f'{why}: the value is written as JSON text in {{"json": ...}} (restored exactly)')
        return mark(self.json_box("The value, written as JSON text"), jsonbox="any")

    def json_box(self, text: str) -> dict[str, Any]:
        box: dict[str, Any] = {"type": "object", "properties": {"json": {"type": "string"}}}
        box.update(required=["json"], description=text)
        if self.p.close_objects:
            box["additionalProperties"] = False
        return box

    def add_null(self, schema: JSON) -> JSON:
        """`schema` that also accepts null (how strict dialects say "optional")."""
        if not isinstance(schema, dict) or schema == {}:
            return schema
        if self.p.nullable_keyword:
            if isinstance(schema.get("anyOf"), list) and schema["anyOf"]:  # on a branch: OpenAPI unions
                first, *rest = schema["anyOf"]
                return {**schema, "anyOf": [{**first, "nullable": True}, *rest]}
            return {**schema, "nullable": True}
        t = schema.get("type")
        if isinstance(t, (str, list)) and "anyOf" not in schema and "$ref" not in schema:
            types = [t] if isinstance(t, str) else t
            out = {**schema, "type": types if "null" in types else [*types, "null"]}
            if len(out["type"]) == 1:
                out["type"] = out["type"][0]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
            return out
        if "anyOf" in schema and set(schema) <= {"anyOf", "description"}:
            if any(b.get("type") == "null" for b in schema["anyOf"] if isinstance(b, dict)):
                return schema
            return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
        return {"anyOf": [schema, {"type": "null"}]}


def _schema_for_key(name: str, patterns: dict[str, Any], extra: JSON) -> JSON:
    """The schema a required but unlisted key's value must meet."""
    matching = [s for p, s in patterns.items() if s is not False and _search(p, name)]
    if matching:
        return matching[0] if len(matching) == 1 else {"allOf": matching}
    return extra if isinstance(extra, dict) else True


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _free_name(base: str, taken: dict[str, Any]) -> str:
    name = base
    while name in taken:
        name = f"_{name}"
    return name


def describe_value(value: JSON) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:197] + "..."


def _value_type(value: JSON) -> str:
    t = json_type(value)
    return "number" if t == "integer" and isinstance(value, float) else t
