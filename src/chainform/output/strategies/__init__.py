"""The output strategies: the five ways a turn asks for a value, each a small class of one protocol
(`_base.TurnStrategy`); `_context` holds what a formatting call carries.

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
  and later turns force a tool call when the profile can force one. Where it cannot (the server
  ignores or refuses a forced tool choice), a chain that ends without the output tool goes on as
  deferred (`rescue`): its formatting call writes the value.
- prompted: the schema described in the system prompt; the JSON is taken from the reply's text.

Adding a strategy is adding a class here and listing it in `_TYPES`; the engine builds what a
`StrategyChoice` names with `build` and never branches on a strategy's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainform.errors import ChainError, StructuredOutputGenerationError
from chainform.output._select import Feature, StrategyChoice, can_force_tools, native_format
from chainform.output._spec import OUTPUT_TOOL_NAME, OutputSpec
from chainform.output.strategies._base import (
    NOT_FINAL,
    Feedback,
    Outcome,
    Settings,
    Strategy,
    TurnStrategy,
    add_to_system,
    output_calls,
)
from chainform.output.strategies._context import Formatting
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FunctionResultContent,
    Message,
    ModelProfile,
    ResponseFormat,
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
