"""Messages to and from JSON for the log (pydantic), with secrets redacted on the way in.

Every content part of `chainform.types` is a dataclass with a `type` tag, so one pydantic
`TypeAdapter` over their discriminated union reads and writes them; bytes travel as base64.
`raw_representation` (a provider's own object) is never stored: it is not portable and may carry
headers or keys.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter
from pydantic_core import to_json

from chainform._json import canonical_json as canonical_json  # the log's form of a schema
from chainform.keys import mentions_secret
from chainform.keys import redact as mask_keys
from chainform.store._attachments import Blobs, without_bytes
from chainform.types import Message, encodable_text
from chainform.types._content import (
    Content,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    TextReasoningContent,
    UriContent,
)

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
    SQLite can encode (model text may hold lone surrogates, which would drop the row). One flat pass:
    a row's values are scalars and JSON text."""
    texts = "\x00".join([v for v in row if isinstance(v, str)])  # most rows need neither: test once
    if texts.isascii() and not mentions_secret(texts):
        return row
    return tuple(encodable_text(mask_keys(v)) if isinstance(v, str) else v for v in row)


@functools.lru_cache(maxsize=4096)  # a log sees the same few keys in every row
def looks_secret(key: str) -> bool:
    """True for mapping keys whose value should never reach the log."""
    return bool(_SECRET_KEY.search(key))


def redact(value: Any) -> Any:
    """A copy of `value` where every mapping entry under a secret-looking key is replaced."""
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(k, str) and looks_secret(k)
            else redact(v)
            if isinstance(v, _NESTED)
            else v
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) if isinstance(v, _NESTED) else v for v in value]
    return value


_NESTED = (dict, list, tuple)  # what `redact` looks into; other values are kept (not called on)


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
_MESSAGE: TypeAdapter[Message] = TypeAdapter(StoredMessage)  # type: ignore[arg-type]

Encoded = dict[int, tuple[Message, str]]
"""Messages already encoded while writing one chain's rows: id -> (the message, its JSON)."""


def messages_to_json(
    messages: list[Message], encoded: Encoded | None = None, blobs: Blobs | None = None
) -> str:
    """The stored JSON of a list of messages. A chain's later calls resend every message of the
    earlier ones: with `encoded` (one per write of a chain's rows, while the messages cannot
    change) each message is encoded once, not once per call it was sent with. With `blobs`, inline
    bytes are stored by their sha256 and kept in `blobs` for the attachments table."""
    if encoded is None:
        encoded = {}
    parts = []
    for message in messages:
        known = encoded.get(id(message))
        if known is None:
            known = encoded[id(message)] = (message, _message_json(message, blobs))
        parts.append(known[1])
    return "[" + ",".join(parts) + "]"


def _message_json(message: Message, blobs: Blobs | None = None) -> str:
    if blobs is not None and any(isinstance(c, DataContent) and c.data for c in message.contents):
        light = copy.copy(message)
        light.contents, keys = without_bytes(message.contents, blobs)
        stored = _MESSAGE.dump_python(light, mode="json")
        for position, key in keys.items():
            stored["contents"][position]["sha256"] = key
        return dumps(stored)
    if message.additional_properties:  # extras are redacted (`message_to_dict`): rare
        return _stored_json(message)
    try:  # the text `message_to_dict` gives, in one pass of the serializer over the contents
        contents = _contents_json(message.contents)
    except ValueError:  # lone surrogates (see `dumps`)
        return _stored_json(message)
    role = _ROLES.get(message.role) or to_json(str(message.role)).decode()
    out = f'{{"role":{role},"contents":{contents}'
    if message.author_name is not None:
        out += f',"author_name":{to_json(message.author_name).decode()}'
    if message.message_id is not None:
        out += f',"message_id":{to_json(message.message_id).decode()}'
    return out + "}"


PLAIN_PARTS = frozenset(
    {TextContent, TextReasoningContent, FunctionCallContent, FunctionResultContent, ErrorContent, UriContent}
)
"""Parts whose fields are text, numbers and plain JSON values: pydantic_core's inference gives
the union's own JSON for them (same fields, same order) without the discriminated union's
dispatch (about a third of a message's encoding)."""


def _contents_json(contents: list[Content]) -> str:
    if all(type(c) in PLAIN_PARTS for c in contents):
        return to_json(contents, fallback=str, bytes_mode="base64").decode()
    return _CONTENTS.dump_json(contents, fallback=str).decode()


_ROLES = {role: f'"{role}"' for role in ("system", "user", "assistant", "tool")}


def _stored_json(message: Message) -> str:
    try:
        return _MESSAGE.dump_json(message).decode()
    except ValueError:  # lone surrogates (see `dumps`)
        return dumps(_MESSAGE.dump_python(message, mode="json"))


def messages_from_json(text: str | None) -> list[Message]:
    return _MESSAGES.validate_json(text) if text else []
