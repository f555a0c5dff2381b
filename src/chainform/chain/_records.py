"""What a chain returns: its usage summed over its calls (each a chain/_calls.py ModelCall), and the
result the response objects expose."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from chainform._lineage import AgentRun
from chainform.chain._approval import PendingCall
from chainform.chain._state import ModelCall
from chainform.documents import Conversion
from chainform.output import StrategyChoice
from chainform.types import Message, UsageDetails

_NOTHING = UsageDetails(cost=Decimal(0))  # the sum of no calls (sums make new objects)


class ChainUsage(UsageDetails):
    """Usage (and cost) summed over every call of a chain and of the subagents it called.

    `by_purpose` splits the chain's own calls (chain / retry / format); `by_agent` gives each
    subagent's share by agent name (nested subagents under their own names); `by_model` the chain's
    own calls by the model that made them (more than one when a fallback model answered).
    """

    by_purpose: dict[str, UsageDetails]
    by_agent: dict[str, UsageDetails]
    by_model: dict[str, UsageDetails]

    @classmethod
    def of(cls, calls: list[ModelCall], agent_runs: Sequence[AgentRun] = ()) -> ChainUsage:
        total = _NOTHING
        by_purpose: dict[str, UsageDetails] = {}
        by_model: dict[str, UsageDetails] = {}
        for call in calls:
            total = total + call.usage
            by_purpose[call.purpose] = by_purpose.get(call.purpose, _NOTHING) + call.usage
            if call.model is not None:
                by_model[call.model] = by_model.get(call.model, _NOTHING) + call.usage
        by_agent: dict[str, UsageDetails] = {}
        pending = list(agent_runs)
        while pending:
            run = pending.pop(0)
            for call in run.calls:
                total = total + call.usage
                by_agent[run.agent] = by_agent.get(run.agent, _NOTHING) + call.usage
            pending.extend(run.children)
        usage = cls(
            total.input_tokens,
            total.output_tokens,
            total.total_tokens,
            total.additional_counts,
            total.cost,
            total.cost_reason,
        )
        usage.by_purpose = by_purpose
        usage.by_agent = by_agent
        usage.by_model = by_model
        return usage

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["by_purpose"] = {k: v.to_dict() for k, v in self.by_purpose.items()}
        if self.by_agent:
            out["by_agent"] = {k: v.to_dict() for k, v in self.by_agent.items()}
        if len(self.by_model) > 1:
            out["by_model"] = {k: v.to_dict() for k, v in self.by_model.items()}
        return out


@dataclass
class ChainResult:
    """Everything a finished chain produced."""

    text: str
    data: Any = None
    value: Any = None
    has_value: bool = False
    calls: list[ModelCall] = field(default_factory=list)
    strategy: StrategyChoice | None = None
    format_context: str | None = None
    transcript: list[Message] = field(default_factory=list)
    conversation_id: str = ""
    chain_id: str = ""
    cut_off: bool = False
    ended_by: str | None = None  # the tool whose result ended the chain (stop_at_tools, cf.Final)
    prompt: Message | None = None
    agent_runs: list[AgentRun] = field(default_factory=list)  # subagents this chain called
    attachments: list[Conversion] = field(default_factory=list)  # how each attachment reached the model
    status: str = "done"  # "done", or "waiting": tool calls wait for approval (`pending`)
    pending: list[PendingCall] = field(default_factory=list)
