"""The output strategies: the five ways a turn asks for a value, each a small class of one protocol
(`Strategy`, most of it in the base class `TurnStrategy`); `_context` holds what a formatting call
carries.

A strategy describes its phases as data and the engine (chain/_engine.py) runs them: how a turn
is asked for (`prepare`, `options`), how its reply is read (`check`: the value, `NOT_FINAL`, or a
`StructuredOutputGenerationError`), what the model is told after a failure (`feedback`), and
whether a formatting call follows the tool phase (`formatting`, deferred). The engine never looks
at a strategy's name.

- plain: no schema; the answer is the text of the first turn without tool calls. An empty answer
  (no text, no tool call) to a turn that offered tools is not the answer: the model is asked once
  more with tools off (llama-cpp-python's chatml-function-calling, under "auto", ends every text
  reply before its first token).
- deferred: the tool chain without a schema (plain with `gather=True`: its text is not the chain's
  answer, tools keep being offered up to and on the last allowed turn, and being cut off by
  chain_limit is an outcome, not an error), then the "+1 formatting call" with no tools.
  `formatting` says that a formatting call follows and what it carries (`_context.Formatting`); the
  engine runs it with the strategy the decision table picks for a request without tools
  (`select_strategy(profile, has_tools=False)`), so it falls back like any turn.
- native: the provider's own structured output (json_schema; json_object + schema as a fallback).
  The schema rides on every turn together with the tools; a turn without tool calls is the answer.
- tool: the schema becomes the `final_result` tool; its arguments are the answer. Invalid arguments
  (or several calls in one turn) go back as that call's tool result; a text-only reply is fed back
  and later turns force a tool call when the profile can force one. Where the server refused a
  forced choice at run time (Anthropic with thinking on), the last turn offers the output tool
  alone under tool choice `auto`. Where it cannot force (the server ignores or refuses a forced
  tool choice), a chain that ends without the output tool goes on as deferred (`rescue`): its
  formatting call writes the value.
- prompted: the schema described in the system prompt; the JSON is taken from the reply's text.

Adding a strategy is adding a class here and listing it in `_TYPES`; the engine builds what a
`StrategyChoice` names with `build` and never branches on a strategy's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from chainform.errors import ChainError, StructuredOutputGenerationError
from chainform.output._select import Feature, StrategyChoice, can_force_tools, native_format
from chainform.output._spec import OUTPUT_TOOL_NAME, OutputSpec
from chainform.output.strategies._context import ContextPolicy, Formatting
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelProfile,
    ResponseFormat,
    Role,
    ToolMode,
    ToolSpec,
)

__all__ = [
    "NOT_FINAL",
    "Deferred",
    "Feedback",
    "Native",
    "Outcome",
    "Plain",
    "Prompted",
    "Settings",
    "Strategy",
    "Tool",
    "build",
]

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
    """How a turn loop ended: the answer (`value`), or `cut_off` when chain_limit stopped it first;
    `ended_by` names the tool whose result is the value."""

    value: Any = None
    cut_off: bool = False
    ended_by: str | None = None  # the tool whose result is the value (stop_at_tools, cf.Final)


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


_EMPTY = "Your answer was empty: answer the question in text."


class Plain(TurnStrategy):
    name = "plain"
    validates = False

    def __init__(self, profile: ModelProfile, settings: Settings, *, gather: bool = False) -> None:
        super().__init__(None, profile, settings)
        self.answers = not gather
        self.runs_last_tools = gather
        self.offered = self.tools_off = False

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        self.offered = bool(tools) and not self.tools_off
        last = (last and not self.runs_last_tools) or self.tools_off
        return super().options(base, tools, last=last, force=force)

    def check(self, response: ChatResponse) -> Any:
        if response.function_calls:
            return NOT_FINAL
        if self.answers and self.offered and not response.text.strip():
            self.tools_off = True
            raise StructuredOutputGenerationError(_EMPTY, raw_text="")
        return response.text

    def feedback(self, error: StructuredOutputGenerationError, response: ChatResponse) -> Feedback:
        if str(error) == _EMPTY:
            return Feedback(message=_EMPTY)
        raise ChainError(
            f"the model was still calling tools after chain_limit={self.settings.chain_limit} model calls; "
            "raise chain_limit or simplify the task"
        )


class Deferred(Plain):
    name = "deferred"

    def __init__(self, out: OutputSpec | None, profile: ModelProfile, settings: Settings) -> None:
        super().__init__(profile, settings, gather=True)
        assert out is not None
        self.formatting = Formatting(out.schema, settings.policy, settings.template, settings.chain_limit)


class Native(TurnStrategy):
    name = "native"

    def __init__(self, out: OutputSpec | None, profile: ModelProfile, settings: Settings) -> None:
        super().__init__(out, profile, settings)
        assert out is not None
        fmt = out.response_format()
        if native_format(profile, settings.refusals) == "json_object":
            fmt = ResponseFormat("json_object", fmt.schema, fmt.name, fmt.description, strict=False)
        self.format = fmt
        self.feature: Feature | None = "json_schema" if fmt.kind == "json_schema" else "json_object_schema"

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        return super().options(base, tools, last=last, force=force).replace(response_format=self.format)


class Tool(TurnStrategy):
    name = "tool"

    def __init__(self, out: OutputSpec | None, profile: ModelProfile, settings: Settings) -> None:
        super().__init__(out, profile, settings)
        self.forcible = can_force_tools(profile, settings.refusals)
        self.rescue = None if self.forcible else "deferred"

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        assert self.output is not None
        final = self.output.output_tool()
        forcible = self.forcible
        if last and forcible:
            return base.replace(tools=[final], tool_mode=ToolMode.required(OUTPUT_TOOL_NAME))
        if last and self.settings.refusals.get("tool_choice"):  # forcing was refused (e.g. thinking
            return base.replace(tools=[final], tool_mode=ToolMode.AUTO)  # on): the output tool alone
        mode = None if last else base.tool_mode
        if force and mode is None and forcible:
            mode = ToolMode.REQUIRED_ANY
        return base.replace(tools=[*tools, final], tool_mode=mode)

    def check(self, response: ChatResponse) -> Any:
        """Exactly one `final_result` call is the answer; other tool calls continue the chain."""
        assert self.output is not None
        outs = output_calls(response)
        if len(outs) > 1:
            raise StructuredOutputGenerationError(
                f"{OUTPUT_TOOL_NAME} was called {len(outs)} times in one turn; call it exactly once.",
                raw_text=outs[-1].raw_arguments or outs[-1].arguments_json(),
            )
        if outs:
            raw = outs[0].raw_arguments or outs[0].arguments_json()
            return self.output.check_tool_arguments(outs[0].arguments, raw, dialect=self.dialect)
        if response.function_calls:
            return NOT_FINAL
        raise StructuredOutputGenerationError(
            f"Do not answer in text: call the {OUTPUT_TOOL_NAME} tool, once, with the answer.",
            raw_text=response.text,
        )

    def feedback(self, error: StructuredOutputGenerationError, response: ChatResponse) -> Feedback:
        outs = output_calls(response)
        if not outs:
            return Feedback(message=str(error), force=not response.function_calls)
        message = f"{error}\nFix the problem and call {OUTPUT_TOOL_NAME} again, once."
        results = [FunctionResultContent(c.call_id, error=message, name=OUTPUT_TOOL_NAME) for c in outs]
        return Feedback(run_calls=True, results=results)


class Prompted(TurnStrategy):
    name = "prompted"

    def prepare(self, messages: list[Message]) -> None:
        assert self.output is not None
        add_to_system(messages, self.output.instructions())


_TYPES: dict[str, type[TurnStrategy]] = {cls.name: cls for cls in (Native, Tool, Prompted, Deferred)}


def build(choice: StrategyChoice, out: OutputSpec, profile: ModelProfile, settings: Settings) -> Strategy:
    """The strategy object a choice names."""
    return _TYPES[choice.name](out, profile, settings)
