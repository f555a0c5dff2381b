"""The chain engine: it runs every phase of a chain, whatever the strategy.

    answer():  choice = select_strategy(profile, refusals) ──► strategy = build(choice)
                  │  tool phase: loop(strategy)
                  │  strategy.formatting (deferred): answer(its messages, has_tools=False)
                  ▲  a refusal (ProviderError.kind) is remembered in model.refusals; choose again
    loop():    call ──► run tools ──► extract ──► validate ──► feed back ──► call …

Strategies (output/strategies/) describe their phases as data (what a call carries, how its reply
is checked, what the model is told after a failure, whether a formatting call follows); this module
runs them and never looks at their names. Every model call is logged (when logging is on) before
the chain returns or raises.

A run is a few steps over (spec, state): the ChainSpec is what was asked and never changes; the
RunState (chain/_state.py) holds every fact of the run, passed explicitly: the transcript, the
calls, the strategy chosen, the model answering now among the fallbacks, the money spent, the
lineage that links subagents to it (given to the tools that ask for it as a RunContext), the
pending tool calls. `ChainRun.run` is the chain's whole life (and, with chainform.instrument, its
span).
"""

from __future__ import annotations

import asyncio
import json
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from chainform import _trace
from chainform.chain._approval import ChainWaiting, Denied, PendingCall
from chainform.chain._attachments import for_profile, tool_files
from chainform.chain._calls import Caller, ChainLogger, plain_data
from chainform.chain._events import ChainEvent, EventLog, FellBack
from chainform.chain._fallback import Candidate
from chainform.chain._journal import Journal
from chainform.chain._records import ChainResult
from chainform.chain._spec import ChainSpec
from chainform.chain._state import ModelCall, RunState
from chainform.chain._tools import AfterCall, BeforeCall, Final, run_calls
from chainform.errors import (
    Attempt,
    ChainformError,
    ChainInterruptedError,
    FormattingError,
    ProviderError,
    StructuredOutputError,
    StructuredOutputGenerationError,
    TruncatedOutputError,
    UnknownToolError,
)
from chainform.output import OUTPUT_TOOL_NAME, StrategyChoice, select_strategy
from chainform.output.strategies import NOT_FINAL, Outcome, Plain, Settings, Strategy, build
from chainform.output.strategies._context import Formatting, answered, final_answer
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Role,
)

# What a provider's refusal rejects: the engine reads ProviderError.kind, never its wording.
_REFUSALS = ("tools_with_schema_rejected", "response_format_rejected")


@dataclass(frozen=True)
class Bound:
    """What a run binds beside its spec, because it is code, not data: the tools' Python objects,
    the before/after hooks, and tool sources (MCP servers) whose sessions stay open for the chain."""

    tools: list[Any] = field(default_factory=list)
    before_call: BeforeCall | None = None
    after_call: AfterCall | None = None
    sources: list[Any] = field(default_factory=list)


class ChainRun:
    """One execution of a ChainSpec: the spec (what is asked, never changed), the RunState (every
    fact of the run so far), what is bound beside them (the tools' code, the hooks), and the
    collaborators doing the work: the caller (model calls, each logged as it returns), the
    chain's logger and its event log."""

    def __init__(
        self,
        spec: ChainSpec,
        state: RunState,
        *,
        bound: Bound,
        events: EventLog,
        logger: ChainLogger | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.spec = spec
        self.state = state
        self.bound = bound
        self.tools = {t.name: t for t in bound.tools}
        self.events = events
        self.logger = logger
        self.journal = journal  # a resumed chain's log: its calls and tool results are not redone
        self.caller = Caller(events, stream=spec.stream, logger=logger, journal=journal)

    @property
    def settings(self) -> Settings:
        """What the strategies are told beyond the schema: the answering model's refusals too."""
        formatting = self.spec.formatting
        limit = self.spec.limits.chain_limit
        return Settings(self.state.refusals, limit, formatting.policy, formatting.prompt)

    async def run(self) -> ChainResult:
        """The chain's whole life, as its span when tracing is on: every subagent run it made is
        on its result (or its error)."""
        lineage = self.state.lineage
        hooks = _trace.hooks
        try:
            with nullcontext() if hooks is None else hooks.chain(self.state, lineage.agent):
                result = await self._life()
        except ChainformError as exc:
            exc.agent_runs = lineage.children
            raise
        result.agent_runs = lineage.children
        return result

    async def _life(self) -> ChainResult:
        """Recorded as running; answered (plain text, or by the strategy the table picks); ended as
        done, waiting, interrupted or failed, every call in the log before it returns or raises."""
        spec, state = self.spec, self.state
        transcript = state.transcript
        try:
            unknown_stop_tools(frozenset(spec.stop_at_tools), self.tools)  # MCP tools are known only now
            if self.logger is not None:
                await self.logger.begin(spec, state.conversation_name)
            try:
                if spec.output is None:
                    outcome = await self._plain(transcript)
                else:
                    has_tools = bool(self.tools or state.options.hosted_tools)
                    outcome = await self.answer(transcript, has_tools=has_tools, requested=spec.strategy)
            except ChainWaiting as waiting:
                state.status, state.pending = "waiting", waiting.pending
                return self._result(Outcome())
            state.status = "done"
            return self._result(outcome)
        except ChainformError as exc:
            if not exc.responses:
                exc.responses = list(state.calls)
            state.status = "interrupted" if isinstance(exc, ChainInterruptedError) else "failed"
            state.error = f"{type(exc).__name__}: {exc}"
            raise
        except (asyncio.CancelledError, KeyboardInterrupt):
            state.status = "interrupted"
            raise
        except Exception as exc:
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if state.status == "running":  # anything else that ended it
                state.status = "failed"
            await self.caller.log_finished(state)  # the last call, if it was not logged yet
            if self.logger is not None:
                pending = [p.to_dict() for p in state.pending]
                await self.logger.end(state.status, error=state.error, pending=pending)
            self.events.close()

    # -- choosing a strategy, and falling back when the provider refuses it ---------------------

    async def answer(
        self, transcript: list[Message], *, has_tools: bool, requested: str, purpose: str = "chain"
    ) -> Outcome:
        """Run the strategy the decision table picks; on a refusal, remember it and pick again."""
        assert self.spec.output is not None
        choice = select_strategy(
            self.state.profile, has_tools=has_tools, requested=requested, refusals=self.state.refusals
        )
        while True:
            strategy = build(choice, self.spec.output, self.state.profile, self.settings)
            if purpose == "chain":
                self.state.choice = choice
            strategy.prepare(transcript)
            try:
                if strategy.formatting is not None:
                    return await self.formatted(transcript, strategy, strategy.formatting)
                return await self.loop(transcript, strategy, tools=has_tools, purpose=purpose)
            except (StructuredOutputError, FormattingError) as exc:
                if purpose != "chain":
                    raise
                rescue = isinstance(exc, StructuredOutputError) and not isinstance(exc, TruncatedOutputError)
                if strategy.rescue is None or not rescue:  # no value from this model: maybe the next
                    if not await self._fall_over_output(exc, transcript):
                        raise
                    choice = select_strategy(
                        self.state.profile,
                        has_tools=has_tools,
                        requested=requested,
                        refusals=self.state.refusals,
                    )
                    continue
                reason = f"{OUTPUT_TOOL_NAME} was not called and cannot be forced here: {exc}"[:240]
                _close_calls(transcript)
                choice = StrategyChoice(
                    strategy.rescue,  # type: ignore[arg-type]
                    f"fell back at run time: {reason}",
                    choice.requested,
                    fallback=reason,
                )
            except ProviderError as exc:
                if await self._fall_over(exc, transcript):  # on the next model, chosen for its own profile
                    choice = select_strategy(
                        self.state.profile,
                        has_tools=has_tools,
                        requested=requested,
                        refusals=self.state.refusals,
                    )
                    continue
                if exc.kind == "tool_choice_rejected" and "tool_choice" not in self.state.refusals:
                    choice = self._unforced(exc, choice, has_tools, requested)
                    continue
                if requested != "auto" or exc.kind not in _REFUSALS:
                    raise
                reason = f"provider rejected {_what(exc)} (HTTP {exc.status}): {exc.provider_message[:160]}"
                if exc.kind == "tools_with_schema_rejected" or has_tools:
                    self.state.refusals.remember("tools_with_schema", reason)
                if exc.kind == "response_format_rejected" and strategy.feature:
                    self.state.refusals.remember(strategy.feature, reason)
                again = select_strategy(self.state.profile, has_tools=has_tools, refusals=self.state.refusals)
                if again == choice and not (strategy.feature and exc.kind == "response_format_rejected"):
                    raise
                choice = StrategyChoice(again.name, f"fell back at run time: {reason}", fallback=reason)

    def _unforced(
        self, exc: ProviderError, choice: StrategyChoice, has_tools: bool, requested: str
    ) -> StrategyChoice:
        """The server refused a forced tool choice (e.g. Anthropic with thinking on): remembered
        for the model, and the tool strategy goes on with tool choice `auto`, the output tool alone
        on the last turn (its rescue takes over if the model never calls it). Another strategy
        that forced a call asks the table again."""
        reason = f"provider rejected a forced tool choice (HTTP {exc.status}): {exc.provider_message[:160]}"
        self.state.refusals.remember("tool_choice", reason)
        if choice.name == "tool":
            why = f"{choice.reason}; tool choice auto at run time: {reason}"
            return StrategyChoice("tool", why, choice.requested, fallback=reason)
        again = select_strategy(
            self.state.profile, has_tools=has_tools, requested=requested, refusals=self.state.refusals
        )
        if again.name == choice.name:
            return choice
        return StrategyChoice(again.name, f"fell back at run time: {reason}", fallback=reason)

    async def formatted(
        self, transcript: list[Message], strategy: Strategy, formatting: Formatting
    ) -> Outcome:
        """The tool phase (unless the transcript already ends in an answer), then the formatting call."""
        cut_off = not answered(transcript)
        if (
            cut_off and self.state.turns_left(self.spec.limits.chain_limit) > 0
        ):  # not answered yet (e.g. after a run-time fallback)
            phase = await self.loop(transcript, strategy, tools=True)
            if phase.ended_by is not None:  # a tool's result is the value: no formatting call
                return phase
            cut_off = phase.cut_off
        context, messages = formatting.messages(transcript, cut_off=cut_off)
        self.state.format_context = context
        first_attempt = len(self.state.attempts)
        try:
            outcome = await self.answer(messages, has_tools=False, requested="auto", purpose="format")
        except TruncatedOutputError:
            raise  # the option to raise is the same as for any cut answer
        except (ProviderError, StructuredOutputError) as exc:
            raise formatting.error(exc, context, self.state.attempts[first_attempt:]) from exc
        return Outcome(outcome.value, cut_off)

    async def _plain(self, transcript: list[Message]) -> Outcome:
        while True:
            try:
                return await self.loop(transcript, Plain(self.state.profile, self.settings), tools=True)
            except ProviderError as exc:
                if not await self._fall_over(exc, transcript):
                    raise

    async def _fall_over_output(
        self, exc: StructuredOutputError | FormattingError, transcript: list[Message]
    ) -> bool:
        """Go on with the next fallback model after this one gave no valid value, when
        `fallback_on` holds "output"; False: raise `exc`. The next model starts from the
        transcript before the failed answers (the tools' work kept), within the same max_cost."""
        state = self.state
        after = state.route.after_output(exc) if state.route is not None else None
        if after is None:
            return False
        if self.state.answer_from is not None:  # the failed answers and what the model was told about them
            del transcript[self.state.answer_from :]
            self.state.answer_from = None
        _close_calls(transcript)
        await self._switch(after, transcript, exc)
        return True

    async def _fall_over(self, exc: ProviderError, transcript: list[Message]) -> bool:
        """Go on with the next fallback model after `exc` (chain/_fallback.py); False: raise it.
        Files it cannot read are converted for it (chain/_attachments.py)."""
        after = self.state.route.after(exc) if self.state.route is not None else None
        if after is None:
            return False
        await self._switch(after, transcript, exc)
        return True

    async def _switch(self, after: Candidate, transcript: list[Message], exc: Exception) -> None:
        """Go on with `after`: the state's candidate (client, profile, name and refusals at once);
        the stream's readers are told (a `fallback` event): the text since the last answer was
        the failed model's."""
        failed = self.state.model_name
        self.state.candidate = after
        kind = getattr(exc, "kind", None)
        why = f"{type(exc).__name__}" + (f" ({kind})" if kind else "")
        note = f"{failed} failed: {why}; {after.name} answers from here"
        self.events.append(ChainEvent("fallback", note, value=FellBack(failed, exc, after.name)))
        await for_profile(transcript, after.profile, self.events)

    # -- the turn loop --------------------------------------------------------------------------

    async def loop(
        self, transcript: list[Message], strategy: Strategy, *, tools: bool, purpose: str = "chain"
    ) -> Outcome:
        """call -> run tools -> extract -> validate -> feed back, until an answer (or the limit)."""
        offered = list(self.tools.values()) if tools else []
        limit = self.state.turns_left(self.spec.limits.chain_limit) if tools else 1
        turns, retries_left, force = 0, self.spec.limits.validation_retries, False
        answers_chain = purpose != "format"  # the loop's messages are the chain's transcript
        while True:
            last = turns >= limit - 1
            base = self.state.options if tools else self.state.options.replace(hosted_tools=None)
            options = strategy.options(base, offered, last=last, force=force)
            response, value, error = await self.caller.call(
                self.state, transcript, options, strategy, purpose
            )
            if _cut(response, strategy):  # never parsed, repaired or re-asked with the same limit
                self._grow_limit(response, options, purpose)
                purpose = "retry"
                continue
            turns += purpose != "retry"
            transcript.extend(response.messages)
            calls = [c for c in response.function_calls if c.name != OUTPUT_TOOL_NAME]
            if error is None and value is not NOT_FINAL:
                return Outcome(value)
            if error is None and calls and (not last or strategy.runs_last_tools):
                if answers_chain:
                    self.state.answer_from = None
                ending = await self._run_tools(calls, transcript)
                if ending is not None:
                    ended = await self._tool_answer(ending, transcript)
                    if ended is not None:
                        return ended
                    if retries_left == 0:
                        raise StructuredOutputError(
                            f"structured output failed after {len(self.state.attempts)} attempt(s): "
                            f"{self.state.attempts[-1].error}",
                            attempts=self.state.attempts,
                            responses=self.state.calls,
                        )
                    retries_left, purpose = retries_left - 1, "retry"
                    continue
                if last:
                    return Outcome(cut_off=True)
                purpose = "chain"
                continue
            if error is None:
                error = StructuredOutputGenerationError(
                    "Tool calls are no longer allowed: give the final answer now.", raw_text=response.text
                )
            if answers_chain and self.state.answer_from is None:  # where this model's failed answers start
                self.state.answer_from = len(transcript) - len(response.messages)
            feedback = strategy.feedback(error, response)  # a strategy that cannot retry raises here
            self.state.attempts.append(Attempt(error.raw_text, str(error), purpose))
            if retries_left == 0:
                raise StructuredOutputError(
                    f"structured output failed after {len(self.state.attempts)} attempt(s): {error}",
                    attempts=self.state.attempts,
                    responses=self.state.calls,
                )
            retries_left, force, purpose = retries_left - 1, feedback.force, "retry"
            if calls and feedback.run_calls:
                await self._run_tools(calls, transcript)
            elif calls:  # tool calls past the limit: refused, so the transcript stays valid
                refused = "Not run: the tool-call limit was reached."
                results = [FunctionResultContent(c.call_id, error=refused, name=c.name) for c in calls]
                transcript.append(Message(Role.TOOL, list(results)))
            if feedback.results and calls:  # the tool turn (a message of returned files may follow it)
                next(m for m in reversed(transcript) if m.role == Role.TOOL).contents.extend(feedback.results)
            elif feedback.results:
                transcript.append(Message(Role.TOOL, list(feedback.results)))
            if feedback.message:
                transcript.append(Message.user(feedback.message))

    def _grow_limit(self, response: ChatResponse, options: ChatOptions, purpose: str) -> None:
        """A call stopped at the output token limit: raise TruncatedOutputError, or (once, when
        `retry_max_tokens` allows it) raise the chain's limit so the call is made again."""
        limit = options.max_output_tokens
        grow = self.spec.limits.retry_max_tokens
        if grow is not None and (limit is None or grow > limit):
            self.state.options = self.state.options.replace(max_output_tokens=grow)
            return
        cut = [c for c in response.function_calls if c.name != OUTPUT_TOOL_NAME]
        part = "tool arguments" if cut else "formatting" if purpose == "format" else "answer"
        text = cut[-1].raw_arguments or "" if cut else response.text or _output_arguments(response)
        usage = response.usage_details
        tokens = f" after {usage.output_tokens} output tokens" if usage and usage.output_tokens else ""
        where = f"max_tokens={limit}" if limit is not None else "the provider's default max_tokens"
        again = " (the retry's larger limit)" if grow is not None else ""
        message = (
            f"the {part} was cut off at the output token limit ({where}{again}{tokens}); raise "
            "max_tokens (CLI: -o max_tokens N), or let the chain retry once with a larger limit "
            "(retry_max_tokens=N; CLI: --retry-max-tokens N)"
        )
        self.state.attempts.append(Attempt(text, message, purpose))
        raise TruncatedOutputError(
            message,
            max_tokens=limit,
            text=text,
            usage=usage,
            part=part,
            attempts=self.state.attempts,
            responses=self.state.calls,
        )

    async def _run_tools(
        self, calls: list[FunctionCallContent], transcript: list[Message]
    ) -> FunctionResultContent | None:
        """Run a turn's calls, each result logged as it returns; the first result that ends the
        chain (a `stop_at_tools` tool's, or a `cf.Final`), if any. A resumed chain takes the
        results its log holds instead of running those tools again. Calls that need approval and
        have none end the chain as waiting (ChainWaiting), once the turn's other calls ran."""
        made_by = self.state.calls[-1] if self.state.calls else None
        seq = len(self.state.calls) - 1
        logged_end = self.journal.ended_by(seq) if self.journal is not None else None
        known: dict[str, FunctionResultContent] = {}
        to_run: list[FunctionCallContent] = []
        pending: list[PendingCall] = []
        for call in calls:
            self.events.append(ChainEvent("tool_call", value=call, purpose="chain"))
            logged = (
                self.journal.result(seq, call.call_id, decode=call.name == logged_end)
                if self.journal
                else None
            )
            if logged is not None:
                known[call.call_id] = logged
                if made_by is not None:
                    made_by.tool_results.append(logged)
                continue
            if not self.spec.needs_approval(call.name):
                to_run.append(call)
                continue
            decision = self.state.approvals.get(call.call_id)
            if decision is None:
                pending.append(PendingCall(call.call_id, call.name, call.arguments))
            elif isinstance(decision, Denied):
                why = f"Denied by a person: {decision.reason}" if decision.reason else "Denied by a person."
                known[call.call_id] = denied = FunctionResultContent(call.call_id, error=why, name=call.name)
                await self._logged_result(made_by, denied)
            elif decision.arguments is not None:
                to_run.append(
                    FunctionCallContent(call.call_id, call.name, decision.arguments, None, call.index)
                )
            else:
                to_run.append(call)
        ran = await run_calls(
            to_run,
            self.tools,
            before_call=self.bound.before_call,
            after_call=self.bound.after_call,
            restore_arguments=self._restore_tool_arguments,
            on_result=lambda result: self._logged_result(made_by, result),
            lineage=self.state.lineage,  # a tool that takes a RunContext: subagents link back
        )
        known.update((r.call_id, r) for r in ran)
        if pending:
            raise ChainWaiting(pending)
        results = [known[c.call_id] for c in calls]
        ending: FunctionResultContent | None = None
        for result in results:
            ends = result.name == logged_end or result.name in self.spec.stop_at_tools
            if ending is None and result.error is None and (ends or result.call_id in self.state.finals):
                ending = result
        files = await tool_files(results, self.state.profile, self.events)  # tools that returned files
        for result in results:
            self.events.append(ChainEvent("tool_result", value=result, purpose="chain"))
        transcript.append(Message(Role.TOOL, list(results)))
        if files is not None:
            transcript.append(files)
        return ending

    async def _logged_result(
        self, made_by: ModelCall | None, result: FunctionResultContent
    ) -> FunctionResultContent:
        """A tool result as it returns: a `cf.Final` unwrapped (the transcript, the log and the
        events hold the value itself), kept with the call that asked for it, and logged now."""
        if isinstance(result.result, Final):
            self.state.finals.add(result.call_id)
            result = replace(result, result=result.result.value)
        if made_by is not None:
            made_by.tool_results.append(result)
            if self.logger is not None:
                await self.logger.log_results(made_by.response_id, [result])
        return result

    async def _tool_answer(self, result: FunctionResultContent, transcript: list[Message]) -> Outcome | None:
        """A tool's result as the chain's value, validated against the schema (as it is without
        one); None when it fails validation: the tool's result in the transcript becomes the error,
        so the model reads it (a re-ask)."""
        name = result.name or ""
        if self.spec.output is None:
            value = result.result
        else:
            data = plain_data(result.result)
            raw = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
            try:
                value = self.spec.output.check(data, raw_text=raw)
            except StructuredOutputGenerationError as exc:
                message = (
                    f"the result of {name} is meant to be the final answer but does not match the "
                    f"schema: {exc}. Call a tool again or answer yourself."
                )
                self.state.attempts.append(Attempt(raw, message, "chain"))
                tool_turn = next(m for m in reversed(transcript) if m.role == Role.TOOL)
                tool_turn.contents = [
                    FunctionResultContent(c.call_id, error=message, name=name)
                    if isinstance(c, FunctionResultContent) and c.call_id == result.call_id
                    else c
                    for c in tool_turn.contents
                ]
                return None
        if self.state.calls:
            ended = self.state.calls[-1]
            ended.ended_by = name
            if self.spec.output is not None:
                ended.parsed = plain_data(value)
            if self.logger is not None and ended.response_id is not None:  # logged before its tools ran
                await self.logger.mark_ended(ended.response_id, name, ended.parsed)
        return Outcome(value, ended_by=name)

    def _restore_tool_arguments(self, tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        restored = self.state.profile.dialect.restore(arguments, tool.parameters)
        return restored if isinstance(restored, dict) else arguments

    # -- result ---------------------------------------------------------------------------------

    def _result(self, outcome: Outcome) -> ChainResult:
        """What the chain returns, read from its state (done, or waiting with its pending calls)."""
        state = self.state
        transcript, status = state.transcript, state.status
        result = ChainResult(
            text=outcome.value if isinstance(outcome.value, str) else final_answer(transcript) or "",
            calls=self.state.calls,
            strategy=self.state.choice,
            format_context=self.state.format_context,
            transcript=transcript,
            conversation_id=self.state.conversation_id,
            chain_id=self.state.chain_id,
            prompt=self.spec.prompt,
            cut_off=outcome.cut_off,
            ended_by=outcome.ended_by,
            status=status,
            pending=list(state.pending),
        )
        if self.spec.output is None and outcome.ended_by is not None:  # a tool's value, as it is
            result.has_value, result.value = True, outcome.value
            result.data = plain_data(outcome.value)
            if not isinstance(outcome.value, str):
                result.text = json.dumps(result.data, ensure_ascii=False, default=str)
        if self.spec.output is not None and status == "done":
            result.has_value, result.value = True, outcome.value
            result.data = plain_data(outcome.value)
            result.text = json.dumps(result.data, ensure_ascii=False)
        return result


def unknown_stop_tools(stop_at: frozenset[str], tools: dict[str, Any]) -> None:
    """UnknownToolError, before any call, for a `stop_at_tools` name that is not offered."""
    unknown = sorted(stop_at - set(tools))
    if unknown:
        offered = ", ".join(sorted(tools)) or "(none)"
        raise UnknownToolError(
            f"stop_at_tools names {', '.join(map(repr, unknown))}, not a tool of this chain (offered: {offered})"
        )


def _cut(response: ChatResponse, strategy: Strategy) -> bool:
    """Whether a call stopped at the output token limit in what must be whole: tool-call arguments,
    or an answer that is parsed (a schema's). A plain text answer cut short is still an answer."""
    if response.finish_reason != FinishReason.LENGTH:
        return False
    return bool(response.function_calls) or (strategy.validates and strategy.output is not None)


def _output_arguments(response: ChatResponse) -> str:
    calls = [c for c in response.function_calls if c.name == OUTPUT_TOOL_NAME]
    return calls[-1].raw_arguments or "" if calls else ""


def _what(exc: ProviderError) -> str:
    return "tools with a schema" if exc.kind == "tools_with_schema_rejected" else "the response format"


def _close_calls(transcript: list[Message]) -> None:
    """Refuse the calls of a last turn that were not run, so that the transcript stays valid."""
    last = transcript[-1] if transcript else None
    if last is not None and last.role == Role.ASSISTANT and last.function_calls:
        refused = "Not run: the chain went on without tools."
        results = [FunctionResultContent(c.call_id, error=refused, name=c.name) for c in last.function_calls]
        transcript.append(Message(Role.TOOL, list(results)))
