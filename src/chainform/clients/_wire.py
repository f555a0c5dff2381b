"""What adapters share to write their wire mapping: the SDK import, the per-call translation state
(`StreamState`), turns for two-speaker APIs, reasoning replay, usage counts and stop reasons.

The skeleton that calls a mapping is `_adapter.py`; this module holds no control flow of its own.

Prompt caching, which requests carry a cache hint and each wire format's marker (`openai_key`,
`anthropic_breakpoints`, `bedrock_points`). `ChatOptions.cache` True marks the stable prefix, False
sends no hint, None is the default:
- OpenAI caches on its own and charges nothing for writes: `prompt_cache_key` (the conversation
  id, or a map run's id) is sent unless caching is off, so requests sharing a prefix meet.
- Anthropic and Bedrock charge more for a cache write than for plain input: breakpoints are sent
  when asked (`cache=True`; a map asks for them, its rows repeat the prefix) or when the request
  offers tools (a tool chain sends its prefix again on every turn).
- Gemini caches implicitly; nothing is sent.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chainform.clients._errors import StreamGuard
from chainform.keys import require_key
from chainform.types import (
    ChatOptions,
    ChatResponseUpdate,
    Content,
    ErrorContent,
    FinishReason,
    FunctionCallContent,
    Message,
    ModelProfile,
    Role,
    TextReasoningContent,
    ToolMode,
    UsageDetails,
)


def import_sdk(module: str, extra: str) -> Any:
    """Import a provider SDK on first use (then from sys.modules), naming the extra when it is missing."""
    try:
        return sys.modules.get(module) or importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this adapter needs {module}: pip install 'chainform[{extra}]'") from exc


def resolve_key(provider: str, key: str | None, env_var: str) -> str:
    """An explicit key wins, then the environment, then the user's keys file."""
    return require_key(provider, explicit=key, env_var=env_var)


def tool_mode(options: ChatOptions) -> ToolMode | None:
    """The effective tool mode: None when no tools are offered (nothing to choose from)."""
    if not options.tools:
        return None
    return options.tool_mode or ToolMode.AUTO


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """System messages joined into one instruction (these APIs take it apart), and the rest in order."""
    system = [m.text for m in messages if m.role == Role.SYSTEM and m.text]
    rest = [m for m in messages if m.role != Role.SYSTEM]
    return ("\n\n".join(system) or None), rest


def call_names(messages: Sequence[Message]) -> dict[str, str]:
    """call_id -> tool name, for providers whose tool results must repeat the name."""
    return {c.call_id: c.name for m in messages for c in m.contents if isinstance(c, FunctionCallContent)}


def merge_turns(
    messages: Sequence[Message],
    encode: Callable[[Message, str], list[dict[str, Any]]],
    *,
    assistant: str = "assistant",
    key: str = "content",
) -> list[dict[str, Any]]:
    """Turns for APIs with two speakers: the assistant's, and the user's (tool results included).

    `encode(message, role)` gives the message's blocks; a message without any is left out, and
    consecutive turns of one speaker are merged (these APIs require alternation).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = assistant if message.role == Role.ASSISTANT else "user"
        blocks = encode(message, role)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1][key].extend(blocks)
        else:
            out.append({"role": role, key: blocks})
    return out


def replay_reasoning(
    content: TextReasoningContent,
    role: str,
    *,
    signed: Callable[[str, str], dict[str, Any]],
    redacted: Callable[[str], dict[str, Any]],
) -> dict[str, Any] | None:
    """A reasoning block sent back: only on assistant turns and with the signature that proves it
    (`signed(text, signature)`); without text it is the provider's redacted form (`redacted(data)`)."""
    if role != "assistant" or not content.protected_data:
        return None
    if not content.text:
        return redacted(content.protected_data)
    return signed(content.text, content.protected_data)


class StreamState:
    """Per-call translation state: the ids every update of one response carries, whether the
    event that closes a stream (`closing_event`, when the API has one) arrived, and the refusal
    text gathered (told at the end as one `ErrorContent`, code "refusal")."""

    closing_event: str | None = None

    def __init__(self, model_id: str | None = None) -> None:
        self.response_id: str | None = None
        self.message_id: str | None = None
        self.model_id = model_id
        self.finished = False
        self.refusal: list[str] = []

    def whole(self, body: Any) -> list[ChatResponseUpdate] | None:
        """A whole answer's JSON `body` (what a non-streamed request gets) as updates; None when the
        body is no answer of this API (the caller raises the typed error of a malformed answer)."""
        return None

    def translate(self, event: Any) -> list[ChatResponseUpdate]:
        """One SDK event as updates (often none); by default `translate_one`'s update, if any."""
        update = self.translate_one(event)
        return [update] if update is not None else []

    def translate_one(self, event: Any) -> ChatResponseUpdate | None:
        raise NotImplementedError

    def end(self, guard: StreamGuard) -> list[ChatResponseUpdate]:
        """Updates due when the stream ends, or `guard.error(...)` raised when it stopped short."""
        if self.closing_event is not None and not self.finished:
            raise guard.error(f"stream ended before {self.closing_event}")
        if not self.refusal:
            return []
        return [ChatResponseUpdate([ErrorContent("".join(self.refusal), error_code="refusal")])]

    def update(self, contents: list[Content], **extra: Any) -> ChatResponseUpdate:
        return ChatResponseUpdate(
            contents,
            role=Role.ASSISTANT,
            response_id=self.response_id,
            message_id=self.message_id,
            model_id=self.model_id,
            **extra,
        )


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


EPHEMERAL = {"type": "ephemeral"}
ANTHROPIC_MAX_BREAKPOINTS = 4
CACHE_POINT = {"cachePoint": {"type": "default"}}


def marks_prefix(options: ChatOptions) -> bool:
    """Whether a provider that charges for cache writes should get breakpoints on this request."""
    return options.cache is True or (options.cache is None and bool(options.tools))


def openai_key(options: ChatOptions, profile: ModelProfile) -> dict[str, Any]:
    """`{"prompt_cache_key": ...}` for a request body, or nothing."""
    if not profile.prompt_cache_key or options.cache is False or not options.cache_key:
        return {}
    return {"prompt_cache_key": options.cache_key[:64]}  # OpenAI caps the key's length


def anthropic_breakpoints(request: dict[str, Any], options: ChatOptions) -> None:
    """Mark, in place, the end of the tool definitions, of the system prompt and (while tools are
    offered, so another turn follows) of the conversation so far: at most four breakpoints."""
    if not marks_prefix(options):
        return
    marked: list[dict[str, Any]] = []
    if request.get("tools"):
        marked.append(request["tools"][-1])
    system = request.get("system")
    if isinstance(system, str):
        request["system"] = [{"type": "text", "text": system}]
        marked.append(request["system"][-1])
    messages = request.get("messages") or []
    if (
        options.tools
        and messages
        and isinstance(messages[-1].get("content"), list)
        and messages[-1]["content"]
    ):
        marked.append(messages[-1]["content"][-1])
    for block in marked[:ANTHROPIC_MAX_BREAKPOINTS]:
        block["cache_control"] = dict(EPHEMERAL)


def bedrock_points(request: dict[str, Any], options: ChatOptions, profile: ModelProfile) -> None:
    """Converse cache points after the system prompt and the tool definitions, where the model
    takes them (`ModelProfile.cache_points`)."""
    if not profile.cache_points or not marks_prefix(options):
        return
    if request.get("system"):
        request["system"].append(dict(CACHE_POINT))
    tools = request.get("toolConfig", {}).get("tools")
    if tools:
        tools.append(dict(CACHE_POINT))
