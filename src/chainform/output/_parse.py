"""Finding the JSON in a model's reply: fenced, bare, or surrounded by chatter."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in `text`. Raises ValueError saying what was wrong (fed back to the model)."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply was empty; expected a JSON value")
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    first_error: str | None = None
    for match in re.finditer(r"[\[{]", stripped):
        try:
            value, _ = decoder.raw_decode(stripped, match.start())
            return value
        except ValueError as exc:
            first_error = first_error or str(exc)
    detail = f" ({first_error})" if first_error else ""
    raise ValueError(f"no valid JSON found in the reply{detail}: {stripped[:200]!r}")
