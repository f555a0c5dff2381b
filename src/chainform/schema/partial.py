"""Best-effort parsing of a JSON prefix, for partial objects while a structured answer streams."""

from __future__ import annotations

import json
from typing import Any

_CLOSERS = {"{": "}", "[": "]"}


def parse_partial(text: str) -> Any | None:
    """The value a JSON prefix describes so far, or None when nothing usable has arrived.

    Open strings, arrays and objects are closed; a trailing key without a value, a dangling
    comma or an incomplete literal/number is dropped. Complete JSON parses as usual.
    """
    start = _first_json_char(text)
    if start < 0:
        return None
    body = text[start:]
    try:
        return json.loads(body)
    except ValueError:
        pass
    stack, in_string, cut = _scan(body)
    candidate = body[:cut] if cut is not None else body
    for attempt in _repairs(candidate, stack, in_string):
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    return None


def _first_json_char(text: str) -> int:
    positions = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return min(positions) if positions else -1


def _scan(body: str) -> tuple[list[str], bool, int | None]:
    """Track open containers and strings; stop after the top-level value closes."""
    stack: list[str] = []
    in_string = escaped = False
    for i, ch in enumerate(body):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
            if not stack:
                return [], False, i + 1
    return stack, in_string, None


def _repairs(prefix: str, stack: list[str], in_string: bool) -> list[str]:
    closing = "".join(_CLOSERS[c] for c in reversed(stack))
    base = prefix
    if in_string:
        if base.endswith("\\"):
            base = base[:-1]
        base += '"'
    candidates = [base + closing]
    trimmed = base.rstrip()
    # Drop an incomplete trailing member: `"key"`, `"key":`, `, ` or a partial literal/number.
    for sep in (",", ":", "[", "{"):
        idx = trimmed.rfind(sep)
        if idx >= 0:
            head = trimmed[: idx + 1] if sep in "[{" else trimmed[:idx]
            head = head.rstrip().rstrip(",")
            if head.endswith(":"):
                head = head[: head.rfind(",")] if "," in head else head[: head.rfind("{") + 1]
            candidates.append(head + closing)
    return candidates
