"""The rule-driven converter behind `chainform.schema.dialects.convert`.

A `Policy` says, as data, what one provider accepts; `Converter` walks the user's schema once and keeps,
rewrites, encodes or moves each keyword into the description. Constraints it moves are only ever
relaxations, never tightenings; what a dialect cannot express at all (free-form maps in closed-object
dialects, any-JSON values in typed ones, recursion past what the provider allows, enum values of the
wrong kind, an explicit null next to "absent") is ENCODED, with a codec mark that `restore` undoes
exactly (see `_dialect_codecs`). So every value valid for the user's schema stays emittable, and the final
check against the ORIGINAL schema restores the lost strictness.
"""

from __future__ import annotations

import re
from typing import Any

from chainform.errors import SchemaError
from chainform.schema._dialect_codecs import mark
from chainform.schema._dialect_refs import ANNOTATIONS, normalize, resolve_ref, types_of
from chainform.schema._dialect_rules import Policy
from chainform.schema._dialect_shapes import Shapes, describe_value

JSON = Any
ROOT_KEY = "value"

_SINGLE = frozenset(
    {"not", "if", "then", "else", "contains", "propertyNames", "additionalItems", "unevaluatedItems"}
    | {"unevaluatedProperties"}
)
_MAPS = ("patternProperties", "dependentSchemas", "dependencies")
_LISTS = ("anyOf", "oneOf", "prefixItems")
# Keywords the converter itself rewrites; everything else is kept or moved by the policy.
_STRUCTURAL = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "anyOf", "oneOf", "enum", "const"}
)
_TYPE_KEYWORDS = {
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "additionalItems"},
    "object": {"properties", "required", "additionalProperties", "patternProperties", "minProperties"}
    | {"maxProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies"},
}
_TYPE_KEYWORDS["integer"] = _TYPE_KEYWORDS["number"]
_CONSTRAINTS = frozenset(
    {"not", "if", "then", "else", "minContains", "maxContains", "dependentRequired", "$ref"}
    | set().union(*_TYPE_KEYWORDS.values())
    | _SINGLE
)
_LOOKAROUND = re.compile(r"\(\?[=!<]|\\[1-9bBk]")


class Converter(Shapes):
    """Converts one schema under one policy; collects lossy changes in `notes`."""

    def __init__(self, root: JSON, policy: Policy) -> None:
        self.root = root
        self.p = policy
        self.notes: list[str] = []
        self.defs: dict[str, JSON] = {}
        self._def_names: dict[str, str] = {}
        self._active: list[str] = []

    # -- entry -------------------------------------------------------------------------------------
    def run(self) -> tuple[dict[str, Any], bool]:
        try:
            out = self.node(self.root, "$")
        except RecursionError as exc:
            raise SchemaError("Schema is nested too deeply to convert") from exc
        wrapped = False
        if self.p.wrap_root and not _is_plain_object(out):
            out = mark(
                {"type": "object", "properties": {ROOT_KEY: out}, "required": [ROOT_KEY]}, box=ROOT_KEY
            )
            if self.p.close_objects:
                out["additionalProperties"] = False
            wrapped = True
            self.notes.append(f"$: root is not an object; wrapped as {{{ROOT_KEY!r}: ...}}")
        if self.defs:
            out = {**out, "$defs": self.defs}
        return out, wrapped

    def note(self, path: str, text: str) -> None:
        self.notes.append(f"{path}: {text}")

    # -- nodes -------------------------------------------------------------------------------------
    def node(self, node: JSON, path: str) -> JSON:
        if node is True or node == {}:
            return self.any_schema(path)
        if node is False:
            raise SchemaError(f"{path}: a `false` schema (nothing allowed) cannot be expressed")
        if not isinstance(node, dict):
            raise SchemaError(f"{path}: a schema must be an object or a boolean")
        lost: list[str] = []
        inline = self.p.refs == "inline"
        if "$ref" in node and not inline:
            return self.kept_ref(node, path)
        if inline and "$ref" in node:
            ref = node["$ref"]
            if self._active.count(ref) >= (self.p.inline_depth if self.p.recursion else 1):
                return self.json_text(path, f"recursion of {ref} past {self.p.inline_depth} levels")
            self._active.append(ref)
            try:
                return self.node(normalize(node, self.root, lost, follow_refs=True), path)
            finally:
                self._active.pop()
                self.notes.extend(f"{path}: {x}" for x in lost)
        node = normalize(node, self.root, lost, follow_refs=False)
        self.notes.extend(f"{path}: {x}" for x in lost)
        if "$ref" in node:  # allOf brought a $ref back in
            return self.node(node, path)
        return self.typed_node(node, path)

    def kept_ref(self, node: dict[str, Any], path: str) -> JSON:
        ref = node["$ref"]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if any(k not in ANNOTATIONS for k in rest):
            # 2020-12 applies $ref's siblings too: merge the target in by value, one level.
            merged = normalize(
                {**rest, "allOf": [resolve_ref(self.root, ref)]}, self.root, [], follow_refs=False
            )
            return self.node(merged, path)
        if not self.p.recursion and ref in self._active:
            return self.json_text(path, f"recursion of {ref}, which this dialect does not allow")
        name = self._def_names.get(ref)
        if name is None:
            name = self._def_names[ref] = _def_name(ref, self.defs)
            self.defs[name] = {}
            self._active.append(ref)
            try:
                self.defs[name] = self.node(resolve_ref(self.root, ref), f"{path}<{ref}>")
            finally:
                self._active.pop()
        out: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
        if isinstance(rest.get("description"), str):
            out["description"] = rest["description"]
        return out

    def typed_node(self, node: dict[str, Any], path: str) -> JSON:
        if ("anyOf" in node or "oneOf" in node) and (self.p.close_objects or self.p.typed):
            spread = self.spread_union(node, path)
            if spread is not None:
                return spread
        coded = self.coded_values(node, path)
        if coded is not None:
            return coded
        types = types_of(node)
        if types is None:
            types = _implied_types(node)
        non_null = [t for t in types or [] if t != "null"]
        split = self.p.nullable_keyword or self.p.typed or (self.p.close_objects and "object" in non_null)
        if types is not None and len(non_null) > 1 and split:
            branches = [self.typed_node({**node, "type": t}, f"{path}<{t}>") for t in non_null]
            out: dict[str, Any] = {"anyOf": branches}
            if "null" in types:
                out = self.add_null(out)
            return self.describe(out, node, {}, path)
        if types is None and self.p.typed and not any(k in node for k in ("anyOf", "oneOf", "enum", "const")):
            out = self.any_schema(path)
            return self.describe(out, node, {k: v for k, v in node.items() if k in _CONSTRAINTS}, path)
        out = {}
        moved: dict[str, Any] = {}
        if types is not None:
            out["type"] = types[0] if len(types) == 1 else types
            if self.p.nullable_keyword and "null" in types:
                out["type"] = non_null[0] if non_null else "null"
                if non_null:
                    out["nullable"] = True
        applicable = set().union(*(_TYPE_KEYWORDS.get(t, set()) for t in types)) if types else None
        for key, value in node.items():
            if key in ANNOTATIONS or key == "type":
                continue
            if (
                applicable is not None
                and key not in applicable
                and any(key in s for s in _TYPE_KEYWORDS.values())
            ):
                continue  # constrains a type the node does not allow: means nothing, drop silently
            if key in _STRUCTURAL or key not in _CONSTRAINTS:
                continue  # rewritten below, or not a JSON Schema keyword at all (x-*, vendor extensions)
            if key in self.p.keep and not self.refused(key, value):
                out[key] = self.children(key, value, path)
            else:
                moved[key] = value
        self.values(node, out, moved, path)
        if "anyOf" in node or "oneOf" in node:
            self.union(node, out, path)
        implied = types is None and any(k in node for k in ("properties", "required", "additionalProperties"))
        if implied or "object" in (types or []):
            self.obj(node, out, path)
        if (types is None or "array" in types) and ("items" in node or "prefixItems" in node):
            self.arr(node, out, path)
        return self.describe(out, node, moved, path)

    # -- helpers -----------------------------------------------------------------------------------
    def refused(self, key: str, value: JSON) -> bool:
        """A kept keyword whose particular value the provider still rejects."""
        p = self.p
        if key == "format":
            return p.formats is not None and value not in p.formats
        if key == "pattern":
            return p.simple_patterns and bool(_LOOKAROUND.search(str(value)))
        if key == "minItems":
            return p.max_min_items is not None and isinstance(value, int) and value > p.max_min_items
        return False

    def children(self, key: str, value: JSON, path: str) -> JSON:
        """Convert the subschemas inside a kept keyword so their $refs stay valid."""
        if key in _SINGLE and isinstance(value, dict):
            return self.node(value, f"{path}.{key}")
        if key in _MAPS and isinstance(value, dict):
            return {
                k: self.node(v, f"{path}.{key}.{k}") if isinstance(v, dict) else v for k, v in value.items()
            }
        if key in _LISTS and isinstance(value, list):
            return [self.node(v, f"{path}.{key}[{i}]") for i, v in enumerate(value)]
        return value

    def describe(self, out: dict[str, Any], node: dict[str, Any], moved: dict[str, Any], path: str) -> JSON:
        text = node.get("description") if isinstance(node.get("description"), str) else None
        if isinstance(node.get("title"), str) and "title" in self.p.keep:
            out["title"] = node["title"]
        if moved:
            self.note(path, "moved to description: " + ", ".join(sorted(moved)))
            bits = "; ".join(f"{k}: {describe_value(v)}" for k, v in moved.items())
            text = f"{text} ({bits})" if text else f"Constraints: {bits}"
        if text:
            out["description"] = text
        return out


def _def_name(ref: str, taken: dict[str, JSON]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", ref.rsplit("/", 1)[-1] or "root") or "root"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _implied_types(node: dict[str, Any]) -> list[str] | None:
    if "properties" in node or "additionalProperties" in node or "required" in node:
        return ["object"]
    if "items" in node or "prefixItems" in node:
        return ["array"]
    return None


def _is_plain_object(schema: JSON) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object" and "anyOf" not in schema
