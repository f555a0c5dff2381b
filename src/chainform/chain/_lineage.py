"""A chain run as the current one in its context: the lineage that links subagents to it, and
(when tracing is on, chainform.instrument) its span."""

from __future__ import annotations

from chainform import _lineage, _trace
from chainform.chain._engine import ChainRun
from chainform.chain._records import ChainResult
from chainform.errors import ChainformError


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
        with _trace.chain(run, agent[0] if agent else None):
            result = await run.run()
    except ChainformError as exc:
        exc.agent_runs = lineage.children
        raise
    finally:
        _lineage.current_chain.reset(token)
        _lineage.starting_agent.reset(starting)
    result.agent_runs = lineage.children
    return result
