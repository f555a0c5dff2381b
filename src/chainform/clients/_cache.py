"""Prompt caching: which requests carry a cache hint, and each wire format's marker.

`ChatOptions.cache` True marks the stable prefix, False sends no hint, None is the default:
- OpenAI caches on its own and charges nothing for writes: `prompt_cache_key` (the conversation
  id, or a map run's id) is sent unless caching is off, so requests sharing a prefix meet.
- Anthropic and Bedrock charge more for a cache write than for plain input: breakpoints are sent
  when asked (`cache=True`; a map asks for them, its rows repeat the prefix) or when the request
  offers tools (a tool chain sends its prefix again on every turn).
- Gemini caches implicitly; nothing is sent.
"""

from __future__ import annotations

from typing import Any

from chainform.types import ChatOptions, ModelProfile

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
