"""The link from a subagent to its parent, passed explicitly: no context variable carries it.

The engine keeps a chain's `Lineage` in its run state. A tool that asks for it (`takes_context`,
as an Agent used as a tool does) is given a `RunContext` beside its arguments: the chain calling
it and the id of that very call, so parallel calls each know their own. The JSON schema the model
reads never shows it. The subagent's chain is started with a `Parent` built from it, and its
records link back to the chain and tool call that started it.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Parent:
    """What starts a subagent's chain: the agent, how deep it nests, and the chain and tool call
    it runs for (`call_id` None: the tool was called without a chain's context)."""

    agent: str
    depth: int
    chain_id: str | None = None
    conversation_id: str | None = None
    call_id: str | None = None

    def lineage(self, chain_id: str, conversation_id: str) -> Lineage:
        """The lineage of the chain this starts."""
        return Lineage(
            chain_id,
            conversation_id,
            depth=self.depth,
            agent=self.agent,
            parent_chain_id=self.chain_id,
            parent_conversation_id=self.conversation_id,
            parent_call_id=self.call_id,
        )


@dataclass
class Lineage:
    """A chain's place among chains: ids for log links, depth for the recursion limit, and the
    subagent runs it made (`children`)."""

    chain_id: str
    conversation_id: str
    depth: int = 0
    agent: str | None = None
    parent_chain_id: str | None = None
    parent_conversation_id: str | None = None
    parent_call_id: str | None = None
    children: list[AgentRun] = field(default_factory=list)


@dataclass(frozen=True)
class RunContext:
    """What a tool that asks for it (`takes_context`) is given beside its arguments: the chain
    calling it and the id of this call."""

    chain: Lineage
    call_id: str

    def parent(self, agent: str) -> Parent:
        """The link for a chain `agent` starts from this call: one level deeper."""
        chain = self.chain
        return Parent(agent, chain.depth + 1, chain.chain_id, chain.conversation_id, self.call_id)
