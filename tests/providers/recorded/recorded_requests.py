"""Recorded requests (what each real API accepted) read back into a conversation chainform can
send, and the shape of a request body in any wire format, so that the request chainform builds
for the same conversation can be held to the recorded one.

`conversation` understands text, tool calls and tool results, the tools offered and the tool
choice; a request holding anything else (images, documents, replayed reasoning, provider-side
tools) says why it is not compared. `shape` reads a body of its wire format, whoever wrote it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chainform.types import (
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    FunctionSpec,
    Message,
    Role,
    TextContent,
    TextReasoningContent,
    ToolMode,
)


class Untranslated(Exception):
    """The request holds something the comparison does not translate (the message says what)."""


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    options: ChatOptions = field(default_factory=ChatOptions)


def _text(content: Any, key: str = "text", kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or ():
        kind = part.get("type", "text")
        if kind not in kinds or key not in part:
            raise Untranslated(f"a {kind!r} content part")
        parts.append(part[key])
    return "".join(parts)


def _arguments(raw: Any) -> dict[str, Any]:
    value = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    return value if isinstance(value, dict) else {}


def _mode(choice: Any) -> ToolMode | None:
    """A recorded tool choice in chainform's terms (the spellings of every wire format)."""
    if choice is None:
        return None
    if isinstance(choice, str):
        return {
            "auto": ToolMode.AUTO,
            "none": ToolMode.NONE,
            "required": ToolMode.REQUIRED_ANY,
            "any": ToolMode.REQUIRED_ANY,
        }.get(choice) or _unknown(choice)
    kind = choice.get("type")
    if kind in ("auto", "none"):
        return _mode(kind)
    if kind == "any":
        return ToolMode.REQUIRED_ANY
    name = choice.get("name") or (choice.get("function") or {}).get("name")
    if kind in ("tool", "function") and name:
        return ToolMode.required(name)
    return _unknown(choice)


def _unknown(choice: Any) -> ToolMode:
    raise Untranslated(f"tool choice {json.dumps(choice)}")


def _options(tools: list[FunctionSpec], choice: ToolMode | None) -> ChatOptions:
    return ChatOptions(tools=tools or None, tool_mode=choice if tools else None)


# --- readers, one per wire format -------------------------------------------------------------


def _chat(body: dict[str, Any]) -> Conversation:
    out = Conversation()
    for m in body.get("messages") or ():
        role = m.get("role")
        if role in ("system", "developer"):
            out.messages.append(Message.system(_text(m.get("content"))))
        elif role == "user":
            out.messages.append(Message.user(_text(m.get("content"))))
        elif role == "assistant":
            contents: list[Any] = [TextContent(t) for t in [_text(m.get("content"))] if t]
            for call in m.get("tool_calls") or ():
                fn = call["function"]
                contents.append(FunctionCallContent(call["id"], fn["name"], _arguments(fn.get("arguments"))))
            out.messages.append(Message.assistant(contents))
        elif role == "tool":
            result = FunctionResultContent(m["tool_call_id"], _text(m.get("content")))
            out.messages.append(Message(Role.TOOL, [result]))
        else:
            raise Untranslated(f"a {role!r} message")
    tools = []
    for t in body.get("tools") or ():
        if t.get("type") != "function":
            raise Untranslated(f"a {t.get('type')!r} tool")
        fn = t["function"]
        tools.append(FunctionSpec(fn["name"], fn.get("description", ""), fn.get("parameters") or {}))
    out.options = _options(tools, _mode(body.get("tool_choice")))
    return out


def _responses(body: dict[str, Any]) -> Conversation:
    out = Conversation()
    if body.get("instructions"):
        out.messages.append(Message.system(body["instructions"]))
    items = body.get("input")
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or ():
        kind = item.get("type", "message")
        if kind == "message":
            text = _text(item.get("content"), kinds=("input_text", "output_text", "text"))
            role = {"developer": "system"}.get(item["role"], item["role"])
            out.messages.append(Message(Role(role), text))
        elif kind == "function_call":
            call = FunctionCallContent(item["call_id"], item["name"], _arguments(item.get("arguments")))
            out.messages.append(Message.assistant([call]))
        elif kind == "function_call_output":
            out.messages.append(Message(Role.TOOL, [FunctionResultContent(item["call_id"], item["output"])]))
        else:
            raise Untranslated(f"a {kind!r} input item")
    tools = []
    for t in body.get("tools") or ():
        if t.get("type") != "function":
            raise Untranslated(f"a {t.get('type')!r} tool")
        tools.append(FunctionSpec(t["name"], t.get("description") or "", t.get("parameters") or {}))
    out.options = _options(tools, _mode(body.get("tool_choice")))
    return out


def _anthropic(body: dict[str, Any]) -> Conversation:
    out = Conversation()
    if body.get("system"):
        out.messages.append(Message.system(_text(body["system"])))
    for m in body.get("messages") or ():
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        contents: list[Any] = []
        for b in blocks:
            if b["type"] == "text":
                contents.append(TextContent(b["text"]))
            elif b["type"] == "tool_use":
                contents.append(FunctionCallContent(b["id"], b["name"], b.get("input") or {}))
            elif b["type"] == "tool_result":
                contents.append(FunctionResultContent(b["tool_use_id"], _text(b.get("content"))))
            elif b["type"] == "thinking":
                contents.append(TextReasoningContent(b["thinking"], b["signature"]))
            elif b["type"] == "redacted_thinking":
                contents.append(TextReasoningContent("", b["data"]))
            else:
                raise Untranslated(f"a {b['type']!r} block")
        out.messages.append(Message(Role(m["role"]), contents))
    tools = []
    for t in body.get("tools") or ():
        if "input_schema" not in t or set(t) - {"name", "description", "input_schema", "cache_control"}:
            raise Untranslated(f"a {t.get('type')!r} tool with {sorted(t)}")
        tools.append(FunctionSpec(t["name"], t.get("description") or "", t["input_schema"]))
    out.options = _options(tools, _mode(body.get("tool_choice")))
    return out


def _gemini(body: dict[str, Any]) -> Conversation:
    out = Conversation()
    system = body.get("systemInstruction")
    if system:
        out.messages.append(Message.system("".join(p["text"] for p in system["parts"])))
    for c in body.get("contents") or ():
        contents: list[Any] = []
        for p in c.get("parts") or ():
            if "thoughtSignature" in p and not p.get("thought"):  # it belongs to this part
                contents.append(TextReasoningContent("", p["thoughtSignature"]))
            if "text" in p and not p.get("thought"):
                contents.append(TextContent(p["text"]))
            elif "functionCall" in p:
                call = p["functionCall"]
                contents.append(
                    FunctionCallContent(call.get("id") or "gcall_x", call["name"], call.get("args") or {})
                )
            elif "functionResponse" in p:
                r = p["functionResponse"]
                contents.append(
                    FunctionResultContent(r.get("id") or "gcall_x", r.get("response"), name=r["name"])
                )
            else:
                raise Untranslated(f"a part of {sorted(p)}")
        out.messages.append(Message(Role.ASSISTANT if c.get("role") == "model" else Role.USER, contents))
    tools = []
    for group in body.get("tools") or ():
        if set(group) != {"functionDeclarations"}:
            raise Untranslated(f"a {sorted(group)} tool")
        for d in group["functionDeclarations"]:
            schema = d.get("parametersJsonSchema") or d.get("parameters") or {}
            if "parameters" in d and '"type": "OBJECT"' in json.dumps(d["parameters"]):
                raise Untranslated("a tool schema in Gemini's own Schema type (upper-case types)")
            tools.append(FunctionSpec(d["name"], d.get("description") or "", schema))
    calling = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    names = calling.get("allowedFunctionNames") or []
    modes = {"AUTO": ToolMode.AUTO, "NONE": ToolMode.NONE, "ANY": ToolMode.REQUIRED_ANY}
    mode = modes.get(calling.get("mode", "AUTO")) or _unknown(calling)
    if mode is ToolMode.REQUIRED_ANY and len(names) == 1:
        mode = ToolMode.required(names[0])
    elif names:
        raise Untranslated(f"allowed function names {names}")
    out.options = _options(tools, mode)
    return out


def _bedrock(body: dict[str, Any]) -> Conversation:
    out = Conversation()
    if body.get("system"):
        out.messages.append(Message.system("".join(s["text"] for s in body["system"])))
    for m in body.get("messages") or ():
        contents: list[Any] = []
        for b in m["content"]:
            if "text" in b:
                contents.append(TextContent(b["text"]))
            elif "toolUse" in b:
                t = b["toolUse"]
                contents.append(FunctionCallContent(t["toolUseId"], t["name"], t.get("input") or {}))
            elif "reasoningContent" in b:
                thought = b["reasoningContent"]
                signed = thought.get("reasoningText") or {}
                data = thought.get("redactedContent")
                contents.append(TextReasoningContent(signed.get("text", ""), signed.get("signature") or data))
            elif "toolResult" in b:
                r = b["toolResult"]
                contents.append(
                    FunctionResultContent(r["toolUseId"], "".join(c.get("text", "") for c in r["content"]))
                )
            else:
                raise Untranslated(f"a {sorted(b)} block")
        out.messages.append(Message(Role(m["role"]), contents))
    config = body.get("toolConfig") or {}
    tools = []
    for t in config.get("tools") or ():
        if "toolSpec" not in t:
            raise Untranslated(f"a {sorted(t)} tool")
        spec = t["toolSpec"]
        tools.append(FunctionSpec(spec["name"], spec.get("description") or "", spec["inputSchema"]["json"]))
    choice = config.get("toolChoice")
    mode = None
    if choice is not None:
        key = next(iter(choice))
        mode = ToolMode.required(choice["tool"]["name"]) if key == "tool" else _mode(key)
    out.options = _options(tools, mode)
    return out


READERS = {
    "chat": _chat,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
}


def conversation(wire: str, body: Any) -> Conversation:
    """The conversation, tools and tool choice of a recorded request; `Untranslated` otherwise."""
    if not isinstance(body, dict):
        raise Untranslated("no JSON body")
    try:
        return READERS[wire](body)
    except (KeyError, TypeError, ValueError) as exc:
        raise Untranslated(f"an unexpected shape ({type(exc).__name__}: {exc})") from None


# --- the shape of a request body, whoever wrote it ---------------------------------------------


# Fields either side may send or leave out, the API's default then applying: strict mode, prompt
# caching hints, a tool result's success or error flag, a tool's description.
_OPTIONAL = frozenset({"strict", "cache_control", "is_error", "status", "description"})


def _content_form(message: dict[str, Any]) -> str:
    if "content" not in message:
        return "absent"
    content = message["content"]
    return "null" if content is None else f"{type(content).__name__}{'' if content else ' (empty)'}"


def _keys(entry: dict[str, Any]) -> list[str]:
    return sorted(k for k in entry if k not in _OPTIONAL)


def _tool_shape(definition: dict[str, Any], fields: tuple[str, ...]) -> tuple[str, list[str], list[str]]:
    """(name, the definition's keys but strict, the parameters' properties)."""
    inner = definition
    for name in fields[:-1]:
        inner = inner.get(name) or {}
    schema = inner.get(fields[-1]) or {}
    if isinstance(schema, dict) and "json" in schema:
        schema = schema["json"]
    keys = sorted(k for k in inner if k not in _OPTIONAL)
    return str(inner.get("name")), keys, sorted((schema or {}).get("properties") or {})


def shape(wire: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the comparison looks at in a request body of `wire`: roles in order, the content of a
    tool-call turn (chat), the keys of a tool result, the tool choice, each tool's shape."""
    out: dict[str, Any] = {}
    if wire == "chat":
        messages = body.get("messages") or []
        out["roles"] = [m.get("role") for m in messages]
        out["tool_turn_content"] = [_content_form(m) for m in messages if m.get("tool_calls")]
        out["tool_result_keys"] = [_keys(m) for m in messages if m.get("role") == "tool"]
        out["tool_choice"] = body.get("tool_choice")
        out["tools"] = [_tool_shape(t, ("function", "parameters")) for t in body.get("tools") or ()]
    elif wire == "responses":
        items = body.get("input") or []
        items = [{"role": "user"}] if isinstance(items, str) else items
        out["roles"] = [i.get("role") or i.get("type") for i in items]
        out["tool_result_keys"] = [_keys(i) for i in items if i.get("type") == "function_call_output"]
        out["tool_choice"] = body.get("tool_choice")
        out["tools"] = [_tool_shape(t, ("parameters",)) for t in body.get("tools") or ()]
    elif wire == "anthropic":
        messages = body.get("messages") or []
        out["roles"] = ["system"] * bool(body.get("system")) + [m["role"] for m in messages]
        blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
        out["tool_result_keys"] = [_keys(b) for b in blocks if b.get("type") == "tool_result"]
        out["blocks"] = [
            [b["type"] for b in m["content"]] if isinstance(m["content"], list) else ["text"]
            for m in messages
        ]
        out["signatures"] = [b.get("signature") or b.get("data") for b in blocks if "thinking" in b["type"]]
        out["tool_choice"] = body.get("tool_choice")
        out["tools"] = [_tool_shape(t, ("input_schema",)) for t in body.get("tools") or ()]
    elif wire == "gemini":
        contents = [
            c for c in body.get("contents") or () if any(p != {"text": ""} for p in c.get("parts") or ())
        ]
        out["roles"] = ["system"] * bool(body.get("systemInstruction")) + [c.get("role") for c in contents]
        parts = [p for c in contents for p in c.get("parts") or ()]
        out["tool_result_keys"] = [_keys(p["functionResponse"]) for p in parts if "functionResponse" in p]
        out["blocks"] = [[sorted(p) for p in c.get("parts") or ()] for c in contents]
        out["signatures"] = [p["thoughtSignature"] for p in parts if "thoughtSignature" in p]
        out["tool_choice"] = body.get("toolConfig")
        declarations = [d for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()]
        out["tools"] = [
            _tool_shape(d, ("parametersJsonSchema" if "parametersJsonSchema" in d else "parameters",))
            for d in declarations
        ]
    else:
        messages = body.get("messages") or []
        out["roles"] = ["system"] * bool(body.get("system")) + [m["role"] for m in messages]
        blocks = [b for m in messages for b in m["content"]]
        out["tool_result_keys"] = [_keys(b["toolResult"]) for b in blocks if "toolResult" in b]
        out["blocks"] = [[sorted(set(b) - {"cachePoint"}) for b in m["content"]] for m in messages]
        thoughts = [b["reasoningContent"] for b in blocks if "reasoningContent" in b]
        out["signatures"] = [
            (t.get("reasoningText") or {}).get("signature") or t.get("redactedContent") for t in thoughts
        ]
        config = body.get("toolConfig") or {}
        out["tool_choice"] = config.get("toolChoice")
        out["tools"] = [
            _tool_shape(t, ("toolSpec", "inputSchema")) for t in config.get("tools") or () if "toolSpec" in t
        ]
    return out
