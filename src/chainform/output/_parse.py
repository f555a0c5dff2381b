"""Finding the JSON in a model's reply: fenced, bare, or surrounded by chatter."""

from __future__ import annotations

import re
from typing import Any

from chainform._json import decode_prefix, load_json
from chainform.errors import JSONLimitError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 32  # brackets tried as the start of the JSON; each try may scan the rest of the text


def extract_json(text: str) -> Any:
    """The JSON value in `text`. Raises ValueError saying what was wrong (fed back to the model)."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply was empty; expected a JSON value")
    try:
        return load_json(stripped)
    except JSONLimitError:
        raise
    except ValueError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return load_json(block.strip())
        except ValueError:
            continue
    first_error: str | None = None
    for _, match in zip(range(_MAX_STARTS), re.finditer(r"[\[{]", stripped), strict=False):
        try:
            return decode_prefix(stripped, match.start())[0]
        except JSONLimitError:
            raise
        except ValueError as exc:
            first_error = first_error or str(exc)
    detail = f" ({first_error})" if first_error else ""
    raise ValueError(f"no valid JSON found in the reply{detail}: {stripped[:200]!r}")
