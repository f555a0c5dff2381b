"""tool: the schema becomes the `final_result` tool; its arguments are the answer.

Invalid arguments (or several calls in one turn) go back as that call's tool result; a text-only
reply is fed back and later turns force a tool call when the profile can force one. Where it
cannot (the server ignores or refuses a forced tool choice), a chain that ends without the output
tool goes on as deferred (`rescue`): its formatting call writes the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainform.errors import StructuredOutputGenerationError
from chainform.output._select import can_force_tools
from chainform.output._spec import OUTPUT_TOOL_NAME, OutputSpec
from chainform.output.strategies._base import NOT_FINAL, Feedback, Settings, TurnStrategy, output_calls
from chainform.types import ChatOptions, ChatResponse, FunctionResultContent, ModelProfile, ToolMode, ToolSpec


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
