"""Google Gemini models (`gemini/<model>`), by model family."""

from __future__ import annotations

import dataclasses

from chainform.clients.profiles import CAPABLE, PDF, named
from chainform.types import MediaSupport, ModelProfile

PROVIDER = "gemini"

_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
_MEDIA = MediaSupport(
    types=_IMAGES | {PDF, "text/plain"},
    max_bytes=70_000_000,
    max_count=3000,
    type_limits=((PDF, 50_000_000),),
)
# From Gemini 2.5 on, file_data takes public http(s) URLs, which Gemini fetches itself.
_FETCHING = dataclasses.replace(_MEDIA, url_types=_IMAGES | {PDF})

_BASE = CAPABLE.replace(
    provider=PROVIDER,
    supports_tools_with_schema=False,
    supports_strict_schema=False,
    # inline_data: 100 MB a request after base64 (about 70 MB of file), PDFs 50 MB; the Files API
    # is not used. Gemini 2.0 takes no external URLs (file_data): chainform downloads them.
    media=_MEDIA,
    schema_dialect="gemini",
    tool_name_pattern=r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}",  # Gemini takes dots and colons
    context_window=1_048_576,
    # google_search, code_execution, url_context and file_search; before Gemini 3 none of them
    # goes in one request with function declarations or a response schema
    hosted_tools=frozenset({"web_search", "code_execution", "url_context", "file_search"}),
)
_THINKING = _BASE.replace(supports_reasoning=True, max_output_tokens=65_536, media=_FETCHING)
# Gemini 3 accepts a response schema together with function declarations in one request.
_GEMINI_3 = _THINKING.replace(
    supports_tools_with_schema=True, hosted_with_functions=True, hosted_with_schema=True
)

KNOWN_MODELS: dict[str, ModelProfile] = {
    **named(_BASE.replace(max_output_tokens=8192), "gemini-2.0-flash", "gemini-2.0-flash-lite"),
    **named(_THINKING, "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.5-pro"),
    **named(_GEMINI_3, "gemini-3-flash-preview", "gemini-3-pro-preview"),
}
UNKNOWN = _GEMINI_3
# Before 2.5, schemas go in the OpenAPI-subset fields rather than the JSON Schema ones.
LEGACY_SCHEMA_FAMILIES = ("gemini-1.", "gemini-2.0")
