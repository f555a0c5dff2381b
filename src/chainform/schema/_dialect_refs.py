"""Shared schema plumbing for the dialect converter and the value walkers.

Both sides must see the SAME shape of the user's schema (refs followed, allOf merged, draft-04 quirks
read as 2020-12), otherwise `restore` would undo changes that `convert` never made. So both call
`normalize` here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from chainform.errors import SchemaError

JSON = Any

# Keywords that describe without constraining: never worth a note when dropped.
ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "id",
        "$comment",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
        "title",
        "description",
        "default",
        "examples",
        "example",
        "readOnly",
        "writeOnly",
        "deprecated",
        "$defs",
        "definitions",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)


def resolve_ref(root: JSON, ref: str) -> JSON:
    """Follow a document-local `$ref` ("#", "#/a/b"); anything else cannot be converted offline."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise SchemaError(f"Only document-local $ref can be converted, got {ref!r}")
    pointer = unquote(ref[1:])
    if pointer and not pointer.startswith("/"):
        raise SchemaError(f"$ref to a named anchor is not supported: {ref!r}")
    node = root
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise SchemaError(f"$ref {ref!r} points at nothing in the schema")
    return node


def types_of(node: dict[str, Any]) -> list[str] | None:
    """The node's declared types as a list, or None when it declares none."""
    t = node.get("type")
    if t is None:
        return None
    return [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)]


def json_type(value: JSON) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fix_draft04(node: dict[str, Any]) -> dict[str, Any]:
    """Draft-04 boolean exclusiveMinimum/Maximum become the numeric 2020-12 form."""
    for excl, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(excl), bool):
            node = dict(node)
            if node.pop(excl) and bound in node:
                node[excl] = node.pop(bound)
    return node


def _merge_two(a: dict[str, Any], b: dict[str, Any], lost: list[str]) -> dict[str, Any]:
    """Intersect two schemas where the result is still one plain schema; record what could not be."""
    out = dict(a)
    for key, bv in b.items():
        if key not in out:
            out[key] = bv
            continue
        av = out[key]
        if av == bv:
            continue
        if key == "type":
            ta = [av] if isinstance(av, str) else list(av)
            tb = [bv] if isinstance(bv, str) else list(bv)
            both = [t for t in ta if t in tb or (t == "integer" and "number" in tb)]
            both += [t for t in tb if t == "integer" and "number" in ta and t not in both]
            if not both:
                raise SchemaError("allOf branches require incompatible types; no value can match")
            out[key] = both[0] if len(both) == 1 else both
        elif key == "allOf":
            out[key] = [*av, *bv]
        elif key == "required":
            out[key] = list(dict.fromkeys([*av, *bv]))
        elif key == "properties" and isinstance(av, dict) and isinstance(bv, dict):
            props = dict(av)
            for name, sub in bv.items():
                props[name] = sub if name not in props else {"allOf": [props[name], sub]}
            out[key] = props
        elif key == "enum" and isinstance(av, list) and isinstance(bv, list):
            out[key] = [v for v in av if v in bv]
        elif key in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"):
            out[key] = max(av, bv)
        elif key in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"):
            out[key] = min(av, bv)
        elif key in ANNOTATIONS:
            continue
        else:
            lost.append(f"allOf: kept the first of two different {key!r}")
    return out


def normalize(node: JSON, root: JSON, lost: list[str], *, follow_refs: bool) -> JSON:
    """One node in converter shape: draft-04 read as 2020-12, allOf merged, `$ref` merged when asked.

    Merging is only ever an intersection of what the branches say, so a value that fits the user's
    schema fits the merged one; whatever cannot be merged is reported in `lost` (the final check against
    the original still applies it).
    """
    if not isinstance(node, dict):
        return node
    node = _fix_draft04(node)
    guard = 0
    while (follow_refs and "$ref" in node) or "allOf" in node:
        guard += 1
        if guard > 64:
            raise SchemaError("$ref/allOf chain is too deep (or cyclic) to merge")
        node = dict(node)
        parts: list[JSON] = []
        if follow_refs and "$ref" in node:
            parts.append(resolve_ref(root, node.pop("$ref")))
        parts.extend(node.pop("allOf", []) or [])
        for part in parts:
            if part is False:
                raise SchemaError("allOf contains `false`: no value can match")
            if isinstance(part, dict):
                if "$ref" in part:  # a branch's ref is merged by value, whatever the mode
                    part = {
                        "allOf": [resolve_ref(root, part["$ref"])],
                        **{k: v for k, v in part.items() if k != "$ref"},
                    }
                node = _merge_two(node, _fix_draft04(part), lost)
    return node
