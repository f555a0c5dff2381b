"""A subagent's chain resumed on its own keeps its link to the chain and tool call that started it."""

from __future__ import annotations

from pathlib import Path

import chainform as cf
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call


def note(text: str) -> str:
    "Write a note."
    return f"noted {text}"


def test_a_resumed_subagent_chain_keeps_its_parent_link(home: Path) -> None:
    helper_client = ScriptedClient(
        [tool_call("note", text="Rome"), RuntimeError("the helper's provider fell over")]
    )
    helper = cf.Agent(cf.Model(helper_client), name="helper", description="Take notes", tools=[note])
    to_helper = tool_call("helper", task="note Rome")
    parent = cf.Model(ScriptedClient([to_helper, "done"]))
    assert parent.chain("Note Rome", tools=[helper]).text() == "done"  # the helper's error is its tool result

    with Store() as store:
        first = min((r for r in store.recent(None) if r.agent_name == "helper"), key=lambda r: r.seq)
        top = next(r for r in store.recent(None) if r.agent_name is None)
    link = (top.conversation_id, top.chain_id, to_helper.call_id, "helper")
    assert (
        first.parent_conversation_id,
        first.parent_chain_id,
        first.parent_tool_call_id,
        first.agent_name,
    ) == link

    with cf.Model(ScriptedClient(["Rome noted"])) as model:
        assert cf.resume(first.chain_id, tools=[note], model=model).text() == "Rome noted"
    with Store() as store:
        calls = [r for r in store.recent(None, chain_id=first.chain_id) if r.failure is None]
    assert len(calls) == 2  # the logged call, and the one the resume sent
    assert {
        (r.parent_conversation_id, r.parent_chain_id, r.parent_tool_call_id, r.agent_name) for r in calls
    } == {link}
