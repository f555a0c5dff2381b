"""Classifying provider failures into `ProviderError.kind`, shared by every adapter.

The wording checks live here, next to the adapters that see the errors, so that the engine can
react to a failure's meaning (`kind`) and never parses a provider's message itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from chainform.errors import ProviderErrorKind, kind_from_status

_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "response schema",
    "structured output",
    "response_mime_type",
    "output_format",
)
_TOOL_WORDS = ("tool", "function")


def rejects_tools_with_schema(status: int | None, message: str) -> bool:
    """A provider's 400-type refusal of tools together with a response schema."""
    if status not in (400, 422):
        return False
    text = message.lower()
    return any(w in text for w in _FORMAT_WORDS) and any(w in text for w in _TOOL_WORDS)


def classify(status: int | None, message: str) -> ProviderErrorKind:
    """The kind of an HTTP failure from its status and the provider's own message."""
    if rejects_tools_with_schema(status, message):
        return "tools_with_schema_rejected"
    return kind_from_status(status)


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
