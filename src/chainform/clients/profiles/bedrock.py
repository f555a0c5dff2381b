"""Models on AWS Bedrock's Converse API (`bedrock/<model id>`), by model family."""

from __future__ import annotations

from chainform.clients.profiles import PDF, TOOLS_ONLY, named
from chainform.types import MediaSupport, ModelProfile
from chainform.types._options import IMAGE_TYPES

# Converse image and document blocks: images 3.75 MB and 20 a request, documents 4.5 MB and 5 a
# request; no URLs (S3 only), so chainform downloads them and sends bytes.
_DOCUMENTS = frozenset(
    {
        PDF,
        "text/plain",
        "text/csv",
        "text/markdown",
        "text/html",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    }
)
_VISION = MediaSupport(
    types=IMAGE_TYPES | _DOCUMENTS,
    max_bytes=4_500_000,
    max_count=25,
    type_limits=tuple((t, 3_750_000) for t in sorted(IMAGE_TYPES)),
    count_limits=((IMAGE_TYPES, 20), (_DOCUMENTS, 5)),
)

PROVIDER = "bedrock"
_NO_SAMPLING = frozenset({"seed", "frequency_penalty", "presence_penalty"})

# What no Bedrock family offers through Converse: strict tools, seeds, tools beside a schema.
_CONVERSE = TOOLS_ONLY.replace(
    provider=PROVIDER,
    supports_seed=False,
    schema_dialect="bedrock",
    unsupported_options=_NO_SAMPLING,
)
_CLAUDE = _CONVERSE.replace(media=_VISION, context_window=200_000, max_output_tokens=8192)
_CLAUDE_THINKING = _CLAUDE.replace(supports_reasoning=True, max_output_tokens=64_000, cache_points=True)
# Converse's outputConfig.textFormat (native JSON schema) is offered for the Claude 4.5 generation on.
_CLAUDE_NATIVE = _CLAUDE_THINKING.replace(
    supports_json_schema=True, supports_tools_with_schema=True, supports_strict_schema=True
)
_NOVA = _CONVERSE.replace(
    supports_parallel_tool_calls=False,
    media=_VISION,
    context_window=300_000,
    max_output_tokens=10_000,
    cache_points=True,
)
UNKNOWN = _CONVERSE.replace(
    supports_parallel_tool_calls=False,
    supports_tool_choice_required=False,
    unsupported_options=_NO_SAMPLING | {"top_k"},
)
_OPEN_WEIGHTS = UNKNOWN.replace(context_window=128_000, max_output_tokens=8192)
_MISTRAL = _OPEN_WEIGHTS.replace(unsupported_options=_NO_SAMPLING)
_NOVA_MICRO = "amazon.nova-micro-v1:0"

KNOWN_MODELS: dict[str, ModelProfile] = {
    **named(_CLAUDE, "anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-sonnet-20241022-v2:0"),
    **named(
        _CLAUDE_THINKING,
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "anthropic.claude-sonnet-4-20250514-v1:0",
        "anthropic.claude-opus-4-1-20250805-v1:0",
    ),
    **named(
        _CLAUDE_NATIVE,
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "anthropic.claude-opus-4-5-20251101-v1:0",
    ),
    **named(_NOVA, "amazon.nova-pro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-premier-v1:0"),
    _NOVA_MICRO: _NOVA.replace(name=_NOVA_MICRO, media=MediaSupport(), context_window=128_000),
    **named(
        _OPEN_WEIGHTS,
        "meta.llama3-1-70b-instruct-v1:0",
        "meta.llama3-3-70b-instruct-v1:0",
        "meta.llama4-maverick-17b-instruct-v1:0",
    ),
    **named(_MISTRAL, "mistral.mistral-large-2407-v1:0", "mistral.mistral-small-2402-v1:0"),
}
