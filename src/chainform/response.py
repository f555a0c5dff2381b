"""ChainResponse (sync) and AsyncChainResponse: a running chain you can stream, await and inspect."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import CancelledError, Future, wait
from typing import Any

from chainform import _sync
from chainform._lineage import AgentRun
from chainform.chain._approval import ChainWaitingError, PendingCall
from chainform.chain._events import ChainEvent, EventLog, FinalText, PartialObjects
from chainform.chain._records import ChainResult, ChainUsage
from chainform.chain._state import ModelCall
from chainform.documents import Conversion
from chainform.errors import ChainInterruptedError
from chainform.output import StrategyChoice

RunFactory = Callable[[EventLog], Coroutine[Any, Any, ChainResult]]


class _ResultView:
    """Accessors shared by the sync and async responses once the chain has finished."""

    _result: ChainResult | None
    _error: BaseException | None

    def _finished(self) -> ChainResult:
        raise NotImplementedError

    @property
    def responses(self) -> list[ModelCall]:
        """Every model call in order (formatting and retries included), also when the chain failed."""
        try:
            return self._finished().calls
        except Exception as exc:  # a failed chain still reports the calls it made
            return list(getattr(exc, "responses", []))

    @property
    def usage(self) -> ChainUsage:
        """Tokens of every call, the subagents' included (`by_purpose`, `by_agent`)."""
        return ChainUsage.of(self.responses, self.agent_runs)

    @property
    def agent_runs(self) -> list[AgentRun]:
        """The subagent calls this chain made (each with its model calls and nested runs)."""
        try:
            return self._finished().agent_runs
        except Exception as exc:
            return list(getattr(exc, "agent_runs", []))

    @property
    def attachments(self) -> list[Conversion]:
        """How each attachment reached the model: as is, or converted ("receipt.png: OCR, 14 lines")."""
        return self._finished().attachments

    @property
    def status(self) -> str:
        """ "done", "waiting" (tool calls wait for approval: `pending`), "failed" or "interrupted"."""
        try:
            return self._finished().status
        except (asyncio.CancelledError, KeyboardInterrupt, ChainInterruptedError):
            return "interrupted"
        except Exception:
            return "failed"

    @property
    def pending(self) -> list[PendingCall]:
        """The tool calls a waiting chain waits on (id, tool, arguments); [] otherwise."""
        return self._finished().pending

    @property
    def strategy(self) -> StrategyChoice | None:
        return self._finished().strategy

    @property
    def format_context(self) -> str | None:
        """Exactly what the deferred formatting call saw (None when no formatting call ran)."""
        return self._finished().format_context

    @property
    def conversation_id(self) -> str:
        return self._finished().conversation_id

    @property
    def cut_off(self) -> bool:
        """True when chain_limit stopped the tool phase before the model finished."""
        return self._finished().cut_off

    @property
    def ended_by(self) -> str | None:
        """The tool whose result is the value (`stop_at_tools`, or one that returned `cf.Final`);
        None when the model gave the answer."""
        return self._finished().ended_by

    @property
    def transcript(self) -> list[Any]:
        return self._finished().transcript

    def json(self) -> Any:
        """The answer as plain JSON data (the parsed reply when there was no schema)."""
        result = self._finished()
        if result.has_value:
            return result.data
        return json.loads(result.text)


class ChainResponse(_ResultView):
    """A chain running on chainform's background loop. Iterate for text chunks as they arrive."""

    def __init__(self, factory: RunFactory, chain_id: str | None = None) -> None:
        self.chain_id = chain_id  # the chain's id in the log (`cf.resume`, `chainform resume`)
        self._events = EventLog()
        self._result = None
        self._error = None
        self._task: asyncio.Task[Any] | None = None  # set, and read, on the background loop only
        self._stopped = False
        self._future: Future[ChainResult] = _sync.submit(self._run(factory))

    async def _run(self, factory: RunFactory) -> ChainResult:
        self._task = asyncio.current_task()
        if self._stopped:  # cancelled before it began: nothing was sent
            self._events.close()
            raise asyncio.CancelledError
        return await factory(self._events)

    def cancel(self) -> None:
        """Stop the chain where it is (Ctrl-C in `chainform chat`) and wait until it has stopped:
        every call it finished is logged when this returns. Reading the response afterwards raises
        ChainInterruptedError. Does nothing to a chain that has already ended."""

        def stop() -> None:  # on the loop, so it sees `_task` as `_run` left it
            self._stopped = True
            if self._task is not None:
                self._task.cancel()

        if self._future.done():
            return
        _sync.call_soon(stop)
        for _ in self._events.follow():  # the run closes its events last, after logging
            pass
        wait([self._future])

    def __iter__(self) -> Iterator[str]:
        return self.chunks()

    def chunks(self, *, intermediate: bool = True) -> Iterator[str]:
        """Text as it arrives; `intermediate=False` keeps only the final answer's text."""
        text = FinalText(intermediate)
        for event in self._events.follow():
            yield from text.feed(event)
        self._finished()

    def events(self, *, partials: bool = True) -> Iterator[ChainEvent]:
        """Every event (text, partial, tool_call, tool_result) from the start; `partials=False`
        skips deriving partial objects (a reader that only prints text needs none)."""
        derive = PartialObjects() if partials else None
        for event in self._events.follow():
            if derive is None:
                yield event
            else:
                yield from derive.feed(event)
        if derive is not None:
            yield from derive.close()
        self._finished()

    def partial(self) -> Iterator[Any]:
        """Partial objects while the structured answer streams (the last one is complete JSON)."""
        for event in self.events():
            if event.kind == "partial":
                yield event.value

    def _finished(self) -> ChainResult:
        if self._result is None and self._error is None:
            self._events.result_only = True  # calls still to come need not stream unless someone reads
            try:
                self._result = self._future.result()
            except CancelledError:
                self._error = ChainInterruptedError("the chain was cancelled")
            except BaseException as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def text(self) -> str:
        """The final answer's text (canonical JSON when a schema was given)."""
        return _done(self._finished()).text

    @property
    def value(self) -> Any:
        """The validated answer: a pydantic instance when the schema was a model, else parsed JSON."""
        return self.get_value()

    def get_value(self) -> Any:
        result = _done(self._finished())
        if not result.has_value:
            raise ValueError("this chain had no schema; use .text() or .json()")
        return result.value

    def __repr__(self) -> str:
        state = "done" if self._future.done() else "running"
        return f"<ChainResponse {state}>"


class AsyncChainResponse(_ResultView):
    """The async twin: `async for chunk in r`, `await r.text()`, `await r.get_value()`, `await r`."""

    def __init__(self, factory: RunFactory, chain_id: str | None = None) -> None:
        self.chain_id = chain_id  # the chain's id in the log (`cf.resume`, `chainform resume`)
        self._factory = factory
        self._events = EventLog()
        self._result = None
        self._error = None
        self._task: asyncio.Task[ChainResult] | None = None

    def _start(self) -> asyncio.Task[ChainResult]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._factory(self._events))
        return self._task

    async def _wait(self, result_only: bool = False) -> ChainResult:
        if result_only:  # calls still to come need not stream unless someone reads
            self._events.result_only = True
        task = self._start()
        try:
            self._result = await asyncio.shield(task)
        except BaseException as exc:
            self._error = exc
            raise
        return self._result

    def _finished(self) -> ChainResult:
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError("the chain has not finished: await it (or .text()/.get_value()) first")
        return self._result

    async def acancel(self) -> None:
        """Stop the chain where it is and wait until it has stopped: it ends as interrupted, every
        call it finished logged (a waiter cancelled does not stop it: the chain is shielded)."""
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait([task])

    def __await__(self) -> Any:
        async def done() -> AsyncChainResponse:
            await self._wait(result_only=True)
            return self

        return done().__await__()

    def __aiter__(self) -> AsyncIterator[str]:
        return self.achunks()

    async def achunks(self, *, intermediate: bool = True) -> AsyncIterator[str]:
        """Text as it arrives; `intermediate=False` keeps only the final answer's text."""
        self._start()
        text = FinalText(intermediate)
        async for event in self._events.afollow():
            for chunk in text.feed(event):
                yield chunk
        await self._wait()

    async def aevents(self, *, partials: bool = True) -> AsyncIterator[ChainEvent]:
        self._start()
        derive = PartialObjects() if partials else None
        async for event in self._events.afollow():
            for derived in derive.feed(event) if derive is not None else [event]:
                yield derived
        for derived in derive.close() if derive is not None else []:
            yield derived
        await self._wait()

    async def apartial(self) -> AsyncIterator[Any]:
        async for event in self.aevents():
            if event.kind == "partial":
                yield event.value

    async def text(self) -> str:
        return _done(await self._wait(result_only=True)).text

    async def get_value(self) -> Any:
        result = _done(await self._wait(result_only=True))
        if not result.has_value:
            raise ValueError("this chain had no schema; use await .text()")
        return result.value

    @property
    def value(self) -> Any:
        result = _done(self._finished())
        if not result.has_value:
            raise ValueError("this chain had no schema; use await .text()")
        return result.value


def _done(result: ChainResult) -> ChainResult:
    """`result`, unless the chain waits for approval (ChainWaitingError: it has no answer yet)."""
    if result.status == "waiting":
        raise ChainWaitingError(result.chain_id, result.pending)
    return result
