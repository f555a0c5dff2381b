"""RunState: every fact of one run of a chain, in one typed value the engine passes along.

The spec (chain/_spec.py) is what a chain is asked and never changes; the state is what happened
so far: the transcript, the calls made, the strategy chosen and why, the model answering now among
the fallbacks (with the refusals it taught), the money spent, the chain's lineage (ids, depth,
its parent, the subagents it ran), the tool calls waiting for a person, the conversation's name
in the log, and how the run ended. The engine (chain/_engine.py) reads and writes it explicitly;
no context variable or module global holds any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainform._lineage import Lineage, Parent
from chainform.chain._approval import Approval, Approved, Denied, PendingCall, decided
from chainform.chain._fallback import Candidate, FallbackPlan, Route
from chainform.chain._spec import ChainSpec
from chainform.errors import Attempt
from chainform.output._select import Refusals, StrategyChoice
from chainform.pricing import Meter
from chainform.store import ChainStatus
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FunctionResultContent,
    Message,
    ModelProfile,
    UsageDetails,
)

Purpose = str  # "chain" | "retry" | "format"


@dataclass
class ModelCall:
    """One model call of a chain, in order; `purpose` is "chain", "retry" or "format"."""

    purpose: Purpose
    messages: list[Message]
    options: ChatOptions
    response: ChatResponse | None
    duration_ms: float
    error: str | None = None
    strategy: str | None = None
    response_id: str | None = None
    parsed: Any = None
    tool_results: list[FunctionResultContent] = field(default_factory=list)
    format_context: str | None = None
    model: str | None = None  # the model that made the call (a fallback's name when one answered)
    failed: str | None = None  # the type of the error the call raised (None: it returned)
    failure: dict[str, Any] | None = None  # what it raised, as the log keeps it (chain/_journal.py)
    priced: UsageDetails | None = None  # the usage with its cost, once the engine priced the call
    ended_by: str | None = None  # the tool whose result ended the chain (stop_at_tools, cf.Final)

    @property
    def finish_reason(self) -> str | None:
        """Why the call stopped ("stop", "length", "tool_calls", ...; None when it raised or the
        provider did not say)."""
        reason = self.response.finish_reason if self.response else None
        return str(reason) if reason is not None else None

    @property
    def text(self) -> str:
        return self.response.text if self.response else ""

    @property
    def usage(self) -> UsageDetails:
        """Tokens of this call and (`.cost`) what it cost."""
        if self.priced is not None:
            return self.priced
        return (self.response.usage_details if self.response else None) or UsageDetails()


@dataclass
class RunState:
    """Everything one run of a chain has done and holds, beside its immutable ChainSpec.

    `candidate` is the model answering now (its client, profile, name and refusals); a fallback
    replaces it in one step with the next model of `route`, the chain's walk along its fallbacks.
    """

    lineage: Lineage  # chain and conversation ids, depth, parent links, subagent runs
    candidate: Candidate
    meter: Meter  # prices each call and holds the chain to max_cost
    options: ChatOptions  # the spec's options as sent: the cache key set, max tokens grown once
    route: Route | None = None  # None: a model without fallbacks
    conversation_name: str | None = None  # how the log names the conversation (a map row's)
    approvals: dict[str, Approved | Denied] = field(default_factory=dict)  # a person's, by call id
    transcript: list[Message] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    choice: StrategyChoice | None = None  # the strategy the chain answers with, and why
    format_context: str | None = None  # what a formatting call was given of the transcript
    attempts: list[Attempt] = field(default_factory=list)  # failed answers, with what was said
    answer_from: int | None = None  # transcript index of the current model's failed answers
    finals: set[str] = field(default_factory=set)  # call ids whose tool returned cf.Final
    pending: list[PendingCall] = field(default_factory=list)  # tool calls waiting for approval
    status: ChainStatus = "running"
    error: str | None = None  # why it failed, as the log keeps it

    @classmethod
    def start(
        cls,
        spec: ChainSpec,
        first: Candidate,
        fallback: FallbackPlan | None,
        *,
        chain_id: str,
        conversation_id: str,
        parent: Parent | None = None,
        conversation_name: str | None = None,
        approvals: dict[str, Approval] | None = None,
    ) -> RunState:
        """The state of a new run of `spec` on `first` (then `fallback`'s models): its transcript
        the spec's system prompt, history and prompt; nothing spent; a subagent's linked to `parent`."""
        system = [Message.system(spec.system)] if spec.system else []
        cache_key = spec.options.cache_key or conversation_id  # one conversation's requests share a cache
        return cls(
            parent.lineage(chain_id, conversation_id) if parent else Lineage(chain_id, conversation_id),
            first,
            Meter(first.name, spec.limits.max_cost),
            spec.options.replace(cache_key=cache_key),
            Route(first, fallback) if fallback is not None else None,
            conversation_name,
            {k: decided(v) for k, v in (approvals or {}).items()},
            transcript=[*system, *spec.history, *([spec.prompt] if spec.prompt else [])],
        )

    @property
    def profile(self) -> ModelProfile:
        return self.candidate.profile

    @property
    def model_name(self) -> str:
        return self.candidate.name

    @property
    def refusals(self) -> Refusals:
        """What the model answering now refused (remembered for the model, across chains)."""
        return self.candidate.refusals

    @property
    def chain_id(self) -> str:
        return self.lineage.chain_id

    @property
    def conversation_id(self) -> str:
        return self.lineage.conversation_id

    def turns_left(self, chain_limit: int) -> int:
        """Chain turns left; a call that raised (e.g. before a fallback model took over) takes none."""
        return chain_limit - sum(1 for c in self.calls if c.purpose == "chain" and not c.failed)
