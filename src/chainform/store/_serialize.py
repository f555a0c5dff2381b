"""Messages to and from JSON for the log, with secrets redacted on the way in.

Every content part type of `chainform.types` round-trips; `raw_representation` (a provider's own
object) is never stored: it is not portable and may carry headers or keys.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from typing import Any

from chainform.store._records import StoreError
from chainform.types import (
    Content,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    TextContent,
    TextReasoningContent,
    UriContent,
    UsageContent,
    UsageDetails,
    encodable_text,
)

REDACTED = "[redacted]"

# A key "looks secret" when one of its _/-/. separated words is key/token/secret/...:
# "api_key", "x-api-key", "session_token", "Authorization" match; "max_tokens", "monkey" do not.
_SECRET_KEY = re.compile(
    r"(^|[_\-.\s])(api[_\-]?key|key|secret|token|password|passwd|authorization|auth|credentials?|bearer)($|[_\-.\s])",
    re.IGNORECASE,
)


def storable_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row SQLite can encode: model text may hold lone surrogates, which would drop the row."""
    return tuple(encodable_text(v) if isinstance(v, str) else v for v in row)


def looks_secret(key: str) -> bool:
    """True for mapping keys whose value should never reach the log."""
    return bool(_SECRET_KEY.search(key))


def redact(value: Any) -> Any:
    """A copy of `value` where every mapping entry under a secret-looking key is replaced."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and looks_secret(k) else redact(v)) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def to_jsonable(value: Any) -> Any:
    """Best-effort JSON-able form: pydantic models, dataclasses, sets; anything else as its str()."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_jsonable(dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def dumps(value: Any) -> str:
    """Compact JSON of `value` made JSON-able first (never raises on odd objects)."""
    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


def content_to_dict(content: Content) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    if isinstance(content, TextReasoningContent):
        return {"type": "reasoning", "text": content.text, "protected_data": content.protected_data}
    if isinstance(content, DataContent):
        return {"type": "data", "media_type": content.media_type, "data": content.base64}
    if isinstance(content, UriContent):
        return {"type": "uri", "uri": content.uri, "media_type": content.media_type}
    if isinstance(content, FunctionCallContent):
        return {
            "type": "function_call",
            "call_id": content.call_id,
            "name": content.name,
            "arguments": to_jsonable(content.arguments),
            "raw_arguments": content.raw_arguments,
        }
    if isinstance(content, FunctionResultContent):
        return {
            "type": "function_result",
            "call_id": content.call_id,
            "name": content.name,
            "result": to_jsonable(content.result),
            "error": content.error,
        }
    if isinstance(content, ErrorContent):
        return {"type": "error", "message": content.message, "error_code": content.error_code}
    if isinstance(content, UsageContent):
        return {"type": "usage", "details": content.details.to_dict()}
    raise StoreError(f"cannot log content part of type {type(content).__name__}")


def usage_from_dict(data: dict[str, Any] | None) -> UsageDetails | None:
    if data is None:
        return None
    return UsageDetails(
        input_tokens=data.get("input_tokens"),
        output_tokens=data.get("output_tokens"),
        total_tokens=data.get("total_tokens"),
        additional_counts=dict(data.get("additional_counts") or {}),
    )


def content_from_dict(data: dict[str, Any]) -> Content:
    kind = data.get("type")
    if kind == "text":
        return TextContent(data["text"])
    if kind == "reasoning":
        return TextReasoningContent(data["text"], data.get("protected_data"))
    if kind == "data":
        return DataContent(base64.b64decode(data["data"]), data["media_type"])
    if kind == "uri":
        return UriContent(data["uri"], data.get("media_type"))
    if kind == "function_call":
        return FunctionCallContent(
            data["call_id"], data["name"], data.get("arguments"), data.get("raw_arguments")
        )
    if kind == "function_result":
        return FunctionResultContent(data["call_id"], data.get("result"), data.get("error"), data.get("name"))
    if kind == "error":
        return ErrorContent(data["message"], data.get("error_code"))
    if kind == "usage":
        return UsageContent(usage_from_dict(data.get("details")) or UsageDetails())
    raise StoreError(f"unknown content type in log: {kind!r}")


def message_to_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": str(message.role),
        "contents": [content_to_dict(c) for c in message.contents],
    }
    if message.author_name is not None:
        out["author_name"] = message.author_name
    if message.message_id is not None:
        out["message_id"] = message.message_id
    if message.additional_properties:
        out["additional_properties"] = redact(to_jsonable(message.additional_properties))
    return out


def message_from_dict(data: dict[str, Any]) -> Message:
    try:
        return Message(
            data["role"],
            [content_from_dict(c) for c in data.get("contents", [])],
            author_name=data.get("author_name"),
            message_id=data.get("message_id"),
            additional_properties=data.get("additional_properties"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"malformed message in log: {exc}") from exc


def messages_to_json(messages: list[Message]) -> str:
    return json.dumps([message_to_dict(m) for m in messages], ensure_ascii=False, separators=(",", ":"))


def messages_from_json(text: str | None) -> list[Message]:
    if not text:
        return []
    return [message_from_dict(d) for d in json.loads(text)]


def canonical_json(value: Any) -> str:
    """The one byte form of a schema that its content-addressed id hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
