"""Content parts: the pieces a message is made of, identical for every provider."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from chainform._json import load_json
from chainform.types._usage import UsageDetails

_DATA_URI = re.compile(r"^data:(?P<media>[^;,]*)(?P<b64>;base64)?,(?P<data>.*)$", re.DOTALL)


def encodable_text(text: str) -> str:
    """`text` with what UTF-8 cannot encode (lone surrogates, e.g. from a model's `"\\ud800"`)
    written as `\\udXXX` escapes: a log row, a terminal or a request would refuse it whole.
    In JSON text such an escape is exact; elsewhere it is a readable, lossless marker."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def encodable_value(value: Any) -> Any:
    """`value` (parsed JSON) with every string made encodable; a copy where anything changed."""
    if isinstance(value, str):
        return encodable_text(value)
    if isinstance(value, dict):
        return {encodable_value(k): encodable_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encodable_value(v) for v in value]
    return value


@dataclass
class TextContent:
    text: str
    type: Literal["text"] = field(default="text", init=False)


@dataclass
class TextReasoningContent:
    """Reasoning ("thinking") text; `protected_data` keeps an opaque signature some providers require."""

    text: str
    protected_data: str | None = None
    type: Literal["reasoning"] = field(default="reasoning", init=False)


@dataclass
class DataContent:
    """Inline binary data (an image, a PDF...), given as bytes or as a data URI. `name` is the file
    name a provider is told where it takes one (OpenAI's filename, a Bedrock document's name)."""

    data: bytes
    media_type: str
    name: str | None = None

    type: Literal["data"] = field(default="data", init=False)

    @classmethod
    def from_uri(cls, uri: str) -> DataContent:
        match = _DATA_URI.match(uri)
        if match is None:
            raise ValueError("not a data URI (expected 'data:<media type>;base64,<data>')")
        raw = match.group("data")
        data = base64.b64decode(raw) if match.group("b64") else raw.encode()
        return cls(data=data, media_type=match.group("media") or "application/octet-stream")

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def uri(self) -> str:
        return f"data:{self.media_type};base64,{self.base64}"


@dataclass
class UriContent:
    """A reference to content by URL that the provider fetches itself."""

    uri: str
    media_type: str | None = None
    name: str | None = None
    type: Literal["uri"] = field(default="uri", init=False)


@dataclass
class FunctionCallContent:
    """A tool call. `arguments` is the parsed object; `raw_arguments` keeps the text when it did not parse.

    In streaming updates a call arrives in fragments: `raw_arguments` then holds one fragment and
    `index` (or `call_id`) says which call it continues.
    """

    call_id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    index: int | None = None
    type: Literal["function_call"] = field(default="function_call", init=False)

    @classmethod
    def from_raw(
        cls, call_id: str, name: str, raw_arguments: str, index: int | None = None
    ) -> FunctionCallContent:
        """Parse the provider's argument text; keep the text itself when it is not a JSON object."""
        parsed = parse_arguments(raw_arguments)
        if parsed is None:
            return cls(call_id, name, None, raw_arguments, index)
        return cls(call_id, name, parsed, raw_arguments, index)

    @property
    def parse_error(self) -> str | None:
        if self.arguments is not None or not self.raw_arguments:
            return None
        return arguments_error(self.raw_arguments)

    def arguments_json(self) -> str:
        if self.arguments is not None:
            return json.dumps(self.arguments, ensure_ascii=False)
        return self.raw_arguments or "{}"


def parse_arguments(raw: str | None) -> dict[str, Any] | None:
    """Tool-call argument text as a dict; empty text is `{}`; anything but an object is None.

    The text is model output: it is parsed under chainform's depth and size limits.
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = load_json(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def arguments_error(raw: str) -> str | None:
    """Why argument text is not a JSON object (what the model is told), or None when it is one."""
    try:
        value = load_json(raw) if raw.strip() else {}
    except ValueError as exc:
        return f"arguments are not a JSON object ({exc}): {raw[:200]!r}"
    if isinstance(value, dict):
        return None
    return f"arguments are not a JSON object: {raw[:200]!r}"


@dataclass
class FunctionResultContent:
    """What a tool returned (or the error it raised) for the call with the same `call_id`."""

    call_id: str
    result: Any = None
    error: str | None = None
    name: str | None = None
    type: Literal["function_result"] = field(default="function_result", init=False)

    def result_text(self) -> str:
        """The result as the text a provider receives."""
        if self.error is not None:
            return f"Error: {self.error}"
        if isinstance(self.result, str):
            return self.result
        try:
            return json.dumps(self.result, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(self.result)


@dataclass
class ErrorContent:
    """An error reported inside a response (e.g. a stream that broke mid-way)."""

    message: str
    error_code: str | None = None
    type: Literal["error"] = field(default="error", init=False)


@dataclass
class UsageContent:
    """Usage reported inside a stream; joined responses sum these into `usage_details`."""

    details: UsageDetails
    type: Literal["usage"] = field(default="usage", init=False)


@dataclass
class ServerToolContent:
    """Tool use the provider runs itself (web search or fetch, code execution, an MCP connector)
    or its result, as the provider's own block (`block`, JSON). Kept in the conversation and the
    log, never a call for chainform to run; `kind` is the block's type, e.g. "server_tool_use"."""

    kind: str
    block: dict[str, Any]
    type: Literal["server_tool"] = field(default="server_tool", init=False)


Content = Union[
    TextContent,
    TextReasoningContent,
    DataContent,
    UriContent,
    FunctionCallContent,
    FunctionResultContent,
    ErrorContent,
    UsageContent,
    ServerToolContent,
]
