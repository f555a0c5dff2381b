"""MCP tool results -> what a chainform tool returns to the model (tool results are text or JSON)."""

from __future__ import annotations

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


def tool_result(result: Any) -> Any:
    """Structured content when the server sent it (the SDK has already checked it against the
    tool's outputSchema), else the text of its content parts; `isError` becomes a ToolError."""
    text = "\n".join(_part_text(p) for p in result.content or ())
    if result.is_error:
        raise ToolError(text or "the MCP tool reported an error")
    if result.structured_content is not None:
        return result.structured_content
    return text
