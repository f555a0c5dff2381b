"""Tool names on the wire: each provider gets names it accepts, and replies are mapped back.

Tools may be named `math.factorial` or `time.get_current_time` (MCP prefixes), but OpenAI,
Anthropic and Bedrock accept only ``[A-Za-z0-9_-]{1,64}``. The profile says what a provider
accepts (`ModelProfile.tool_name_pattern`); a name that does not fit is rewritten (disallowed
characters become ``_``, a short hash keeps rewritten names distinct) for the request only, and
the model's calls are renamed back before anything else sees them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable

from chainform.types import (
    ChatOptions,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    FunctionSpec,
    Message,
)

_BAD = re.compile(r"[^A-Za-z0-9_-]")


def _digest(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:6]


class WireNames:
    """A two-way map between tool names and the names one provider accepts."""

    def __init__(self, pattern: str, names: Iterable[str]) -> None:
        self._fits = re.compile(pattern)
        self.to_wire: dict[str, str] = {}
        self.from_wire: dict[str, str] = {}
        ordered = list(dict.fromkeys(names))
        kept = {n for n in ordered if self._fits.fullmatch(n)}
        for name in ordered:
            wire = name if name in kept else self._rewrite(name, kept)
            self.to_wire[name] = wire
            self.from_wire[wire] = name

    def _rewrite(self, name: str, taken: set[str]) -> str:
        base = _BAD.sub("_", name)
        if not base[:1].isalpha() and not base.startswith("_"):
            base = "t_" + base
        wire = base[:64]
        if wire in taken or wire in self.from_wire or not self._fits.fullmatch(wire):
            wire = f"{base[:57]}_{_digest(name)}"
        return wire

    @property
    def identity(self) -> bool:
        return all(k == v for k, v in self.to_wire.items())

    def wire(self, name: str) -> str:
        return self.to_wire.get(name, name)

    def back(self, name: str) -> str:
        return self.from_wire.get(name, name)


def _names_in(messages: list[Message], options: ChatOptions) -> list[str]:
    names = [t.name for t in options.tools or ()]
    for message in messages:
        for c in message.contents:
            if isinstance(c, (FunctionCallContent, FunctionResultContent)) and c.name:
                names.append(c.name)
    return names


def _rename_contents(message: Message, rename: dict[str, str]) -> Message:
    return message.with_contents(
        [
            dataclasses.replace(c, name=rename.get(c.name, c.name))
            if isinstance(c, (FunctionCallContent, FunctionResultContent)) and c.name
            else c
            for c in message.contents
        ]
    )


def to_wire(
    messages: list[Message], options: ChatOptions, pattern: str
) -> tuple[list[Message], ChatOptions, WireNames | None]:
    """The request with every tool name in a form the provider accepts (None: nothing to rename)."""
    names = WireNames(pattern, _names_in(messages, options))
    if names.identity:
        return messages, options, None
    changed = {k: v for k, v in names.to_wire.items() if k != v}
    messages = [_rename_contents(m, changed) for m in messages]
    tools = [FunctionSpec(names.wire(t.name), t.description, dict(t.parameters)) for t in options.tools or ()]
    mode = options.tool_mode
    if mode is not None and mode.function_name:
        mode = dataclasses.replace(mode, function_name=names.wire(mode.function_name))
    return messages, options.replace(tools=tools or options.tools, tool_mode=mode), names


def from_wire(contents: Iterable[Content], names: WireNames) -> None:
    """Give the model's tool calls their original names again (in place: the adapter's fresh objects)."""
    for c in contents:
        if isinstance(c, FunctionCallContent) and c.name:
            c.name = names.back(c.name)
