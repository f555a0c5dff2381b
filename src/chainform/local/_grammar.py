"""What the local model may write: llguidance grammars for schemas and tool calls, and the prompt that explains them.

Tool calls use the model's own format (`_toolformat`; SmolLM2's, from its fine-tuning data, is
`<tool_call>[{"name": "tool", "arguments": {...}}]</tool_call>`). The grammar makes the argument
object match the tool's JSON schema, so a call the model writes always parses and validates.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from chainform.errors import SchemaError, UnknownToolError
from chainform.local._toolformat import SMOLLM2, ToolFormat
from chainform.types import ChatOptions, FunctionCallContent, ResponseFormat, ToolMode, ToolSpec

DEFAULT_MAX_STRING_LENGTH = 512
"""Cap given to strings whose schema sets no maxLength, so a looping model cannot write forever."""
MAX_PARALLEL_CALLS = 8
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""One fixed JSON layout: flexible whitespace would let an unlucky model emit blanks forever."""

_SUBSCHEMA_MAPS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)
_SUBSCHEMA_ONE = (
    "items",
    "additionalProperties",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")

Mode = Literal["text", "json", "calls", "text_or_calls", "json_or_calls"]


@dataclass
class Plan:
    """How one call is constrained: the grammar (None = free text) and the instructions for the prompt."""

    mode: Mode
    grammar: str | None = None
    instructions: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    format: ToolFormat = SMOLLM2

    @property
    def may_call(self) -> bool:
        return self.mode in ("calls", "text_or_calls", "json_or_calls")


def tighten(schema: Any, cap: int) -> Any:
    """A copy of `schema` that cannot run on forever, yet only ever allows values the original allows.

    Strings without maxLength get `cap` (never below their minLength). Objects that list their
    properties and say nothing about others get `additionalProperties: false` (outside allOf/not/if,
    where a conjunct may add properties), so a model cannot invent keys of any length without end.
    """
    out = copy.deepcopy(schema)
    _tighten(out, cap, closable=True)
    return out


_NO_CLOSE = ("allOf", "not", "if", "then", "else", "dependentSchemas", "dependencies")


def _tighten(node: Any, cap: int, closable: bool) -> None:
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    is_string = kind == "string" or (isinstance(kind, list) and "string" in kind)
    if is_string and "maxLength" not in node and "enum" not in node and "const" not in node:
        minimum = node.get("minLength")
        node["maxLength"] = max(cap, minimum) if isinstance(minimum, int) else cap
    props = node.get("properties")
    open_keys = ("additionalProperties", "patternProperties", "unevaluatedProperties", "$ref", "allOf")
    if closable and isinstance(props, dict) and not any(k in node for k in open_keys):
        required = node.get("required", [])
        if isinstance(required, list) and set(required) <= set(props):
            node["additionalProperties"] = False
    for key, value in node.items():
        inner = closable and key not in _NO_CLOSE
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            for sub in value.values():
                _tighten(sub, cap, inner)
        elif (
            key in _SUBSCHEMA_ONE or (key in _SUBSCHEMA_LISTS and isinstance(value, list)) or key in _NO_CLOSE
        ):
            for sub in value if isinstance(value, list) else [value]:
                _tighten(sub, cap, inner)


def _json_rule(schema: dict[str, Any]) -> str:
    styled = {**schema, "x-guidance": {**_JSON_STYLE, **schema.get("x-guidance", {})}}
    return "%json" + json.dumps(styled, ensure_ascii=False)


def _call_schema(tools: list[ToolSpec], cap: int, multiple: bool, listed: bool) -> dict[str, Any]:
    variants = []
    for tool in tools:
        params = tool.parameters or {"type": "object"}
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": tighten(params, cap)},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    items = variants[0] if len(variants) == 1 else {"anyOf": variants}
    if not listed:
        return items
    return {"type": "array", "items": items, "minItems": 1, "maxItems": MAX_PARALLEL_CALLS if multiple else 1}


def _schema_of(fmt: ResponseFormat | None) -> dict[str, Any] | None:
    if fmt is None or fmt.kind == "text":
        return None
    if fmt.kind == "json_object":
        return {"type": "object"}
    if not isinstance(fmt.schema, dict):
        raise SchemaError("response_format json_schema needs a schema object")
    return fmt.schema


def plan(
    options: ChatOptions, max_string_length: int = DEFAULT_MAX_STRING_LENGTH, fmt: ToolFormat = SMOLLM2
) -> Plan:
    """Decide the grammar and the prompt instructions for these options (tools, tool mode, response
    format), tool calls written in the model's format `fmt`."""
    schema = _schema_of(options.response_format)
    mode = options.tool_mode or ToolMode.AUTO
    tools = list(options.tools or []) if mode.mode != "none" else []
    if mode.mode == "required" and mode.function_name is not None:
        tools = [t for t in tools if t.name == mode.function_name]
        if not tools:
            raise UnknownToolError(f"tool_mode requires {mode.function_name!r}, which is not an offered tool")
    answer = _json_rule(tighten(schema, max_string_length)) if schema is not None else None
    if not tools:
        if answer is None:
            return Plan("text")
        return Plan("json", f"start: {answer}\n", _schema_instructions(schema))
    multiple = bool(options.allow_multiple_tool_calls)
    calls = fmt.grammar(_json_rule(_call_schema(tools, max_string_length, multiple, fmt.listed)), multiple)
    instructions = _tool_instructions(tools, fmt, required=mode.mode == "required")
    if mode.mode == "required":
        return Plan("calls", "start: calls\n" + calls, instructions, tools, fmt)
    if answer is None:
        grammar = f"start: calls | text\ntext: {fmt.text_rule()}\n" + calls
        return Plan("text_or_calls", grammar, instructions, tools, fmt)
    grammar = f"start: calls | answer\nanswer: {answer}\n" + calls
    instructions += "\n\n" + _schema_instructions(schema)
    return Plan("json_or_calls", grammar, instructions, tools, fmt)


def _schema_instructions(schema: dict[str, Any] | None) -> str:
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return f"Reply with only a JSON value that matches this JSON schema:\n{text}"


def _tool_instructions(tools: list[ToolSpec], fmt: ToolFormat, *, required: bool) -> str:
    listed = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    call = fmt.render([{"name": "tool_name", "arguments": {"arg": "value"}}])
    lines = [
        "You are a function-calling assistant. You can call these tools:",
        f"<tools>{json.dumps(listed, ensure_ascii=False)}</tools>",
        "When a tool can provide the information the user asks for, do not answer from memory: "
        "reply only with a tool call in this format:",
        call,
        "You must call a tool now."
        if required
        else "After you receive the tool's result in <tool_response> tags, answer the user.",
    ]
    return "\n".join(lines)


def example_turns(json_answer: bool, fmt: ToolFormat = SMOLLM2) -> list[tuple[str, str]]:
    """One worked exchange shown before the conversation when tools are offered.

    A 135M model copies a demonstrated format far more reliably than it follows a described one
    (measured: the chance of opening a call on a weather question rose from under 1% to about 30%,
    while small talk stayed under 1%). When the answer must be JSON, the example answers in JSON too,
    which is what makes the model answer after a tool result instead of calling again. The tool in
    it is fictitious and never offered, so the grammar keeps the model from calling it.
    """
    answer = '{"city": "Tokyo", "time": "14:05"}' if json_answer else "It is 14:05 in Tokyo."
    return [
        ("user", "What time is it in Tokyo?"),
        ("assistant", fmt.render([{"name": "get_time", "arguments": {"city": "Tokyo"}}])),
        ("user", '<tool_response>\nget_time: "14:05"\n</tool_response>'),
        ("assistant", answer),
    ]


def render_calls(calls: list[FunctionCallContent], fmt: ToolFormat = SMOLLM2) -> str:
    """Tool calls as the text the model would have written (for assistant turns in the history)."""
    return fmt.render([{"name": c.name, "arguments": c.arguments or {}} for c in calls])
