"""Subagent calls in the log: each row links to the parent chain and tool call; `logs --tree` nests them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import chainform as cf
from chainform.cli import cli
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call
from chainform.types import FunctionResultContent, Message

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def last_result(messages: list[Message], _options: object) -> str:
    return [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)][-1].result_text()


def test_nested_subagents_are_logged_with_links_and_shown_as_a_tree() -> None:
    census = cf.Agent(cf.Model(ScriptedClient(["Rome had 2.8 million"])), name="census", description="Census")
    to_census = tool_call("census", task="Rome 2021")
    researcher = cf.Agent(
        cf.Model(ScriptedClient([to_census, last_result])),
        name="researcher",
        description="Research a question",
        tools=[census],
    )
    to_researcher = tool_call("researcher", task="How many in Rome?")
    parent = cf.Model(ScriptedClient([to_researcher, lambda m, o: "Answer: " + last_result(m, o)]))
    assert (
        parent.chain("How many lived in Rome?", tools=[researcher]).text() == "Answer: Rome had 2.8 million"
    )

    rows = list(reversed(Store().recent(None)))
    by_agent = {name: [r for r in rows if r.agent_name == name] for name in (None, "researcher", "census")}
    top, mid, leaf = by_agent[None], by_agent["researcher"], by_agent["census"]
    assert (len(top), len(mid), len(leaf)) == (2, 2, 1)
    assert all(r.parent_conversation_id is r.parent_chain_id is r.parent_tool_call_id is None for r in top)
    assert {(r.parent_conversation_id, r.parent_chain_id, r.parent_tool_call_id) for r in mid} == {
        (top[0].conversation_id, top[0].chain_id, to_researcher.call_id)
    }
    assert {(r.parent_conversation_id, r.parent_chain_id, r.parent_tool_call_id) for r in leaf} == {
        (mid[0].conversation_id, mid[0].chain_id, to_census.call_id)
    }
    assert len({top[0].conversation_id, mid[0].conversation_id, leaf[0].conversation_id}) == 3

    runner = CliRunner()
    printed = json.loads(runner.invoke(cli, ["logs", "-n", "0", "--json"], catch_exceptions=False).stdout)
    assert {(r["agent_name"], r["parent_tool_call_id"]) for r in printed} == {
        (None, None),
        ("researcher", to_researcher.call_id),
        ("census", to_census.call_id),
    }

    tree = runner.invoke(cli, ["logs", "--tree", "-n", "1"], catch_exceptions=False).stdout.splitlines()
    order = [
        f"conversation {top[0].conversation_id}",
        f"tool researcher [{to_researcher.call_id}]",
        f"conversation {mid[0].conversation_id} · agent researcher",
        f"tool census [{to_census.call_id}]",
        f"conversation {leaf[0].conversation_id} · agent census",
        "Rome had 2.8 million",
        "Answer: Rome had 2.8 million",
    ]
    found = [next(i for i, line in enumerate(tree) if want in line) for want in order]
    assert found == sorted(found), tree
    indent = {want: len(tree[i]) - len(tree[i].lstrip()) for want, i in zip(order, found, strict=True)}
    assert indent[order[0]] < indent[order[2]] < indent[order[4]]
    # the parent's answer is back at the top level, not inside the subagents
    assert indent[order[6]] < indent[order[2]]

    only_mid = runner.invoke(cli, ["logs", "--tree", "--cid", mid[0].conversation_id], catch_exceptions=False)
    assert only_mid.stdout.startswith(f"conversation {mid[0].conversation_id} · agent researcher")
    assert top[0].conversation_id not in only_mid.stdout and leaf[0].conversation_id in only_mid.stdout
