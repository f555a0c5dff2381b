"""Model, AsyncModel and Conversation: the user-facing entry points to chains and single prompts."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from chainform import _sync
from chainform._lineage import Parent
from chainform._map._api import amap, map_sync
from chainform.chain._approval import Approval
from chainform.chain._attachments import PendingPrompt, Prepared, PromptInput, prepare_request, user_prompt
from chainform.chain._calls import ChainLogger
from chainform.chain._engine import Bound, ChainRun, unknown_stop_tools
from chainform.chain._events import EventLog
from chainform.chain._fallback import Candidate, FallbackKind, FallbackPlan
from chainform.chain._history import history_after
from chainform.chain._journal import Journal, ResumeError
from chainform.chain._lock import ChainLock
from chainform.chain._records import ChainResult
from chainform.chain._resume import Ready
from chainform.chain._spec import ChainSpec, validation_retries_of
from chainform.chain._state import RunState
from chainform.chain._tools import AfterCall, BeforeCall, is_tool_source, normalize_tools
from chainform.clients.base import ChatClient
from chainform.errors import HomeError, PricingError
from chainform.output import STRATEGIES, OutputSpec
from chainform.output._select import Refusals, around_hosted
from chainform.output.strategies._context import ContextPolicy
from chainform.pricing import Cost
from chainform.response import AsyncChainResponse, ChainResponse, RunFactory
from chainform.store import Store, logging_enabled, new_id, unmarked_text
from chainform.types import Attachment, ChatOptions, HostedTool, Message, ModelProfile
from chainform.types._options import as_options

R = TypeVar("R", ChainResponse, AsyncChainResponse)
M = TypeVar("M", "Model", "AsyncModel")


class _Base(Generic[R]):
    def __init__(
        self,
        client: ChatClient,
        profile: ModelProfile | None = None,
        *,
        name: str | None = None,
        log_path: Any = None,
        fallback: FallbackPlan | None = None,
    ) -> None:
        self.client = client
        self.fallback = fallback  # the models a chain goes on with when this one fails (chain/_fallback)
        self._profile = profile
        self.name = name or (profile or client.profile).name
        self._log_path = log_path
        self._store: Store | None = None
        self._store_failed = False
        self.refusals = Refusals()
        """Refusals learnt at run time (e.g. tools with a schema), shared by this model's chains; `.clear()`."""

    @property
    def profile(self) -> ModelProfile:
        return self._profile or self.client.profile

    @property
    def fallbacks(self) -> Refusals:  # deprecated name of `refusals`; `fallback` names other models
        warnings.warn("model.fallbacks is now model.refusals", DeprecationWarning, stacklevel=2)
        return self.refusals

    def _twin(self, client: ChatClient | None = None) -> AsyncModel:
        """An AsyncModel like this one on `client` (else this one's): what `map` runs rows on."""
        kept = {"name": self.name, "log_path": self._log_path, "fallback": self.fallback}
        return AsyncModel(client or self.client, self._profile, **kept)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    async def aclose(self) -> None:
        """Close the provider's connections and the log's; both open again if the model is used."""
        close = getattr(self.client, "aclose", None)
        if close is not None:
            await close()
        if self._store is not None:
            self._store.close()

    # -- chains -----------------------------------------------------------------------------

    def _response_of(self, factory: RunFactory, chain_id: str | None = None) -> R:
        raise NotImplementedError

    def chain(
        self,
        prompt: PromptInput = None,
        *,
        system: str | None = None,
        tools: Sequence[Any] | None = None,
        schema: Any = None,
        strategy: str = "auto",
        chain_limit: int = 5,
        validation_retries: int | None = None,
        before_call: BeforeCall | None = None,
        after_call: AfterCall | None = None,
        format_prompt: str | None = None,
        format_context: str | ContextPolicy = "compact",
        options: ChatOptions | dict[str, Any] | None = None,
        stream: bool = True,
        log: bool = True,
        conversation_id: str | None = None,
        history: Sequence[Message] = (),
        attachments: Sequence[Attachment] | None = None,
        convert: bool = True,
        allow_private_urls: bool = False,
        attachments_store: str = "copy",
        max_cost: Cost | None = None,
        retry_max_tokens: int | None = None,
        stop_at_tools: Sequence[str] = (),
        requires_approval: Sequence[str] = (),
        retries: int | None = None,
        conversation_name: str | None = None,
        parent: Parent | None = None,
    ) -> R:
        """Run a tool chain whose final answer matches `schema` (when given); see docs/strategies.md.

        An answer cut off at the output token limit raises TruncatedOutputError; with
        `retry_max_tokens` (above the `max_tokens` option) it is asked again once with that limit.
        `tools` may hold hosted tools (`cf.WebSearch()`, `cf.CodeExecution()`, `cf.URLContext()`,
        `cf.FileSearch(ids)`) the provider runs itself; HostedToolError before any call where the
        model has none or cannot combine them (docs/providers.md).
        A call of a tool named in `stop_at_tools` (or a tool returning `cf.Final(value)`) ends the
        chain: its result, validated against `schema`, is the value (`chain.ended_by` names it).
        `validation_retries`: re-asks after output that fails validation (`retries` is its old,
        deprecated name). `requires_approval`: names of tools whose calls end the chain as
        "waiting" until a person approves them (`cf.resume`, docs/durable.md); a Tool can also be
        marked itself (`tool.requires_approval = True`).

        `conversation_name`: how the log names the conversation (map names each row's); `parent`:
        the link to the chain and tool call that started this one (an Agent used as a tool gives
        it; its records then link back).

        `attachments` (or Attachments in `prompt=[...]`) are made ready for this model before
        anything is sent: as they are, or converted locally (docs/attachments.md). `max_cost` (USD)
        ends the chain between calls with BudgetExceededError once its calls cost that much.
        The sync Model starts the chain at once on a background loop; AsyncModel when awaited.
        """
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if max_cost is not None and self.fallback is not None:  # priced only once one answered: now
            from chainform.pricing import PRICES, Budget

            budget = Budget(max_cost)
            for other in self.fallback.models:
                budget.check_rate(PRICES.rate(other.name))
        chat_options = as_options(options)
        check_growth(retry_max_tokens, chat_options.max_output_tokens)
        sources = [t for t in tools or () if is_tool_source(t) and not isinstance(t, HostedTool)]
        message = user_prompt(
            prompt,
            attachments,
            convert=convert,
            allow_private_urls=allow_private_urls,
            store=attachments_store,
        )
        pending = message if isinstance(message, PendingPrompt) else None
        hosted = tuple(t for t in tools or () if isinstance(t, HostedTool))
        tools = [t for t in tools or () if not isinstance(t, HostedTool)]
        offered = normalize_tools(t for t in tools if not is_tool_source(t))
        strategy = around_hosted(
            self.profile,
            [t.kind for t in hosted],
            has_functions=bool(offered or sources),
            has_schema=schema is not None,
            requested=strategy,
        )
        if hosted:
            if max_cost is not None:  # a cap that counted their uses as 0 would hold less than it says
                raise PricingError(
                    "max_cost cannot be held with hosted tools: the provider bills their uses beyond "
                    "the tokens, and chainform has no price for them"
                )
            chat_options = chat_options.replace(hosted_tools=hosted)
        live_tools = offered
        stop_at = frozenset([stop_at_tools] if isinstance(stop_at_tools, str) else stop_at_tools)
        if not sources:  # with MCP servers, their tools are known when the chain starts
            unknown_stop_tools(stop_at, {t.name: t for t in live_tools})
        spec = ChainSpec.build(
            self.name,
            prompt=message if isinstance(message, Message) else None,
            system=system,
            history=history,
            tools=live_tools,
            output=OutputSpec.from_user(schema) if schema is not None else None,
            strategy=strategy,
            chain_limit=chain_limit,
            validation_retries=validation_retries_of(validation_retries, retries),
            max_cost=max_cost,
            format_context=format_context,
            format_prompt=format_prompt,
            options=chat_options,
            stream=stream,
            fallbacks=[m.name for m in self.fallback.models] if self.fallback is not None else (),
            requires_approval=requires_approval,
            retry_max_tokens=retry_max_tokens,
            stop_at_tools=stop_at,
        )
        bound = Bound(live_tools, before_call, after_call, sources)
        run = Launch(
            spec, bound, conversation_id or new_id(), new_id(), log,
            conversation_name=conversation_name, parent=parent,
        )  # fmt: skip
        return self._response_of(lambda events: self._run_logged(run, events, pending), run.chain_id)

    def _resumed(
        self,
        ready: Ready,
        before_call: BeforeCall | None = None,
        after_call: AfterCall | None = None,
        *,
        conversation_name: str | None = None,
    ) -> R:
        """Go on with a chain checked and locked for resuming (chain/_resume.py), on this model and
        its log: the journal replays what the log holds; the chain's lock is let go when it ends."""
        launch = Launch(
            ready.spec,
            Bound(ready.tools, before_call, after_call),
            ready.row.conversation_id,
            ready.row.id,
            journal=ready.journal,
            approvals=ready.approvals,
            lock=ready.lock,
            conversation_name=conversation_name,
            parent=ready.parent,
        )

        async def run(events: EventLog) -> ChainResult:
            try:
                return await self._run_logged(launch, events)
            finally:
                ready.lock.release()

        return self._response_of(run, ready.row.id)

    def prompt(
        self,
        prompt: PromptInput,
        *,
        system: str | None = None,
        schema: Any = None,
        options: ChatOptions | dict[str, Any] | None = None,
        validation_retries: int | None = None,
        stream: bool = True,
        log: bool = True,
        retries: int | None = None,
        **attaching: Any,
    ) -> R:
        """A single call (no tools); with a schema, validated and retried like a chain.
        `attachments=`, `convert=`, `allow_private_urls=`, `attachments_store=` as for `chain`."""
        return self.chain(
            prompt, system=system, schema=schema, options=options, stream=stream, log=log,
            validation_retries=validation_retries_of(validation_retries, retries, stacklevel=4), **attaching,
        )  # fmt: skip

    # -- logging ----------------------------------------------------------------------------

    def log_to(self, store: Store) -> None:
        """Log this model's chains to `store`, an open log (the CLI opens one per command)."""
        self._store, self._store_failed = store, False

    def _open_store(self) -> Store | None:
        if self._store is None and not self._store_failed:
            try:
                if not logging_enabled():  # `chainform logs off`
                    return None
                self._store = Store(self._log_path)
            except Exception as exc:  # logging must never break a chain; say so once
                self._store_failed = True
                way_on = "" if isinstance(exc, HomeError) else " (pass log=False to run without it)"
                warnings.warn(f"chainform: logging disabled: {exc}{way_on}", stacklevel=3)
        return self._store

    def _logger(
        self, spec: ChainSpec, prepared: Prepared | None, conversation_id: str, chain_id: str
    ) -> ChainLogger | None:
        store = self._open_store()
        if store is None or not logging_enabled():
            return None
        return ChainLogger(
            store,
            conversation_id=conversation_id,
            chain_id=chain_id,
            model=self.name,
            prompt=prepared.text if prepared else unmarked_text(spec.prompt) if spec.prompt else None,
            system=spec.system,
            schema=spec.output.schema if spec.output else None,
            format_context_policy=spec.formatting.policy.name,
            attachments=prepared.attachments if prepared else (),
            attachments_store=prepared.store if prepared else "copy",
        )

    async def _run_logged(
        self, launch: Launch, events: EventLog, pending: PendingPrompt | None = None
    ) -> ChainResult:
        """Run a chain, each call committed to the log as it arrives (chain/_calls.py). Tools
        from MCP servers (`bound.sources`) are listed once their sessions are open, and the
        sessions stay open for the chain. A logged chain holds its lock (chain/_lock.py) while it
        runs: a resume elsewhere is refused meanwhile."""
        spec, conversation_id, chain_id = launch.spec, launch.conversation_id, launch.chain_id
        tools: list[Any] = list(launch.bound.tools)
        leased: list[Any] = []
        logger = None
        lock = None
        try:
            prepared = await prepare_request(pending, self.profile, events)  # before any call
            if prepared is not None:
                spec = replace(spec, prompt=prepared.message)
            for source in launch.bound.sources:
                offered: list[Any] = await asyncio.to_thread(source.acquire)
                leased.append(source)
                tools = normalize_tools([*tools, *offered])
            if leased:
                spec = spec.with_tools(tools)
            logger = self._logger(spec, prepared, conversation_id, chain_id) if launch.log else None
            if logger is not None and launch.lock is None:
                lock = ChainLock(logger.store.path, chain_id)
                if not lock.acquire():  # a new id: only a resume elsewhere of this very chain
                    raise ResumeError(f"chain {chain_id} is running in another process")
            first = Candidate(self.client, self.profile, self.name, self.refusals)
            state = RunState.start(
                spec,
                first,
                self.fallback,
                chain_id=chain_id,
                conversation_id=conversation_id,
                parent=launch.parent,
                conversation_name=launch.conversation_name,
                approvals=launch.approvals,
            )
            run = ChainRun(
                spec, state, bound=replace(launch.bound, tools=tools), events=events, logger=logger,
                journal=launch.journal,
            )  # fmt: skip
            result = await run.run()
        finally:
            if lock is not None:
                lock.release()
            events.close()
            for source in leased:
                await asyncio.to_thread(source.release)
        if prepared is not None:
            result.attachments = prepared.conversions
        return result


@dataclass(frozen=True)
class Launch:
    """One chain to run: its spec, what is bound to it, its ids; a resumed chain's journal
    (its log, replayed) and the approvals a person gave for its pending tool calls."""

    spec: ChainSpec
    bound: Bound
    conversation_id: str
    chain_id: str
    log: bool = True
    journal: Journal | None = None
    approvals: dict[str, Approval] | None = None
    lock: ChainLock | None = None  # held by the caller (a resume) already
    conversation_name: str | None = None  # how the log names the conversation (a map row's)
    parent: Parent | None = None  # a subagent's: the chain and tool call that started it


class Model(_Base[ChainResponse]):
    """A model you can prompt or run tool chains on. `cf.get_model(name)` builds one from a name."""

    def _response_of(self, factory: RunFactory, chain_id: str | None = None) -> ChainResponse:
        return ChainResponse(factory, chain_id)

    def close(self) -> None:
        """Close the provider's connections and the log's (`with cf.get_model(...) as model:`)."""
        _sync.run(self.aclose())

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def conversation(
        self, conversation_id: str | None = None, history: Sequence[Message] = ()
    ) -> Conversation:
        return Conversation(self, conversation_id, history)

    map = map_sync


class AsyncModel(_Base[AsyncChainResponse]):
    """The awaitable twin of Model: `chain(...)` returns an AsyncChainResponse."""

    def _response_of(self, factory: RunFactory, chain_id: str | None = None) -> AsyncChainResponse:
        return AsyncChainResponse(factory, chain_id)

    async def __aenter__(self) -> AsyncModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def conversation(
        self, conversation_id: str | None = None, history: Sequence[Message] = ()
    ) -> AsyncConversation:
        return AsyncConversation(self, conversation_id, history)

    amap = amap


class Conversation:
    """Several chains sharing one history and one conversation id (like a chat session)."""

    def __init__(
        self, model: Model, conversation_id: str | None = None, history: Sequence[Message] = ()
    ) -> None:
        self.model = model
        self.id = conversation_id or new_id()
        self.history: list[Message] = list(history)
        self.responses: list[ChainResponse] = []

    def chain(self, prompt: PromptInput = None, **kwargs: Any) -> ChainResponse:
        """Like `Model.chain`; waits for the previous chain so each sees the history before it."""
        self._settle()
        response = self.model.chain(prompt, conversation_id=self.id, history=self.history, **kwargs)
        self.responses.append(response)
        return response

    def prompt(self, prompt: PromptInput, **kwargs: Any) -> ChainResponse:
        return self.chain(prompt, **kwargs)

    def _settle(self) -> None:
        if self.responses:
            with contextlib.suppress(Exception):  # a failed chain adds nothing to the history
                self.history = history_after(self.history, self.responses[-1]._finished())


class AsyncConversation:
    """The async twin of Conversation."""

    def __init__(
        self, model: AsyncModel, conversation_id: str | None = None, history: Sequence[Message] = ()
    ) -> None:
        self.model = model
        self.id = conversation_id or new_id()
        self.history: list[Message] = list(history)
        self._last: AsyncChainResponse | None = None

    async def chain(self, prompt: PromptInput = None, **kwargs: Any) -> AsyncChainResponse:
        """Like `AsyncModel.chain`, awaited; the history grows by what the chain did."""
        response = self.model.chain(prompt, conversation_id=self.id, history=self.history, **kwargs)
        await response
        self.history = history_after(self.history, response._finished())
        return response


def check_growth(retry_max_tokens: int | None, max_tokens: int | None) -> None:
    """ValueError, before any call, for a retry limit that would not be larger than the first."""
    if retry_max_tokens is None:
        return
    if isinstance(retry_max_tokens, bool) or not isinstance(retry_max_tokens, int) or retry_max_tokens < 1:
        raise ValueError(f"retry_max_tokens must be a positive number of tokens, not {retry_max_tokens!r}")
    if max_tokens is not None and retry_max_tokens <= max_tokens:
        raise ValueError(
            f"retry_max_tokens ({retry_max_tokens}) must be larger than max_tokens ({max_tokens}): "
            "the retry of a cut-off answer needs a larger limit"
        )


def _made(
    cls: type[M], name: str, key: str | None, base_url: str | None, fallback: Any, fallback_on: Any, kw: Any
) -> M:
    from chainform.clients.registry import get_client

    client = get_client(name, key=key, base_url=base_url, **kw)
    plan = None
    if fallback or fallback_on is not None:  # a model without fallbacks has no plan to build
        plan = FallbackPlan.build(
            name, fallback or (), fallback_on, lambda entry: cls(get_client(entry), name=entry)
        )
    return cls(client, name=name, fallback=plan)


def get_model(
    name: str = "local",
    *,
    key: str | None = None,
    base_url: str | None = None,
    fallback: Sequence[str | Model] | None = None,
    fallback_on: Iterable[FallbackKind] | None = None,
    **kwargs: Any,
) -> Model:
    """A Model by name: "local", "openai/gpt-4.1-mini", "anthropic/…", "gemini/…", "ollama/…", aliases.

    `fallback`: model ids (or models made with get_model) a chain goes on with when this model
    fails with a provider error of a kind in `fallback_on` (default: rate limit, server error,
    timeout, connection; "output" adds a value still invalid after the re-asks, a truncated answer
    and a failed formatting call); see docs/production.md.
    """
    return _made(Model, name, key, base_url, fallback, fallback_on, kwargs)


def get_async_model(
    name: str = "local",
    *,
    key: str | None = None,
    base_url: str | None = None,
    fallback: Sequence[str | Model | AsyncModel] | None = None,
    fallback_on: Iterable[FallbackKind] | None = None,
    **kwargs: Any,
) -> AsyncModel:
    """An AsyncModel by name (same names and fallbacks as get_model)."""
    return _made(AsyncModel, name, key, base_url, fallback, fallback_on, kwargs)
