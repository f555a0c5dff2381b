"""The chain engine: the tool loop, the output strategies, retries, the +1 formatting call, logging.

Everything is async; the sync API runs this on a background loop. Every model call is logged
(when logging is on) before the chain returns or raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chainform.chain._context import (
    FORMAT_SYSTEM,
    ContextPolicy,
    build_context,
    final_answer,
    render_format_prompt,
)
from chainform.chain._events import ChainEvent, EventLog
from chainform.chain._records import ChainResult, ModelCall
from chainform.chain._tap import CallTap
from chainform.chain._tools import AfterCall, BeforeCall, run_calls
from chainform.clients.base import BaseChatClient, CallContext, ChatClient
from chainform.errors import (
    Attempt,
    ChainError,
    ChainformError,
    FormattingError,
    ProviderError,
    StructuredOutputError,
    StructuredOutputGenerationError,
)
from chainform.output import OUTPUT_TOOL_NAME, OutputSpec, StrategyChoice, select_strategy
from chainform.output._select import remember_fallback
from chainform.output._validators import NOT_FINAL, Validator, output_tool_validator, text_validator
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelProfile,
    Role,
    ToolMode,
)


@dataclass
class ChainRequest:
    """A chain's inputs, already normalised by the Model layer."""

    prompt: Message | None
    system: str | None = None
    tools: list[Any] = field(default_factory=list)
    output: OutputSpec | None = None
    strategy: str = "auto"
    chain_limit: int = 5
    retries: int = 2
    before_call: BeforeCall | None = None
    after_call: AfterCall | None = None
    format_prompt: str | None = None
    format_context: ContextPolicy = field(default_factory=ContextPolicy)
    options: ChatOptions = field(default_factory=ChatOptions)
    stream: bool = True
    history: list[Message] = field(default_factory=list)


CallLogger = Callable[[ModelCall, "ChainRun"], None]


class ChainRun:
    """One execution of a ChainRequest against a client."""

    def __init__(
        self,
        client: ChatClient,
        request: ChainRequest,
        *,
        profile: ModelProfile,
        model_name: str,
        conversation_id: str,
        chain_id: str,
        events: EventLog,
        logger: CallLogger | None = None,
    ) -> None:
        if request.chain_limit < 1:
            raise ValueError("chain_limit must be at least 1")
        if request.retries < 0:
            raise ValueError("retries cannot be negative")
        self.client = client
        self.req = request
        self.profile = profile
        self.model_name = model_name
        self.conversation_id = conversation_id
        self.chain_id = chain_id
        self.events = events
        self.logger = logger
        self.calls: list[ModelCall] = []
        self.tools = {t.name: t for t in request.tools}
        self.choice: StrategyChoice | None = None
        self.format_context: str | None = None
        self.attempts: list[Attempt] = []
        self._purpose = "chain"
        self._pending: list[ModelCall] = []

    # -- public -------------------------------------------------------------------------------

    async def run(self) -> ChainResult:
        out = self.req.output
        if out is not None:
            self.choice = select_strategy(
                self.profile,
                has_tools=bool(self.tools),
                requested=self.req.strategy,
                model_key=self.model_name,
            )
        transcript = self._initial_messages()
        try:
            if out is None:
                return await self._plain(transcript)
            return await self._structured(transcript, out)
        except ChainformError as exc:
            if not exc.responses:
                exc.responses = list(self.calls)
            raise
        finally:
            self.flush_log()
            self.events.close()

    # -- message set-up -----------------------------------------------------------------------

    def _initial_messages(self) -> list[Message]:
        messages: list[Message] = []
        system = self.req.system
        if self.choice is not None and self.choice.name == "prompted" and self.req.output is not None:
            system = (
                f"{system}\n\n{self.req.output.instructions()}" if system else self.req.output.instructions()
            )
        if system:
            messages.append(Message.system(system))
        messages.extend(self.req.history)
        if self.req.prompt is not None:
            messages.append(self.req.prompt)
        return messages

    # -- the model call -------------------------------------------------------------------------

    async def _call(
        self, messages: list[Message], options: ChatOptions, validator: Validator | None
    ) -> tuple[ChatResponse, Any, StructuredOutputGenerationError | None]:
        """One model call (streamed into the event log); returns (response, value, validation error)."""
        failure: list[StructuredOutputGenerationError] = []

        def checked(response: ChatResponse) -> Any:
            assert validator is not None
            try:
                return validator(response)
            except StructuredOutputGenerationError as exc:
                failure.append(exc)
                raise

        deferred_phase = (
            self.choice is not None and self.choice.name == "deferred" and self._purpose == "chain"
        )
        tap = CallTap(self.events, self._purpose, self.req.output, partials=not deferred_phase)
        ctx = CallContext(
            list(messages),
            options,
            stream=self.req.stream,
            validator=checked if validator else None,
            value=NOT_FINAL,
            on_update=tap.on_update if self.req.stream else None,
        )
        started = time.perf_counter()
        error: StructuredOutputGenerationError | None = None
        try:
            if isinstance(self.client, BaseChatClient):
                response = await self.client.call(ctx)
            else:
                response = await self.client.get_response(ctx.messages, options)
                ctx.response = response
                if ctx.validator is not None:
                    ctx.value = ctx.validator(response)
            value = ctx.value
            if failure and value is NOT_FINAL:  # a middleware accepted an output that failed validation
                value = failure[-1].value
        except StructuredOutputGenerationError as exc:
            error, value = exc, NOT_FINAL
            response = ctx.response or ChatResponse([Message.assistant(exc.raw_text)])
        except Exception as exc:
            self._record(ctx.messages, options, None, started, error=f"{type(exc).__name__}: {exc}")
            raise
        if not self.req.stream:
            tap.whole(response)
        self._record(
            ctx.messages, options, response, started, error=str(error) if error else None, value=value
        )
        final = (
            value is not NOT_FINAL if validator else not response.function_calls and self.req.output is None
        )
        self.events.append(ChainEvent("call_end", value=final, purpose=self._purpose))
        return response, value, error

    def _record(
        self,
        messages: list[Message],
        options: ChatOptions,
        response: ChatResponse | None,
        started: float,
        *,
        error: str | None,
        value: Any = NOT_FINAL,
    ) -> None:
        call = ModelCall(
            self._purpose,
            messages,
            options,
            response,
            (time.perf_counter() - started) * 1000,
            error,
            self.choice.name if self.choice else None,
            parsed=None if value is NOT_FINAL else _plain_data(value),
            format_context=self.format_context if self._purpose in ("format", "retry") else None,
        )
        self.flush_log()
        self.calls.append(call)
        self._pending.append(call)

    def flush_log(self) -> None:
        """Log calls whose tool results are known; the engine calls it at every step and at the end."""
        pending, self._pending = self._pending, []
        if self.logger is not None:
            for call in pending:
                self.logger(call, self)

    # -- tools ----------------------------------------------------------------------------------

    def _restore_tool_arguments(self, tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        from chainform.schema.dialects import restore

        restored = restore(arguments, tool.parameters, self.profile.schema_dialect)
        return restored if isinstance(restored, dict) else arguments

    async def _run_tools(self, calls: list[FunctionCallContent], transcript: list[Message]) -> None:
        for call in calls:
            self.events.append(ChainEvent("tool_call", value=call, purpose=self._purpose))
        results = await run_calls(
            calls,
            self.tools,
            before_call=self.req.before_call,
            after_call=self.req.after_call,
            restore_arguments=self._restore_tool_arguments,
        )
        for result in results:
            self.events.append(ChainEvent("tool_result", value=result, purpose=self._purpose))
        if self.calls:
            self.calls[-1].tool_results.extend(results)
        transcript.append(Message(Role.TOOL, list(results)))

    def _tool_options(self, *, last: bool, extra: list[Any] | None = None) -> ChatOptions:
        offered = list(self.tools.values()) + list(extra or [])
        if not offered:
            return self.req.options.replace(tools=None, tool_mode=None)
        return self.req.options.replace(
            tools=offered, tool_mode=ToolMode.NONE if last else self.req.options.tool_mode
        )

    # -- no schema ------------------------------------------------------------------------------

    async def _plain(self, transcript: list[Message]) -> ChainResult:
        for turn in range(self.req.chain_limit):
            last = turn == self.req.chain_limit - 1
            response, _, _ = await self._call(transcript, self._tool_options(last=last), None)
            transcript.extend(response.messages)
            calls = response.function_calls
            if not calls:
                return self._result(transcript, response.text)
            if last:
                break
            await self._run_tools(calls, transcript)
        raise ChainError(
            f"the model was still calling tools after chain_limit={self.req.chain_limit} model calls; "
            "raise chain_limit or simplify the task",
            responses=self.calls,
        )

    # -- with a schema --------------------------------------------------------------------------

    async def _structured(self, transcript: list[Message], out: OutputSpec) -> ChainResult:
        assert self.choice is not None
        if self.choice.name == "deferred":
            return await self._deferred(transcript, out)
        try:
            return await self._answering_loop(transcript, out)
        except ProviderError as exc:
            if not self._may_fall_back(exc):
                raise
            reason = (
                f"provider rejected tools with a schema (HTTP {exc.status}): {exc.provider_message[:160]}"
            )
            remember_fallback(self.model_name, reason)
            self.choice = StrategyChoice(
                "deferred", f"fell back at run time: {reason}", self.choice.requested
            )
            return await self._deferred(transcript, out)

    def _may_fall_back(self, exc: ProviderError) -> bool:
        assert self.choice is not None
        return (
            self.choice.requested == "auto"
            and bool(self.tools)
            and self.choice.name in ("native", "tool")
            and exc.kind == "tools_with_schema_rejected"
        )

    async def _answering_loop(self, transcript: list[Message], out: OutputSpec) -> ChainResult:
        """native / tool / prompted: the answer comes from the chain's own turns."""
        assert self.choice is not None
        strategy = self.choice.name
        dialect = self.profile.schema_dialect
        turns = 0
        retries_left = self.req.retries
        self._purpose = "chain"
        must_call = False  # the tool strategy after a text-only reply: the retry forces a tool call
        while True:
            last = turns >= self.req.chain_limit - 1
            options, validator = self._turn_setup(strategy, out, last=last)
            if must_call and options.tool_mode is None and self.profile.supports_tool_choice_required:
                options = options.replace(tool_mode=ToolMode.REQUIRED_ANY)
            response, value, error = await self._call(transcript, options, validator)
            if self._purpose == "chain":
                turns += 1
            transcript.extend(response.messages)
            calls = [c for c in response.function_calls if c.name != OUTPUT_TOOL_NAME]
            if error is None and value is not NOT_FINAL:
                return self._result(transcript, None, value=value, out=out, dialect=dialect)
            if error is None and calls and not last:
                await self._run_tools(calls, transcript)
                self._purpose = "chain"
                continue
            if error is None:
                error = StructuredOutputGenerationError(
                    "Tool calls are no longer allowed: give the final answer now.", raw_text=response.text
                )
            self.attempts.append(Attempt(error.raw_text, str(error), self._purpose))
            if retries_left == 0:
                raise StructuredOutputError(
                    f"structured output failed after {len(self.attempts)} attempt(s): {error}",
                    attempts=self.attempts,
                    responses=self.calls,
                )
            retries_left -= 1
            must_call = strategy == "tool" and not response.function_calls
            await self._feed_back(error, response, calls, transcript, strategy)
            self._purpose = "retry"

    def _turn_setup(self, strategy: str, out: OutputSpec, *, last: bool) -> tuple[ChatOptions, Validator]:
        dialect = self.profile.schema_dialect
        if strategy == "tool":
            extra = [out.output_tool()]
            options = self._tool_options(last=False, extra=extra)
            if last and (forced := self._forced_output_tool()):
                options = options.replace(tools=extra, tool_mode=forced)
            elif last:
                options = options.replace(tool_mode=None)
            return options, output_tool_validator(out, dialect, tools_may_continue=True)
        options = self._tool_options(last=last)
        if strategy == "native":
            options = options.replace(response_format=out.response_format())
        return options, text_validator(out, dialect)

    def _forced_output_tool(self) -> ToolMode | None:
        """tool_mode that forces `final_result`, when the model can be forced at all."""
        return ToolMode.required(OUTPUT_TOOL_NAME) if self.profile.supports_tool_choice_required else None

    async def _feed_back(
        self,
        error: StructuredOutputGenerationError,
        response: ChatResponse,
        calls: list[FunctionCallContent],
        transcript: list[Message],
        strategy: str,
    ) -> None:
        outs = [c for c in response.function_calls if c.name == OUTPUT_TOOL_NAME]
        if strategy == "tool" and outs:
            message = f"{error}\nFix the problem and call {OUTPUT_TOOL_NAME} again, once."
            results = [FunctionResultContent(c.call_id, error=message, name=OUTPUT_TOOL_NAME) for c in outs]
            if calls:
                await self._run_tools(calls, transcript)
                transcript[-1].contents.extend(results)
            else:
                transcript.append(Message(Role.TOOL, list(results)))
            return
        if calls:  # tool calls past the limit: answer them with a refusal so the transcript stays valid
            refusals = [
                FunctionResultContent(
                    c.call_id, error="Not run: the tool-call limit was reached.", name=c.name
                )
                for c in calls
            ]
            transcript.append(Message(Role.TOOL, list(refusals)))
        hint = "Reply again with only the corrected JSON." if strategy != "tool" else ""
        transcript.append(Message.user(f"{error}\n{hint}".strip()))

    # -- deferred: tool phase, then the +1 formatting call ----------------------------------------

    async def _deferred(self, transcript: list[Message], out: OutputSpec) -> ChainResult:
        self._purpose = "chain"
        last = transcript[-1] if transcript else None
        answered = last is not None and last.role == Role.ASSISTANT and not last.function_calls
        turns = sum(1 for c in self.calls if c.purpose == "chain")
        while not answered and turns < self.req.chain_limit:
            response, _, _ = await self._call(transcript, self._tool_options(last=False), None)
            turns += 1
            transcript.extend(response.messages)
            calls = response.function_calls
            if not calls:
                answered = True
                break
            await self._run_tools(calls, transcript)
        cut_off = not answered
        context = build_context(
            transcript, self.req.format_context, cut_off=cut_off, chain_limit=self.req.chain_limit
        )
        self.format_context = context
        value = await self._format(context, out)
        result = self._result(transcript, None, value=value, out=out, dialect=self.profile.schema_dialect)
        result.cut_off = cut_off
        return result

    async def _format(self, context: str, out: OutputSpec) -> Any:
        prompt = render_format_prompt(self.req.format_prompt, context=context, schema=out.schema)
        messages = [Message.system(FORMAT_SYSTEM), Message.user(prompt)]
        if self.profile.supports_json_schema:
            mode = "native"
        elif self.profile.supports_tools:
            mode = "tool"
        else:
            mode = "prompted"
            messages[0] = Message.system(FORMAT_SYSTEM + "\n\n" + out.instructions())
        self._purpose = "format"
        attempts: list[Attempt] = []
        retries_left = self.req.retries
        options, validator = self._format_setup(mode, out)
        while True:
            try:
                response, value, error = await self._call(messages, options, validator)
            except ProviderError as exc:
                raise FormattingError(
                    f"the formatting call failed: {exc}",
                    context=context,
                    attempts=attempts,
                    responses=self.calls,
                ) from exc
            if error is None and value is not NOT_FINAL:
                return value
            if error is None:
                error = StructuredOutputGenerationError(
                    f"Call {OUTPUT_TOOL_NAME} with the answer.", raw_text=response.text
                )
            attempts.append(Attempt(error.raw_text, str(error), self._purpose))
            self.attempts.append(attempts[-1])
            if retries_left == 0:
                raise FormattingError(
                    f"the formatting call produced no valid output after {len(attempts)} attempt(s): {error}",
                    context=context,
                    attempts=attempts,
                    responses=self.calls,
                )
            retries_left -= 1
            messages = messages + list(response.messages)
            outs = response.function_calls
            if outs:
                messages.append(
                    Message(
                        Role.TOOL,
                        [
                            FunctionResultContent(
                                c.call_id, error=f"{error}\nCall {OUTPUT_TOOL_NAME} again.", name=c.name
                            )
                            for c in outs
                        ],
                    )
                )
            else:
                messages.append(Message.user(f"{error}\nReply again with only the corrected JSON."))
            self._purpose = "retry"

    def _format_setup(self, mode: str, out: OutputSpec) -> tuple[ChatOptions, Validator]:
        base = self.req.options.replace(tools=None, tool_mode=None)
        dialect = self.profile.schema_dialect
        if mode == "tool":
            options = base.replace(tools=[out.output_tool()], tool_mode=self._forced_output_tool())
            return options, output_tool_validator(out, dialect, tools_may_continue=False)
        options = base.replace(response_format=out.response_format()) if mode == "native" else base
        return options, text_validator(out, dialect)

    # -- result ---------------------------------------------------------------------------------

    def _result(
        self,
        transcript: list[Message],
        text: str | None,
        *,
        value: Any = None,
        out: OutputSpec | None = None,
        dialect: str = "jsonschema",
    ) -> ChainResult:
        result = ChainResult(
            text=text if text is not None else "",
            calls=self.calls,
            strategy=self.choice,
            format_context=self.format_context,
            transcript=transcript,
            conversation_id=self.conversation_id,
            chain_id=self.chain_id,
        )
        if out is not None:
            result.has_value = True
            result.value = value
            result.data = _plain_data(value)
            result.text = result.json_text()
        elif text is None:
            result.text = final_answer(transcript) or ""
        return result


def _plain_data(value: Any) -> Any:
    """JSON-able form of a validated value (pydantic instances dumped in JSON mode)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        from pydantic import TypeAdapter

        return TypeAdapter(type(value)).dump_python(value, mode="json")
    except Exception:  # plain JSON values need no conversion
        return value
