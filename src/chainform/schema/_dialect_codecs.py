"""Moving values between the user's schema and a dialect's converted schema, through its codecs.

The converter marks every node whose value it ENCODES (a free-form map as key/value pairs, an arbitrary
value as `{"json": "<JSON text>"}`, an explicit null boxed as `{"value": null}`, enum values spelled as strings, the root
wrapper, nulls standing for absent optional fields) with a codec. `strip` takes the marks out of the
schema the provider gets and keys them by JSON pointer; `Codecs.decode` walks a provider's output along
the CONVERTED schema and undoes each codec exactly (that is `restore`), `Codecs.encode` is its mirror
(what a provider honouring the converted schema emits for a value: `forward_instance`).

Decoding never raises and never validates: output that does not have the encoded shape is left as it is,
and the final check against the user's original schema judges the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chainform._json import load_json

JSON = Any
CODEC = "x-chainform-codec"  # the converter's mark on a node; never reaches a provider
_MAX_DEPTH = 200


def mark(schema: dict[str, Any], **codec: Any) -> dict[str, Any]:
    """`schema` carrying codec entries (merged with any it already has)."""
    return {**schema, CODEC: {**schema.get(CODEC, {}), **codec}}


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def strip(schema: JSON) -> tuple[JSON, dict[str, dict[str, Any]]]:
    """The schema without codec marks, and the marks keyed by JSON pointer ("#/properties/a")."""
    codecs: dict[str, dict[str, Any]] = {}

    def walk(node: JSON, ptr: str) -> JSON:
        if isinstance(node, dict):
            if CODEC in node:
                codecs[ptr] = node[CODEC]
            return {k: walk(v, f"{ptr}/{_escape(k)}") for k, v in node.items() if k != CODEC}
        if isinstance(node, list):
            return [walk(v, f"{ptr}/{i}") for i, v in enumerate(node)]
        return node

    return walk(schema, "#"), codecs


def _key(value: JSON) -> str:
    """Type-exact identity of a JSON value (1, 1.0 and True differ)."""
    return f"{type(value).__name__}:{json.dumps(value, sort_keys=True)}"


class Codecs:
    """The codecs of one converted schema, and the walks that apply or undo them."""

    def __init__(
        self, schema: JSON, codecs: dict[str, dict[str, Any]], accepts: Callable[[JSON, JSON], bool]
    ) -> None:
        self.schema = schema
        self.codecs = codecs
        self._accepts = accepts
        self._nodes: dict[str, JSON] = {}
        self._refs: list[tuple[str, str]] = []
        self._index(schema, "#")
        self._needs: dict[str, bool] = {}
        self._defs_needing = self._closure()
        self._validators: dict[str, JSON] = {}

    # -- indexing ----------------------------------------------------------------------------------
    def _index(self, node: JSON, ptr: str) -> None:
        if isinstance(node, dict):
            self._nodes[ptr] = node
            if isinstance(node.get("$ref"), str):
                self._refs.append((ptr, node["$ref"]))
            for k, v in node.items():
                self._index(v, f"{ptr}/{_escape(k)}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self._index(v, f"{ptr}/{i}")

    def _under(self, ptr: str, other: str) -> bool:
        return other == ptr or other.startswith(ptr + "/")

    def _closure(self) -> set[str]:
        """Targets of `$ref`s whose subtree holds a codec, directly or through further refs."""
        targets = {ref for _, ref in self._refs}
        needing = {t for t in targets if any(self._under(t, c) for c in self.codecs)}
        changed = True
        while changed:
            changed = False
            for t in targets - needing:
                if any(self._under(t, src) and ref in needing for src, ref in self._refs):
                    needing.add(t)
                    changed = True
        return needing

    def needs(self, ptr: str) -> bool:
        """Whether anything under `ptr` is encoded (else values pass through untouched)."""
        hit = self._needs.get(ptr)
        if hit is None:
            hit = any(self._under(ptr, c) for c in self.codecs) or any(
                self._under(ptr, src) and ref in self._defs_needing for src, ref in self._refs
            )
            self._needs[ptr] = hit
        return hit

    def _resolve(self, ptr: str) -> tuple[str, JSON]:
        node = self._nodes.get(ptr)
        for _ in range(64):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                break
            ptr = node["$ref"]
            node = self._nodes.get(ptr)
        return ptr, node

    def accepts(self, value: JSON, ptr: str) -> bool:
        sub = self._validators.get(ptr)
        if sub is None:
            node = self._nodes[ptr]
            defs = self.schema.get("$defs") if isinstance(self.schema, dict) else None
            sub = self._validators[ptr] = {**node, "$defs": defs} if defs and isinstance(node, dict) else node
        return self._accepts(value, sub)

    def _branches(self, ptr: str, node: dict[str, Any]) -> list[str]:
        return [f"{ptr}/anyOf/{i}" for i in range(len(node["anyOf"]))]

    # -- restore -----------------------------------------------------------------------------------
    def decode(self, value: JSON, ptr: str = "#", depth: int = 0) -> JSON:
        ptr, node = self._resolve(ptr)
        if not isinstance(node, dict) or depth > _MAX_DEPTH or not self.needs(ptr):
            return value
        codec = self.codecs.get(ptr, {})
        if isinstance(value, dict) and "optional" in codec:  # null is the dialect's "absent"
            value = {k: v for k, v in value.items() if not (v is None and k in codec["optional"])}
        if isinstance(node.get("anyOf"), list):
            branch = next((b for b in self._branches(ptr, node) if self.accepts(value, b)), None)
            if branch is not None:
                value = self.decode(value, branch, depth + 1)
        value = self._children(value, ptr, node, depth, self.decode)
        return _undo(codec, value)

    # -- forward -----------------------------------------------------------------------------------
    def encode(self, value: JSON, ptr: str = "#", depth: int = 0) -> JSON:
        ptr, node = self._resolve(ptr)
        if not isinstance(node, dict) or depth > _MAX_DEPTH or not self.needs(ptr):
            return value
        codec = self.codecs.get(ptr, {})
        value = _apply(codec, value)
        if isinstance(node.get("anyOf"), list):
            # Branches that carry the value as it is come first; JSON text is the last resort.
            for branch in sorted(self._branches(ptr, node), key=self._is_text):
                if not _applies(self.codecs.get(self._resolve(branch)[0], {}), value):
                    continue
                encoded = self.encode(value, branch, depth + 1)
                if self.accepts(encoded, branch):
                    value = encoded
                    break
        value = self._children(value, ptr, node, depth, self.encode)
        if isinstance(value, dict) and "optional" in codec:
            value = {**value, **{k: None for k in codec["optional"] if k not in value}}
        return value

    def _is_text(self, ptr: str) -> bool:
        return self.codecs.get(self._resolve(ptr)[0], {}).get("jsonbox") == "any"

    def _children(
        self, value: JSON, ptr: str, node: dict[str, Any], depth: int, step: Callable[[JSON, str, int], JSON]
    ) -> JSON:
        props = node.get("properties")
        if isinstance(value, dict) and isinstance(props, dict):
            return {
                k: step(v, f"{ptr}/properties/{_escape(k)}", depth + 1) if k in props else v
                for k, v in value.items()
            }
        if isinstance(value, list):
            raw = node.get("prefixItems")
            prefix: list[Any] = raw if isinstance(raw, list) else []
            items = node.get("items")
            out = []
            for i, v in enumerate(value):
                if i < len(prefix):
                    out.append(step(v, f"{ptr}/prefixItems/{i}", depth + 1))
                elif isinstance(items, dict):
                    out.append(step(v, f"{ptr}/items", depth + 1))
                else:
                    out.append(v)
            return out
        return value


def _applies(codec: dict[str, Any], value: JSON) -> bool:
    """Whether a union branch with this codec can carry `value` at all (maps never carry arrays...)."""
    if codec.get("jsonbox") == "composite":
        return isinstance(value, (dict, list))
    if "extras" in codec:
        return isinstance(value, dict)
    if "enum" in codec:
        return any(_key(orig) == _key(value) for _, orig in codec["enum"])
    return True


def _apply(codec: dict[str, Any], value: JSON) -> JSON:
    """One node's encoding, applied before its children are encoded."""
    if "enum" in codec:
        hits = [enc for enc, orig in codec["enum"] if _key(orig) == _key(value)]
        if not hits and any(_key(enc) == _key(value) for enc, _ in codec["enum"]):
            return [value]  # not in the enum but spelled like a member: no provider output can mean it
        return hits[0] if hits else value
    if "jsonbox" in codec and (codec["jsonbox"] == "any" or isinstance(value, (dict, list))):
        return {"json": json.dumps(value, ensure_ascii=False)}
    if "box" in codec:
        return {codec["box"]: value}
    if "pairs" in codec and isinstance(value, dict):
        return [{"key": k, "value": v} for k, v in value.items()]
    if "extras" in codec and isinstance(value, dict):
        declared = set(codec["declared"])
        extra = {k: v for k, v in value.items() if k not in declared}
        out = {k: v for k, v in value.items() if k in declared}
        if extra or codec.get("always"):
            out[codec["extras"]] = extra
        return out
    return value


def _undo(codec: dict[str, Any], value: JSON) -> JSON:
    """One node's decoding, applied after its children are decoded; shapes it does not know pass."""
    if "enum" in codec:
        return next((orig for enc, orig in codec["enum"] if _key(enc) == _key(value)), value)
    if (
        "jsonbox" in codec
        and isinstance(value, dict)
        and isinstance(value.get("json"), str)
        and len(value) == 1
    ):
        return _loads(value["json"])
    if "box" in codec and isinstance(value, dict) and codec["box"] in value:
        return value[codec["box"]]
    if "pairs" in codec and isinstance(value, list) and all(_is_pair(p) for p in value):
        return {p["key"]: p["value"] for p in value}
    if "extras" in codec and isinstance(value, dict) and isinstance(value.get(codec["extras"], 0), dict):
        value = dict(value)
        for k, v in value.pop(codec["extras"]).items():
            value.setdefault(k, v)
    elif "extras" in codec and isinstance(value, dict) and value.get(codec["extras"], 0) is None:
        value = {k: v for k, v in value.items() if k != codec["extras"]}
    return value


def _is_pair(item: JSON) -> bool:
    return isinstance(item, dict) and isinstance(item.get("key"), str) and "value" in item


def _loads(text: str) -> JSON:
    try:
        return load_json(text)  # model-written: under the same limits, integers judged on the literal
    except ValueError:
        return text
