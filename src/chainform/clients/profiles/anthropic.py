"""Anthropic Claude models on the Messages API (`anthropic/<model>`), by model family."""

from __future__ import annotations

from chainform.clients.profiles import PDF, TOOLS_ONLY, named
from chainform.types import MediaSupport, ModelProfile
from chainform.types._options import IMAGE_TYPES

PROVIDER = "anthropic"
UNSUPPORTED = frozenset({"seed", "frequency_penalty", "presence_penalty"})
SAMPLING = ("temperature", "top_p", "top_k")

_BASE = TOOLS_ONLY.replace(
    provider=PROVIDER,
    supports_seed=False,
    # image and document blocks, base64 or URL (fetched by Anthropic); images 5 MB each, 100 a
    # request; a request is at most 32 MB, base64 included: about 24 MB of file
    media=MediaSupport(
        types=IMAGE_TYPES | {PDF, "text/plain"},
        max_bytes=24_000_000,
        max_count=100,
        url_types=IMAGE_TYPES | {PDF},
        type_limits=tuple((t, 5_000_000) for t in sorted(IMAGE_TYPES)),
    ),
    schema_dialect="anthropic",
    context_window=200_000,
    unsupported_options=UNSUPPORTED,
    # web_search, code_execution and web_fetch (URL context), beside function tools and a schema
    hosted_tools=frozenset({"web_search", "code_execution", "url_context"}),
    hosted_with_functions=True,
    hosted_with_schema=True,
)
_THINKING = _BASE.replace(max_output_tokens=64_000, supports_reasoning=True)
# Structured outputs (output_config.format, strict tools) exist from Opus 4.1 / the 4.5 generation on.
_NATIVE = _THINKING.replace(
    supports_json_schema=True, supports_tools_with_schema=True, supports_strict_schema=True
)

KNOWN_MODELS: dict[str, ModelProfile] = {
    **named(_BASE.replace(max_output_tokens=8192), "claude-3-5-haiku-latest", "claude-3-5-sonnet-latest"),
    **named(_THINKING, "claude-3-7-sonnet-latest", "claude-sonnet-4-0"),
    **named(_THINKING.replace(max_output_tokens=32_000), "claude-opus-4-0"),
    **named(_NATIVE.replace(max_output_tokens=32_000), "claude-opus-4-1"),
    **named(
        _NATIVE,
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-5",
        "claude-sonnet-4-6",
        "claude-opus-4-6",
    ),
}
# A Claude name we do not know yet is most likely newer than our table: models after Opus 4.6
# reject the sampling parameters.
UNKNOWN = _NATIVE.replace(unsupported_options=UNSUPPORTED | set(SAMPLING))
