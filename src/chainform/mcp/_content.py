"""MCP tool results -> what a chainform tool returns to the model (tool results are text or JSON)."""

from __future__ import annotations

import json
from typing import Any

from chainform.errors import ToolError


def _part_text(part: Any) -> str:
    kind = getattr(part, "type", "")
    if kind == "text":
        return str(part.text)
    if kind in ("image", "audio"):
        size = len(part.data) * 3 // 4  # base64
        return f"[{kind} {part.mime_type}, about {size} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource {part.name}: {part.uri}]"
    if kind == "resource":
        resource = part.resource
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[binary resource {resource.uri}, not shown]"
    return f"[{kind or type(part).__name__} content, not shown]"


def tool_result(result: Any, max_output: int) -> Any:
    """Structured content when the server sent it (the SDK has already checked it against the
    tool's outputSchema), else the text of its content parts; `isError` becomes a ToolError.

    Longer than `max_output` characters, the result is cut to that and says so (the model would
    otherwise get a server's 50 MB answer whole); cut structured content is sent as its JSON text."""
    text = "\n".join(_part_text(p) for p in result.content or ())
    if result.is_error:
        raise ToolError(_cut(text, max_output) or "the MCP tool reported an error")
    if result.structured_content is not None:
        data = json.dumps(result.structured_content, ensure_ascii=False)
        return result.structured_content if len(data) <= max_output else _cut(data, max_output)
    return _cut(text, max_output)


def _cut(text: str, max_output: int) -> str:
    if len(text) <= max_output:
        return text
    return text[:max_output] + f"\n[result truncated at {max_output} of {len(text)} characters]"
