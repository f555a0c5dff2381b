"""The one protocol every output strategy implements, and what the turn loop gives and gets.

A strategy describes its phases as data and the engine (chain/_engine.py) runs them: how a turn
is asked for (`prepare`, `options`), how its reply is read (`check`: the value, `NOT_FINAL`, or a
`StructuredOutputGenerationError`), what the model is told after a failure (`feedback`), and
whether a formatting call follows the tool phase (`formatting`, deferred). The engine never looks
at a strategy's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from chainform.errors import StructuredOutputGenerationError
from chainform.output._select import Feature
from chainform.output._spec import OUTPUT_TOOL_NAME, OutputSpec
from chainform.output.strategies._context import ContextPolicy, Formatting
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelProfile,
    Role,
    ToolMode,
    ToolSpec,
)

__all__ = ["NOT_FINAL", "Feedback", "Outcome", "Settings", "Strategy", "TurnStrategy"]

NOT_FINAL: Any = object()
"""`check` returns this when a turn legitimately continues the chain (it only called tools)."""


@dataclass(frozen=True)
class Settings:
    """What a chain tells its strategies beyond the schema and the profile."""

    refusals: Mapping[str, str] = field(default_factory=dict)
    chain_limit: int = 5
    policy: ContextPolicy = field(default_factory=ContextPolicy)
    template: str | None = None


@dataclass
class Outcome:
    """How a turn loop ended: the answer (`value`), or `cut_off` when chain_limit stopped it first."""

    value: Any = None
    cut_off: bool = False


@dataclass
class Feedback:
    """What the model is told after a failed turn.

    `run_calls`: run the turn's other tool calls (else they are refused, so the transcript stays
    valid); `results`: extra tool results (the output tool's error); `message`: a user message;
    `force`: from now on, force a tool call when the profile allows it.
    """

    run_calls: bool = False
    results: list[FunctionResultContent] = field(default_factory=list)
    message: str | None = None
    force: bool = False


class Strategy(Protocol):
    """One output strategy; see the module docstring."""

    name: ClassVar[str]
    output: OutputSpec | None  # what partial objects are parsed against while a turn streams
    answers: bool  # a final turn is the chain's answer (False: deferred's tool phase)
    validates: bool  # `check` runs inside the client's middleware chain (a validator)
    runs_last_tools: bool  # tools called on the last allowed turn still run (then the loop is cut off)
    feature: Feature | None  # what a provider's refusal of this strategy's requests rejects
    formatting: Formatting | None  # a formatting call follows this tool phase (deferred)
    rescue: str | None  # the strategy a chain goes on with when this one ends without a value

    def prepare(self, messages: list[Message]) -> None: ...

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions: ...

    def check(self, response: ChatResponse) -> Any: ...

    def feedback(self, error: StructuredOutputGenerationError, response: ChatResponse) -> Feedback: ...


class TurnStrategy:
    """Shared defaults: one turn loop whose final turn is the answer, fed back as a user message."""

    name: ClassVar[str] = "plain"
    answers = True
    validates = True
    runs_last_tools = False
    feature: Feature | None = None
    formatting: Formatting | None = None
    rescue: str | None = None

    def __init__(self, out: OutputSpec | None, profile: ModelProfile, settings: Settings) -> None:
        self.output = out
        self.profile = profile
        self.settings = settings
        self.dialect = profile.dialect

    def prepare(self, messages: list[Message]) -> None:
        """Change the loop's first messages (e.g. describe the schema in the system prompt)."""

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        if not tools:
            return base.replace(tools=None, tool_mode=None)
        return base.replace(tools=list(tools), tool_mode=ToolMode.NONE if last else base.tool_mode)

    def check(self, response: ChatResponse) -> Any:
        """The answer as JSON text; a turn with tool calls continues the chain."""
        if response.function_calls:
            return NOT_FINAL
        assert self.output is not None
        return self.output.check_text(response.text, dialect=self.dialect)

    def feedback(self, error: StructuredOutputGenerationError, response: ChatResponse) -> Feedback:
        return Feedback(message=f"{error}\nReply again with only the corrected JSON.")


def add_to_system(messages: list[Message], text: str) -> None:
    """Append `text` to the system prompt (creating one), in place."""
    if messages and messages[0].role == Role.SYSTEM:
        messages[0] = Message.system(f"{messages[0].text}\n\n{text}")
    else:
        messages.insert(0, Message.system(text))


def output_calls(response: ChatResponse) -> list[FunctionCallContent]:
    return [c for c in response.function_calls if c.name == OUTPUT_TOOL_NAME]
