"""What adapters read alike from a provider's answer: usage counts and stop reasons (moved out of
`_common.py`, which re-exports them, to keep the skeleton's module short)."""

from __future__ import annotations

from collections.abc import Mapping

from chainform.types import FinishReason, UsageDetails


def usage_details(
    input_tokens: int | None,
    output_tokens: int | None,
    total_tokens: int | None = None,
    *,
    cache_read: int | None = None,
    cache_written: int | None = None,
    reasoning: int | None = None,
) -> UsageDetails:
    """Usage with the additional counts every adapter names alike (each only when non-zero)."""
    counts = {
        name: int(value)
        for name, value in (
            ("cache_read_input_tokens", cache_read),
            ("cache_creation_input_tokens", cache_written),
            ("reasoning_tokens", reasoning),
        )
        if value
    }
    return UsageDetails(input_tokens, output_tokens, total_tokens, counts)


# Claude's stop reasons, which Bedrock's Converse API uses for every model family too.
CLAUDE_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
}


def finish_reason(reason: str | None, table: Mapping[str, FinishReason]) -> FinishReason | None:
    """A provider's stop reason in chainform's words; an unknown one is kept verbatim (lower case)."""
    if not reason:
        return None
    return table.get(reason) or FinishReason(reason.lower())


__all__ = ["CLAUDE_FINISH", "finish_reason", "usage_details"]
