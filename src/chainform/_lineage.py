"""Which chain, and which of its tool calls, is running now: the link from a subagent to its parent.

Context variables rather than parameters because the link must cross the tool boundary (a tool is
called with its arguments only) and asyncio copies the context into every task a chain starts, so
parallel tool calls each see their own call.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AgentRun:
    """One subagent call made from a chain: its model calls and the subagent runs nested in it."""

    agent: str
    call_id: str | None
    calls: list[Any] = field(default_factory=list)  # ModelCall
    children: list[AgentRun] = field(default_factory=list)
    error: str | None = None


@dataclass
class Lineage:
    """The chain running in this context: ids for log links, depth for the recursion limit."""

    chain_id: str
    conversation_id: str
    depth: int = 0
    agent: str | None = None
    parent_chain_id: str | None = None
    parent_conversation_id: str | None = None
    parent_call_id: str | None = None
    children: list[AgentRun] = field(default_factory=list)


current_chain: ContextVar[Lineage | None] = ContextVar("chainform_chain", default=None)
current_tool_call: ContextVar[Any] = ContextVar("chainform_tool_call", default=None)  # FunctionCallContent
# set by an agent for the chain it is about to start: (agent name, depth)
starting_agent: ContextVar[tuple[str, int] | None] = ContextVar("chainform_agent", default=None)
