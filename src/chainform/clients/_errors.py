"""Provider failures, shared by every adapter: the one retry/status policy, `ProviderError.kind`.

The wording checks live here, next to the adapters that see the errors, so that the engine can
react to a failure's meaning (`kind`) and never parses a provider's message itself. `StreamGuard`
is the one place an adapter's failure becomes a `ProviderError`: the message redacted, `retryable`
from `is_retryable`, `kind` from `classify`, and the updates already streamed kept as a partial
response.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping

from chainform.errors import ProviderError, ProviderErrorKind, StreamInterruptedError, kind_from_status
from chainform.types import ChatResponse, ChatResponseUpdate

_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "response schema",
    "structured output",
    "response_mime_type",
    "output_format",
)
_TOOL_WORDS = ("tool", "function")


# The one retry policy of every adapter (docs/providers.md): timeouts, conflicts, rate limits and
# server errors are retried; 501 (not implemented) and 505 (HTTP version) never get better.
_NEVER_RETRIED_5XX = frozenset({501, 505})


def is_retryable(status: int | None) -> bool:
    """Whether a failure with this HTTP status may succeed when sent again (None: no response)."""
    if status is None:
        return True
    return status in (408, 409, 429) or (status >= 500 and status not in _NEVER_RETRIED_5XX)


def rejects_tools_with_schema(status: int | None, message: str) -> bool:
    """A provider's 400-type refusal of tools together with a response schema."""
    if status not in (400, 422):
        return False
    text = message.lower()
    return any(w in text for w in _FORMAT_WORDS) and any(w in text for w in _TOOL_WORDS)


# A refusal that lists the response formats it accepts ('text', 'json_object'), json_schema not
# among them (llama-cpp-python's HTTP 500 "Input should be 'text' or 'json_object'"), or one naming
# json_schema as unsupported: the same meaning whatever the status.
_ALLOWED = re.compile(r"(?:should|must) be (?:one of )?([^.;\"\]]*)")
_FORMAT_UNSUPPORTED = re.compile(r"\bjson_schema\b[^.;]*\b(?:not |un)supported")
_STREAM_REFUSAL = re.compile(
    r"\bstream\w*\b[^.;]*\b(?:not supported|unsupported|not implemented)"
    r"|\b(?:not supported|unsupported|not implemented)\b[^.;]*\bstream"
)


# A request validator's complaint about a field of the body (pydantic's "'loc': ('body', ...)", as
# FastAPI-based servers such as llama-cpp-python send it, some with HTTP 500): the request was
# refused as sent, and sending it again gets the same answer.
_FIELD_REJECTED = re.compile(r"""['"]loc['"]\s*:\s*[(\[]\s*['"]body['"]""")
_REJECTIONS = frozenset(
    {
        "bad_request",
        "tools_with_schema_rejected",
        "response_format_rejected",
        "streaming_rejected",
        "tool_choice_rejected",
    }
)
# A refused forced tool choice in each server's own words (tests/core/data/forced_choice_refusals.json
# keeps the real ones): "tool_choice ... not supported" and the like, Anthropic's and Bedrock's
# "Thinking may not be enabled when tool_choice forces tool use.", OpenAI's "Tool choices other than
# 'auto' are not supported with model ...", DeepSeek's "Thinking mode does not support this
# tool_choice", Qwen's "The tool_choice parameter does not support being set to required ...".
_CHOICE_REFUSAL = re.compile(
    r"\btool[_ ]choices?\b[^.;]*\b(?:not supported|unsupported|not implemented|invalid|should be"
    r"|must be|does not support|forces tool use)"
    r"|\b(?:does not support|not supported|may not be enabled)\b[^.;]*\btool[_ ]choice"
)


def refuses_forced_choice(status: int | None, message: str, forced: bool) -> bool:
    """Whether a failure of a request that forced a tool choice ("required" or a named function)
    refuses that choice: its wording says so, or, as llama-cpp-python's chatml-function-calling
    does (it asserts the choice is "auto"), a server error with no message at all."""
    if not forced or status is None or status < 400:
        return False
    return bool(_CHOICE_REFUSAL.search(message.lower())) or (status >= 500 and not message.strip())


def _rejects_format(text: str) -> bool:
    allowed = [m.group(1) for m in _ALLOWED.finditer(text)]
    listed = any(("json_object" in a or "'text'" in a) and "json_schema" not in a for a in allowed)
    return listed or (bool(_FORMAT_UNSUPPORTED.search(text)) and not any(w in text for w in _TOOL_WORDS))


def classify(status: int | None, message: str) -> ProviderErrorKind:
    """The kind of an HTTP failure from its status and the provider's own message."""
    if rejects_tools_with_schema(status, message):
        return "tools_with_schema_rejected"
    if status is not None and status >= 400:
        text = message.lower()
        if _rejects_format(text):
            return "response_format_rejected"
        if _STREAM_REFUSAL.search(text):
            return "streaming_rejected"
        if _CHOICE_REFUSAL.search(text):
            return "tool_choice_rejected"
        if _FIELD_REJECTED.search(text):
            return "bad_request"
    return kind_from_status(status)


def is_rejection(status: int | None, message: str) -> bool:
    """Whether a failure is the server refusing the request as sent (whatever its status: some
    servers answer a field they reject with 500), so that no retry can help."""
    return status is not None and status >= 400 and classify(status, message) in _REJECTIONS


def timed_out(exc: BaseException | None) -> bool:
    """Whether a failure without a response was a timeout (the SDK's, its HTTP library's or the OS's),
    looking through the exceptions it was raised from."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a response's `retry-after-ms` or `retry-after` (seconds; an HTTP date is ignored)."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) / scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None


class StreamGuard:
    """One call's failure reporting: remembers the updates yielded so far, so that a failure after
    data arrived carries them as a partial response (`StreamInterruptedError`)."""

    def __init__(self, provider: str, secret: str | None = None) -> None:
        self.provider = provider
        self.secret = secret  # only to scrub it from messages: a provider may echo the key back
        self.request_id: str | None = None  # set once known; errors without their own id use it
        self.updates: list[ChatResponseUpdate] = []

    def seen(self, update: ChatResponseUpdate) -> ChatResponseUpdate:
        self.updates.append(update)
        return update

    def error(
        self,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        kind: ProviderErrorKind | None = None,
        interrupted: bool | None = None,
    ) -> ProviderError:
        """The typed error: `interrupted` (default: once updates arrived) makes it a
        StreamInterruptedError holding what arrived."""
        from chainform.keys import redact

        message = redact(message, self.secret)
        if kind is None and status is None and timed_out(sys.exc_info()[1]):
            kind = "timeout"  # called from the adapter's except block: the SDK's timeout, not a drop
        kind = kind or classify(status, message)
        broken = interrupted if interrupted is not None else bool(self.updates)
        error_type = StreamInterruptedError if broken else ProviderError
        error = error_type(
            message,
            status=status,
            provider=self.provider,
            request_id=request_id or self.request_id,
            retryable=is_retryable(status) and kind not in _REJECTIONS,  # a refusal gets the same again
            kind=kind,
        )
        if isinstance(error, StreamInterruptedError):
            error.partial_response = ChatResponse.from_updates(self.updates)
        else:
            error.retry_after = retry_after
        return error
