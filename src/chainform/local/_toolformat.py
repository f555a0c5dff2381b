"""How a model family writes tool calls: the markers around the JSON, one array or one block per call.

A small model calls tools reliably only in the format it was fine-tuned on, so the grammar, the
prompt's instructions and example, and the history all use the model's own format, recognised from
its chat template. SmolLM2's (from its fine-tuning data, smoltalk) is the default: its template
says nothing about tools.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from chainform.types import FunctionCallContent

_REGEX_SPECIAL = set("\\.+*?()|[]{}^$#&-~/")


@dataclass(frozen=True)
class ToolFormat:
    """`open` + JSON + `close`: one JSON array of calls (`listed`), or one call object per block,
    blocks separated by a newline. `marker` in a chat template identifies the family."""

    name: str
    open: str
    close: str
    listed: bool
    marker: str | None = None

    def render(self, calls: list[dict[str, Any]]) -> str:
        """Calls ({"name", "arguments"}) as the text the model writes."""
        if self.listed:
            return self.open + json.dumps(calls, ensure_ascii=False) + self.close
        return "\n".join(self.open + json.dumps(c, ensure_ascii=False) + self.close for c in calls)

    def grammar(self, json_rule: str, multiple: bool) -> str:
        """Lark rules `calls` (and `call`): `json_rule` is the %json rule of the array (listed) or of
        one call object."""
        quoted = [json.dumps(part) for part in (self.open, self.close) if part]
        if self.listed:
            return f"calls: {' '.join([quoted[0], json_rule, *quoted[1:]])}\n"
        block = " ".join([quoted[0], "call", *quoted[1:]])
        repeat = f' ("\\n" {block})*' if multiple else ""
        return f"calls: {block}{repeat}\ncall: {json_rule}\n"

    def text_rule(self) -> str:
        """A regex for a free-text answer: not empty, not starting with whitespace, `<` or `open`.

        `<` stays out even where the call marker starts otherwise: given the choice, SmolLM2 answered
        a weather question with a made-up `<tool_response>` instead of calling the tool.
        """
        first = "" if self.open[0] == "<" else self.open[0]
        alternatives = [f"[^\\s<{_escape(first)}][\\s\\S]*"]
        for i in range(1, len(self.open) if first else 0):
            head = _escape(self.open[:i])
            alternatives += [f"{head}[^{_escape(self.open[i])}][\\s\\S]*", head]
        return "/" + "|".join(alternatives) + "/"

    def parse(self, text: str) -> list[FunctionCallContent] | None:
        """The calls in the model's output, or None when it is not a (complete) call."""
        body = text.strip()
        opening = self.open.strip()
        if self.listed:
            if not (body.startswith(opening) and body.endswith(self.close)):
                return None
            found = _loads(body[len(opening) : len(body) - len(self.close)])
            items = found if isinstance(found, list) else None
        else:
            pattern = re.escape(opening) + r"(.*?)" + re.escape(self.close.strip())
            blocks = re.findall(pattern, body, flags=re.DOTALL)
            rest = re.sub(pattern, "", body, flags=re.DOTALL).strip()
            items = None if rest or not blocks else [_loads(b) for b in blocks]
        if not items:
            return None
        calls = []
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                return None
            arguments = item.get("arguments")
            args = arguments if isinstance(arguments, dict) else {}
            call_id = f"call_{uuid.uuid4().hex[:16]}"
            calls.append(
                FunctionCallContent(call_id, item["name"], args, json.dumps(args, ensure_ascii=False), index)
            )
        return calls


SMOLLM2 = ToolFormat("smollm2", "<tool_call>", "</tool_call>", listed=True)
HERMES = ToolFormat("hermes", "<tool_call>\n", "\n</tool_call>", listed=False, marker="<tool_call>")
"""Qwen2.5 / Qwen3, Hermes 2 Pro and others that follow it: one object per block."""
PHI4_MINI = ToolFormat("phi4-mini", "functools", "", listed=True, marker="<|tool|>")
"""Phi-4-mini: `functools[{"name": ..., "arguments": {...}}, ...]`, no closing marker."""
MISTRAL = ToolFormat("mistral", "[TOOL_CALLS]", "", listed=True, marker="[TOOL_CALLS]")
FORMATS = (HERMES, PHI4_MINI, MISTRAL)


def detect(chat_template: str | None) -> ToolFormat:
    """The tool-call format a chat template uses, SmolLM2's when it names none."""
    for fmt in FORMATS:
        if fmt.marker and chat_template and fmt.marker in chat_template:
            return fmt
    return SMOLLM2


def _escape(text: str) -> str:
    """`text` as literal regex (llguidance's Rust syntax, inside a lark /.../): only what is special
    there is escaped (Rust's regex reads some escaped letters-like characters, e.g. `\\<`, as assertions)."""
    return "".join("\\n" if c == "\n" else ("\\" + c if c in _REGEX_SPECIAL else c) for c in text)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
