"""MCP tool results -> what a chainform tool returns to the model: text or JSON, and images, audio
and binary resources as `Attachment`s (sent on as files, or converted, by the chain)."""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
from typing import Any

from chainform.errors import ToolError
from chainform.types import Attachment


def _part(part: Any) -> str | Attachment:
    """A content part as text, or as an Attachment when it is a file (an image, audio, a binary
    resource): the chain sends it to a model that reads it and converts it for one that does not."""
    kind = getattr(part, "type", "")
    if kind == "text":
        return str(part.text)
    if kind in ("image", "audio"):
        return _file(
            part.data, part.mime_type, f"{kind}{mimetypes.guess_extension(part.mime_type or '') or ''}"
        )
    if kind == "resource_link":
        return f"[resource {part.name}: {part.uri}]"
    if kind == "resource":
        resource = part.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        name = str(resource.uri).rstrip("/").rsplit("/", 1)[-1] or "resource"
        return _file(getattr(resource, "blob", ""), resource.mime_type, name)
    return f"[{kind or type(part).__name__} content, not shown]"


def _file(data: str, mime_type: str | None, name: str) -> str | Attachment:
    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{name}: not valid base64, not shown]"
    if not content:
        return f"[{name}: empty, not shown]"
    return Attachment(content=content, type=mime_type or None, name=name)


def tool_result(result: Any, max_output: int) -> Any:
    """Structured content when the server sent it (the SDK has already checked it against the
    tool's outputSchema), else the text of its content parts; `isError` becomes a ToolError.

    Longer than `max_output` characters, the result is cut to that and says so (the model would
    otherwise get a server's 50 MB answer whole); cut structured content is sent as its JSON text."""
    parts = [_part(p) for p in result.content or ()]
    files = [p for p in parts if isinstance(p, Attachment)]
    text = "\n".join(p for p in parts if isinstance(p, str))
    if result.is_error:
        raise ToolError(_cut(text, max_output) or "the MCP tool reported an error")
    if result.structured_content is not None:
        data = json.dumps(result.structured_content, ensure_ascii=False)
        return result.structured_content if len(data) <= max_output else _cut(data, max_output)
    if files:  # text and files: the chain sends each file on (chain/_attachments.py tool_files)
        return [_cut(text, max_output), *files] if text else files
    return _cut(text, max_output)


def _cut(text: str, max_output: int) -> str:
    if len(text) <= max_output:
        return text
    return text[:max_output] + f"\n[result truncated at {max_output} of {len(text)} characters]"
