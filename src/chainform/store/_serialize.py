"""Messages to and from JSON for the log (pydantic), with secrets redacted on the way in.

Every content part of `chainform.types` is a dataclass with a `type` tag, so one pydantic
`TypeAdapter` over their discriminated union reads and writes them; bytes travel as base64.
`raw_representation` (a provider's own object) is never stored: it is not portable and may carry
headers or keys.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter

from chainform._json import canonical_json as canonical_json  # the log's form of a schema
from chainform.keys import redact as mask_keys
from chainform.store._attachments import Blobs, with_bytes, without_bytes
from chainform.store._fragments import Texts, has_fragments, without_text
from chainform.types import Message, encodable_text
from chainform.types._content import Content, DataContent

REDACTED = "[redacted]"

# A key "looks secret" when one of its _/-/. separated words is key/token/secret/...:
# "api_key", "x-api-key", "session_token", "Authorization" match; "max_tokens", "monkey" do not.
_SECRET_KEY = re.compile(
    r"(^|[_\-.\s])(api[_\-]?key|key|secret|token|password|passwd|authorization|auth|credentials?|bearer)($|[_\-.\s])",
    re.IGNORECASE,
)

_BYTES = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")
_CONTENTS: TypeAdapter[list[Content]] = TypeAdapter(
    list[Annotated[Content, Field(discriminator="type")]],  # type: ignore[arg-type]
    config=_BYTES,
)
_ANY: TypeAdapter[Any] = TypeAdapter(Any, config=_BYTES)


def storable_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as the log writes it: every loaded key value masked (`chainform.keys.redact`), and text
    SQLite can encode (model text may hold lone surrogates, which would drop the row)."""
    return tuple(encodable_text(mask_keys(v)) if isinstance(v, str) else v for v in row)


def redact(value: Any) -> Any:
    """A copy of `value` where every mapping entry under a secret-looking key is replaced."""
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def to_jsonable(value: Any) -> Any:
    """The JSON-able form pydantic gives (models, dataclasses, bytes as base64); odd objects as str()."""
    return _ANY.dump_python(value, mode="json", fallback=str)


def dumps(value: Any) -> str:
    """Compact JSON of `value` (never raises on odd objects).

    Model text may hold lone surrogates, which UTF-8 (and so pydantic's JSON writer) cannot encode:
    such values go through the json module, and `storable_row` escapes them for SQLite."""
    try:
        return _ANY.dump_json(value, fallback=str).decode()
    except ValueError:
        return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


def message_to_dict(message: Message) -> dict[str, Any]:
    """The stored form of a message (extras redacted; the provider's raw object dropped)."""
    out: dict[str, Any] = {
        "role": str(message.role),
        "contents": _CONTENTS.dump_python(message.contents, mode="json", fallback=str),
    }
    if message.author_name is not None:
        out["author_name"] = message.author_name
    if message.message_id is not None:
        out["message_id"] = message.message_id
    if message.additional_properties:
        out["additional_properties"] = redact(to_jsonable(message.additional_properties))
    return out


def message_from_dict(data: Any) -> Message:
    """A message back from its stored form (a Message passes through unchanged)."""
    if isinstance(data, Message):
        return data
    if not isinstance(data, dict) or "role" not in data:
        raise ValueError("a logged message needs a role")
    return Message(
        data["role"],
        _CONTENTS.validate_python(data.get("contents") or []),
        author_name=data.get("author_name"),
        message_id=data.get("message_id"),
        additional_properties=data.get("additional_properties"),
    )


StoredMessage = Annotated[
    Message,
    PlainValidator(message_from_dict),
    PlainSerializer(message_to_dict, return_type=dict[str, Any]),
]
"""A Message as a field of a pydantic model: validated from and serialized to its stored form."""

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[StoredMessage])  # type: ignore[arg-type]


def messages_to_json(messages: list[Message], blobs: Blobs | None = None, texts: Texts | None = None) -> str:
    """The stored JSON of a list of messages. With `blobs`, inline bytes are stored by their sha256
    and kept in `blobs` for the attachments table (store/_attachments.py); with `texts`, fragment
    parts are stored empty and their text kept in `texts` for the fragments table (store/_fragments.py)."""
    return dumps([stored_message(message, blobs, texts) for message in messages])


def stored_message(message: Message, blobs: Blobs | None, texts: Texts | None = None) -> dict[str, Any]:
    """The stored form of `message` (`message_to_dict`); with `blobs`, each inline part's bytes
    are kept there and the part is stored as `{"data": "", "sha256": ...}`, never base64-encoded."""
    if blobs is None or not any(isinstance(c, DataContent) and c.data for c in message.contents):
        stored = message_to_dict(message)
    else:
        light = copy.copy(message)
        light.contents, keys = without_bytes(message.contents, blobs)
        stored = message_to_dict(light)
        for position, key in keys.items():
            stored["contents"][position]["sha256"] = key
    if texts is not None and has_fragments(message):
        without_text(message, stored, texts)
    return stored


def message_from_stored(data: Any, files: Callable[[str], bytes] | None) -> Message:
    """A message back from `stored_message`'s form: each part stored by its sha256 gets the bytes
    `files` gives for that key (without `files` it is left empty). Inline base64 (an older log) reads as it is."""
    if files is not None and isinstance(data, dict) and isinstance(data.get("contents"), list):
        data = {**data, "contents": with_bytes(data["contents"], files)}
    return message_from_dict(data)


def messages_from_json(text: str | None) -> list[Message]:
    return _MESSAGES.validate_json(text) if text else []
