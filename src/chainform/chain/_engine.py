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

`traced(run)` runs a chain as the current one in its context: the lineage that links subagents
to it, and (when tracing is on, chainform.instrument) its span.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from chainform import _lineage, _trace
from chainform.chain._approval import Approval, ChainWaiting, Denied, PendingCall, decided
from chainform.chain._attachments import for_profile, tool_files
from chainform.chain._calls import CallRunner, ChainLogger, ModelCall, plain_data
from chainform.chain._events import ChainEvent, EventLog
from chainform.chain._fallback import Candidate, FallbackPlan, Route
from chainform.chain._journal import Journal
from chainform.chain._records import ChainResult
from chainform.chain._spec import ChainSpec
from chainform.chain._tools import AfterCall, BeforeCall, run_calls
from chainform.clients.base import ChatClient
from chainform.errors import (
    Attempt,
    ChainformError,
    ChainInterruptedError,
    ProviderError,
    StructuredOutputError,
    StructuredOutputGenerationError,
)
from chainform.output import OUTPUT_TOOL_NAME, StrategyChoice, select_strategy
from chainform.output._select import Refusals
from chainform.output.strategies import NOT_FINAL, Outcome, Plain, Settings, Strategy, build
from chainform.output.strategies._context import Formatting, answered, final_answer
from chainform.pricing import Meter
from chainform.store import ChainStatus
from chainform.types import (
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelProfile,
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


class ChainRun(CallRunner):
    """One execution of a ChainSpec against a client. The spec is data; what is not (the tools'
    code, the before/after hooks) is bound here."""

    def __init__(
        self,
        client: ChatClient,
        spec: ChainSpec,
        *,
        tools: list[Any],
        before_call: BeforeCall | None = None,
        after_call: AfterCall | None = None,
        profile: ModelProfile,
        model_name: str,
        conversation_id: str,
        chain_id: str,
        events: EventLog,
        logger: ChainLogger | None = None,
        refusals: Refusals | None = None,
        fallback: FallbackPlan | None = None,
        journal: Journal | None = None,
        approvals: dict[str, Approval] | None = None,
    ) -> None:
        memory = refusals if refusals is not None else Refusals()
        meter = Meter(model_name, spec.limits.max_cost)
        super().__init__(
            client, events, memory, stream=spec.stream, logger=logger, meter=meter, journal=journal
        )
        self.approvals = {k: decided(v) for k, v in (approvals or {}).items()}
        self.spec = spec
        # one conversation's requests share a cache (clients/_wire.py `openai_key`)
        cache_key = spec.options.cache_key or conversation_id
        self.options = spec.options.replace(cache_key=cache_key)  # the spec itself is never changed
        self.before_call, self.after_call = before_call, after_call
        self.profile = profile
        self.model_name = model_name
        self.route = (
            Route(Candidate(client, profile, model_name, self.refusals), fallback)
            if fallback is not None
            else None
        )
        self.conversation_id = conversation_id
        self.chain_id = chain_id
        self.tools = {t.name: t for t in tools}
        self.attempts: list[Attempt] = []
        formatting = spec.formatting
        self.settings = Settings(self.refusals, spec.limits.chain_limit, formatting.policy, formatting.prompt)

    async def run(self) -> ChainResult:
        spec = self.spec
        messages = [Message.system(spec.system)] if spec.system else []
        transcript = [*messages, *spec.history, *([spec.prompt] if spec.prompt else [])]
        status: ChainStatus = "failed"
        error: str | None = None
        pending: list[PendingCall] = []
        if self.logger is not None:
            await self.logger.begin(spec)
        try:
            try:
                if spec.output is None:
                    outcome = await self._plain(transcript)
                else:
                    has_tools, requested = bool(self.tools), spec.strategy
                    outcome = await self.answer(transcript, has_tools=has_tools, requested=requested)
            except ChainWaiting as waiting:
                status, pending = "waiting", waiting.pending
                return self._result(transcript, Outcome(), status="waiting", pending=pending)
            status = "done"
            return self._result(transcript, outcome)
        except ChainformError as exc:
            if not exc.responses:
                exc.responses = list(self.calls)
            status = "interrupted" if isinstance(exc, ChainInterruptedError) else "failed"
            error = f"{type(exc).__name__}: {exc}"
            raise
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            await self.log_finished()  # the last call, if it was not logged yet
            if self.logger is not None:
                await self.logger.end(status, error=error, pending=[p.to_dict() for p in pending])
            self.events.close()

    # -- choosing a strategy, and falling back when the provider refuses it ---------------------

    async def answer(
        self, transcript: list[Message], *, has_tools: bool, requested: str, purpose: str = "chain"
    ) -> Outcome:
        """Run the strategy the decision table picks; on a refusal, remember it and pick again."""
        assert self.spec.output is not None
        choice = select_strategy(
            self.profile, has_tools=has_tools, requested=requested, refusals=self.refusals
        )
        while True:
            strategy = build(choice, self.spec.output, self.profile, self.settings)
            if purpose == "chain":
                self.choice = choice
            strategy.prepare(transcript)
            try:
                if strategy.formatting is not None:
                    return await self.formatted(transcript, strategy, strategy.formatting)
                return await self.loop(transcript, strategy, tools=has_tools, purpose=purpose)
            except StructuredOutputError as exc:
                if strategy.rescue is None or purpose != "chain":
                    raise
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
                        self.profile, has_tools=has_tools, requested=requested, refusals=self.refusals
                    )
                    continue
                if exc.kind == "tool_choice_rejected" and "tool_choice" not in self.refusals:
                    choice = self._unforced(exc, choice, has_tools, requested)
                    continue
                if requested != "auto" or exc.kind not in _REFUSALS:
                    raise
                reason = f"provider rejected {_what(exc)} (HTTP {exc.status}): {exc.provider_message[:160]}"
                if exc.kind == "tools_with_schema_rejected" or has_tools:
                    self.refusals.remember("tools_with_schema", reason)
                if exc.kind == "response_format_rejected" and strategy.feature:
                    self.refusals.remember(strategy.feature, reason)
                again = select_strategy(self.profile, has_tools=has_tools, refusals=self.refusals)
                if again == choice and not (strategy.feature and exc.kind == "response_format_rejected"):
                    raise
                choice = StrategyChoice(again.name, f"fell back at run time: {reason}", fallback=reason)

    def _unforced(
        self, exc: ProviderError, choice: StrategyChoice, has_tools: bool, requested: str
    ) -> StrategyChoice:
        """The server refused a forced tool choice: remembered, and the table asked again (an
        explicit `tool` goes on without forcing; its rescue takes over if the model never calls
        the output tool)."""
        reason = f"provider rejected a forced tool choice (HTTP {exc.status}): {exc.provider_message[:160]}"
        self.refusals.remember("tool_choice", reason)
        again = select_strategy(
            self.profile, has_tools=has_tools, requested=requested, refusals=self.refusals
        )
        if again.name == choice.name:
            return choice
        return StrategyChoice(again.name, f"fell back at run time: {reason}", fallback=reason)

    async def formatted(
        self, transcript: list[Message], strategy: Strategy, formatting: Formatting
    ) -> Outcome:
        """The tool phase (unless the transcript already ends in an answer), then the formatting call."""
        cut_off = not answered(transcript)
        if cut_off and self.turns_left() > 0:  # not answered yet (e.g. after a run-time fallback)
            cut_off = (await self.loop(transcript, strategy, tools=True)).cut_off
        context, messages = formatting.messages(transcript, cut_off=cut_off)
        self.format_context = context
        first_attempt = len(self.attempts)
        try:
            outcome = await self.answer(messages, has_tools=False, requested="auto", purpose="format")
        except (ProviderError, StructuredOutputError) as exc:
            raise formatting.error(exc, context, self.attempts[first_attempt:]) from exc
        return Outcome(outcome.value, cut_off)

    async def _plain(self, transcript: list[Message]) -> Outcome:
        while True:
            try:
                return await self.loop(transcript, Plain(self.profile, self.settings), tools=True)
            except ProviderError as exc:
                if not await self._fall_over(exc, transcript):
                    raise

    async def _fall_over(self, exc: ProviderError, transcript: list[Message]) -> bool:
        """Go on with the next fallback model after `exc` (chain/_fallback.py); False: raise it.
        Files it cannot read are converted for it (chain/_attachments.py)."""
        after = self.route.after(exc) if self.route is not None else None
        if after is None:
            return False
        self.client, self.profile, self.model_name = after.client, after.profile, after.name
        self.refusals = after.refusals
        self.settings = replace(self.settings, refusals=after.refusals)
        await for_profile(transcript, self.profile, self.events)
        return True

    def turns_left(self) -> int:
        """Chain turns left; a call that raised (e.g. before a fallback model took over) takes none."""
        return self.spec.limits.chain_limit - sum(
            1 for c in self.calls if c.purpose == "chain" and not c.failed
        )

    # -- the turn loop --------------------------------------------------------------------------

    async def loop(
        self, transcript: list[Message], strategy: Strategy, *, tools: bool, purpose: str = "chain"
    ) -> Outcome:
        """call -> run tools -> extract -> validate -> feed back, until an answer (or the limit)."""
        offered = list(self.tools.values()) if tools else []
        limit = self.turns_left() if tools else 1
        turns, retries_left, force = 0, self.spec.limits.validation_retries, False
        while True:
            last = turns >= limit - 1
            options = strategy.options(self.options, offered, last=last, force=force)
            response, value, error = await self.call(transcript, options, strategy, purpose)
            turns += purpose != "retry"
            transcript.extend(response.messages)
            calls = [c for c in response.function_calls if c.name != OUTPUT_TOOL_NAME]
            if error is None and value is not NOT_FINAL:
                return Outcome(value)
            if error is None and calls and (not last or strategy.runs_last_tools):
                await self._run_tools(calls, transcript)
                if last:
                    return Outcome(cut_off=True)
                purpose = "chain"
                continue
            if error is None:
                error = StructuredOutputGenerationError(
                    "Tool calls are no longer allowed: give the final answer now.", raw_text=response.text
                )
            feedback = strategy.feedback(error, response)  # a strategy that cannot retry raises here
            self.attempts.append(Attempt(error.raw_text, str(error), purpose))
            if retries_left == 0:
                raise StructuredOutputError(
                    f"structured output failed after {len(self.attempts)} attempt(s): {error}",
                    attempts=self.attempts,
                    responses=self.calls,
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

    async def _run_tools(self, calls: list[FunctionCallContent], transcript: list[Message]) -> None:
        """Run a turn's tool calls; each result is logged as it returns. A resumed chain takes the
        results its log holds instead of running those tools again. Calls that need approval and
        have none end the chain as waiting (ChainWaiting), once the turn's other calls ran."""
        made_by = self.calls[-1] if self.calls else None
        seq = len(self.calls) - 1
        known: dict[str, FunctionResultContent] = {}
        to_run: list[FunctionCallContent] = []
        pending: list[PendingCall] = []
        for call in calls:
            self.events.append(ChainEvent("tool_call", value=call, purpose="chain"))
            logged = self.journal.result(seq, call.call_id) if self.journal is not None else None
            if logged is not None:
                known[call.call_id] = logged
                if made_by is not None:
                    made_by.tool_results.append(logged)
                continue
            if not self.spec.needs_approval(call.name):
                to_run.append(call)
                continue
            decision = self.approvals.get(call.call_id)
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
            before_call=self.before_call,
            after_call=self.after_call,
            restore_arguments=self._restore_tool_arguments,
            on_result=lambda result: self._logged_result(made_by, result),
        )
        known.update((r.call_id, r) for r in ran)
        if pending:
            raise ChainWaiting(pending)
        results = [known[c.call_id] for c in calls]
        files = await tool_files(results, self.profile, self.events)  # tools that returned files
        for result in results:
            self.events.append(ChainEvent("tool_result", value=result, purpose="chain"))
        transcript.append(Message(Role.TOOL, list(results)))
        if files is not None:
            transcript.append(files)

    async def _logged_result(self, made_by: ModelCall | None, result: FunctionResultContent) -> None:
        """Keep a tool result with the call that asked for it, and log it now."""
        if made_by is None:
            return
        made_by.tool_results.append(result)
        if self.logger is not None:
            await self.logger.log_results(made_by.response_id, [result])

    def _restore_tool_arguments(self, tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        restored = self.profile.dialect.restore(arguments, tool.parameters)
        return restored if isinstance(restored, dict) else arguments

    # -- result ---------------------------------------------------------------------------------

    def _result(
        self,
        transcript: list[Message],
        outcome: Outcome,
        *,
        status: ChainStatus = "done",
        pending: list[PendingCall] | None = None,
    ) -> ChainResult:
        result = ChainResult(
            text=outcome.value if isinstance(outcome.value, str) else final_answer(transcript) or "",
            calls=self.calls,
            strategy=self.choice,
            format_context=self.format_context,
            transcript=transcript,
            conversation_id=self.conversation_id,
            chain_id=self.chain_id,
            prompt=self.spec.prompt,
            cut_off=outcome.cut_off,
            status=status,
            pending=pending or [],
        )
        if self.spec.output is not None and status == "done":
            result.has_value, result.value = True, outcome.value
            result.data = plain_data(outcome.value)
            result.text = json.dumps(result.data, ensure_ascii=False)
        return result


def _what(exc: ProviderError) -> str:
    return "tools with a schema" if exc.kind == "tools_with_schema_rejected" else "the response format"


def _close_calls(transcript: list[Message]) -> None:
    """Refuse the calls of a last turn that were not run, so that the transcript stays valid."""
    last = transcript[-1] if transcript else None
    if last is not None and last.role == Role.ASSISTANT and last.function_calls:
        refused = "Not run: the chain went on without tools."
        results = [FunctionResultContent(c.call_id, error=refused, name=c.name) for c in last.function_calls]
        transcript.append(Message(Role.TOOL, list(results)))


async def traced(run: ChainRun) -> ChainResult:
    """Run a chain as the current one in this context, so subagents it calls link back to it."""
    agent = _lineage.starting_agent.get()
    parent = _lineage.current_chain.get() if agent else None
    call = _lineage.current_tool_call.get() if agent else None
    lineage = _lineage.Lineage(
        run.chain_id,
        run.conversation_id,
        depth=agent[1] if agent else 0,
        agent=agent[0] if agent else None,
        parent_chain_id=parent.chain_id if parent else None,
        parent_conversation_id=parent.conversation_id if parent else None,
        parent_call_id=call.call_id if call is not None else None,
    )
    token = _lineage.current_chain.set(lineage)
    starting = _lineage.starting_agent.set(None)
    try:
        hooks = _trace.hooks  # tracing on: the chain's span is current while it runs
        with nullcontext() if hooks is None else hooks.chain(run, agent[0] if agent else None):
            result = await run.run()
    except ChainformError as exc:
        exc.agent_runs = lineage.children
        raise
    finally:
        _lineage.current_chain.reset(token)
        _lineage.starting_agent.reset(starting)
    result.agent_runs = lineage.children
    return result
