"""Moving values between the user's schema and a dialect's converted schema.

`restore` undoes what the converter changed in the SHAPE of data (nulls standing for absent optional
fields, the root wrapper); `forward` is its mirror, used to measure and test round trips: what a
provider that honours the converted schema could emit for a given value.
"""

from __future__ import annotations

from typing import Any, Literal

from chainform.schema._dialect_convert import Policy
from chainform.schema._dialect_refs import normalize, type_accepts, types_of

JSON = Any
Mode = Literal["forward", "restore"]


def walk(value: JSON, node: JSON, root: JSON, policy: Policy, mode: Mode, depth: int = 0) -> JSON:
    """`value` mapped one way through `node` of the user's (original) schema."""
    if not isinstance(node, dict) or depth > 200:
        return value
    node = normalize(node, root, [], follow_refs=True)
    branches = [b for key in ("anyOf", "oneOf") for b in node.get(key) or []]
    if branches:
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        branch = _pick(value, [normalize(b, root, [], follow_refs=True) for b in branches])
        node = (
            normalize({**rest, "allOf": [branch]}, root, [], follow_refs=True) if branch is not None else rest
        )
    if isinstance(value, dict):
        return _walk_object(value, node, root, policy, mode, depth)
    if isinstance(value, list):
        items = node.get("items")
        prefix = node.get("prefixItems", items if isinstance(items, list) else [])
        tail = (
            items
            if "prefixItems" in node
            else node.get("additionalItems")
            if isinstance(items, list)
            else items
        )
        return [
            walk(v, prefix[i] if i < len(prefix) else tail, root, policy, mode, depth + 1)
            for i, v in enumerate(value)
        ]
    return value


def _walk_object(
    value: dict[str, Any], node: dict[str, Any], root: JSON, policy: Policy, mode: Mode, depth: int
) -> dict[str, Any]:
    raw = node.get("properties")
    props: dict[str, Any] = raw if isinstance(raw, dict) else {}
    required = set(node.get("required") or [])
    extra = node.get("additionalProperties", True)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in props:
            optional = key not in required
            if mode == "restore" and policy.all_required and optional and item is None:
                continue  # the dialect's stand-in for "absent"
            out[key] = walk(item, props[key], root, policy, mode, depth + 1)
        elif mode == "forward" and policy.close_objects and key not in required:
            continue  # a provider held to additionalProperties: false cannot emit this key
        else:
            out[key] = walk(item, extra, root, policy, mode, depth + 1)
    if mode == "forward" and policy.all_required:
        for key, sub in props.items():
            if key not in out and sub is not False:
                out[key] = None
    return out


def _pick(value: JSON, branches: list[JSON]) -> JSON:
    """The union branch `value` most plausibly came from (shape, not full validation)."""
    best, best_score = None, -(10**9)
    for branch in branches:
        if not isinstance(branch, dict):
            continue
        if not type_accepts(types_of(branch), value):
            continue
        if "enum" in branch and value not in branch["enum"]:
            continue
        if "const" in branch and value != branch["const"]:
            continue
        score = 0
        if isinstance(value, dict):
            props = branch.get("properties") or {}
            score = sum(1 for k in value if k in props) - sum(1 for k in value if k not in props)
            score -= sum(1 for r in branch.get("required") or [] if r not in value)
        if score > best_score:
            best, best_score = branch, score
    return best
