"""Tool calls that wait for a person: the chain ends as waiting, and a resume approves, denies or
changes the arguments, in process (ScriptedClient) and through the log."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import chainform as cf
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call

SENT: list[dict[str, str]] = []


def send_mail(to: str, body: str) -> str:
    "Send a mail."
    SENT.append({"to": to, "body": body})
    return f"sent to {to}"


def lookup(name: str) -> str:
    "Look an address up."
    return f"{name.lower()}@example.com"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SENT.clear()


def waiting_chain(client: ScriptedClient, **kwargs: object) -> cf.ChainResponse:
    chain = cf.Model(client).chain(
        "Mail Bob hello",
        tools=[lookup, send_mail],
        schema="sent bool",
        requires_approval=["send_mail"],
        **kwargs,
    )
    assert chain.status == "waiting"
    return chain


def script_until_approval() -> list[object]:
    return [
        [tool_call("lookup", name="Bob"), tool_call("send_mail", to="bob@example.com", body="hello")],
        '{"sent": true}',
    ]


def test_a_tool_that_needs_approval_ends_the_chain_as_waiting_and_is_not_run(home: Path) -> None:
    client = ScriptedClient(script_until_approval())
    chain = waiting_chain(client)
    [pending] = chain.pending
    assert (pending.tool, pending.arguments) == ("send_mail", {"to": "bob@example.com", "body": "hello"})
    assert SENT == [] and len(client.requests) == 1
    with pytest.raises(cf.ChainWaitingError, match="waits for approval of send_mail"):
        chain.value
    [row] = Store().chains(chain.chain_id)
    assert row.status == "waiting" and row.pending == [pending.to_dict()]
    [call] = Store().recent(None, chain_id=chain.chain_id)
    assert [r.name for r in call.tool_results] == ["lookup"]  # the other call of the turn ran


def test_approving_runs_the_tool_and_the_chain_ends_in_its_value(home: Path) -> None:
    client = ScriptedClient(script_until_approval())
    chain = waiting_chain(client)
    call_id = chain.pending[0].id
    resumed = cf.resume(
        chain.chain_id, tools=[lookup, send_mail], approvals={call_id: True}, model=cf.Model(client)
    )
    assert resumed.value == {"sent": True} and resumed.status == "done"
    assert SENT == [{"to": "bob@example.com", "body": "hello"}]
    assert len(client.requests) == 2  # the first call was not sent again
    sent_back = client.requests[1][0][-1]
    assert {r.call_id: r.result for r in sent_back.contents} == {
        chain.pending[0].id: "sent to bob@example.com",
        next(
            c.call_id for c in client.requests[1][0][-2].function_calls if c.name == "lookup"
        ): "bob@example.com",
    }
    assert Store().chains(chain.chain_id)[0].status == "done"


def test_approving_with_new_arguments_runs_the_tool_with_them(home: Path) -> None:
    client = ScriptedClient(script_until_approval())
    chain = waiting_chain(client)
    approvals = {chain.pending[0].id: cf.Approved({"to": "bob@example.com", "body": "Hello, Bob."})}
    resumed = cf.resume(
        chain.chain_id, tools=[lookup, send_mail], approvals=approvals, model=cf.Model(client)
    )
    assert resumed.value == {"sent": True}
    assert SENT == [{"to": "bob@example.com", "body": "Hello, Bob."}]


def test_a_denial_reaches_the_model_as_the_refused_result(home: Path) -> None:
    client = ScriptedClient([*script_until_approval()[:1], '{"sent": false}'])
    chain = waiting_chain(client)
    approvals = {chain.pending[0].id: cf.Denied("not on a Sunday")}
    resumed = cf.resume(
        chain.chain_id, tools=[lookup, send_mail], approvals=approvals, model=cf.Model(client)
    )
    assert resumed.value == {"sent": False} and SENT == []
    refused = next(r for r in client.requests[1][0][-1].contents if r.call_id == chain.pending[0].id)
    assert refused.error == "Denied by a person: not on a Sunday"


def test_a_tool_marked_itself_waits_and_a_partial_answer_keeps_waiting(home: Path) -> None:
    tool = cf.Tool.from_function(send_mail)
    tool.requires_approval = True
    client = ScriptedClient(
        [[tool_call("send_mail", to="a", body="1"), tool_call("send_mail", to="b", body="2")], "ok"]
    )
    chain = cf.Model(client).chain("Mail a and b", tools=[tool])
    assert chain.status == "waiting" and [p.arguments["to"] for p in chain.pending] == ["a", "b"]
    first, second = (p.id for p in chain.pending)
    again = cf.resume(chain.chain_id, tools=[tool], approvals={first: True}, model=cf.Model(client))
    assert again.status == "waiting" and [p.id for p in again.pending] == [second]
    assert SENT == [{"to": "a", "body": "1"}]
    done = cf.resume(chain.chain_id, tools=[tool], approvals={second: True}, model=cf.Model(client))
    assert done.text() == "ok" and [m["to"] for m in SENT] == ["a", "b"]  # a was not sent twice


def test_bad_approvals_are_refused_before_anything_runs(home: Path) -> None:
    client = ScriptedClient(script_until_approval())
    chain = waiting_chain(client)
    call_id = chain.pending[0].id
    tools = [lookup, send_mail]
    with pytest.raises(cf.ResumeError, match="no pending call 'nope'"):
        cf.resume(chain.chain_id, tools=tools, approvals={"nope": True}, model=cf.Model(client))
    with pytest.raises(cf.ResumeError, match="do not fit its schema"):
        cf.resume(
            chain.chain_id, tools=tools, approvals={call_id: cf.Approved({"to": 3})}, model=cf.Model(client)
        )
    with pytest.raises(cf.ResumeError, match=r"'send_mail' of chain .* missing"):
        cf.resume(chain.chain_id, tools=[lookup], approvals={call_id: True}, model=cf.Model(client))
    with pytest.raises(cf.ResumeError, match="no logged chain"):
        cf.resume("01jzzzzzzzzzzzzzzzzzzzzzzz", tools=tools)
    assert SENT == [] and len(client.requests) == 1
    assert Store().chains(chain.chain_id)[0].status == "waiting"  # unchanged


def test_a_spec_from_a_newer_version_or_edited_by_hand_is_refused_and_the_log_kept(home: Path) -> None:
    import sqlite3

    client = ScriptedClient(script_until_approval())
    chain = waiting_chain(client)
    approvals = {chain.pending[0].id: True}
    with sqlite3.connect(Store().path) as db:
        [spec] = db.execute("SELECT spec FROM chains WHERE id = ?", (chain.chain_id,)).fetchone()
    for edited, says in (('{"version": 99}', "newer chainform"), ('{"version": 1, "model": 3}', "malformed")):
        with sqlite3.connect(Store().path) as db:
            db.execute("UPDATE chains SET spec = ? WHERE id = ?", (edited, chain.chain_id))
            before = (
                db.execute("SELECT * FROM chains").fetchall(),
                db.execute("SELECT * FROM responses").fetchall(),
            )
        with pytest.raises(cf.SpecError, match=says):
            cf.resume(chain.chain_id, tools=[lookup, send_mail], approvals=approvals, model=cf.Model(client))
        with sqlite3.connect(Store().path) as db:
            after = (
                db.execute("SELECT * FROM chains").fetchall(),
                db.execute("SELECT * FROM responses").fetchall(),
            )
        assert after == before and SENT == [] and len(client.requests) == 1
    with sqlite3.connect(Store().path) as db:
        db.execute("UPDATE chains SET spec = ? WHERE id = ?", (spec, chain.chain_id))
    done = cf.resume(chain.chain_id, tools=[lookup, send_mail], approvals=approvals, model=cf.Model(client))
    assert (
        done.value == {"sent": True} and len(SENT) == 1
    )  # the lock was let go: it resumes once the log is put back


def test_two_resumes_at_once_never_both_continue(home: Path) -> None:
    gate, entered = threading.Event(), threading.Event()

    def slow_send(to: str, body: str) -> str:
        "Send a mail, slowly."
        entered.set()
        gate.wait(60)
        return send_mail(to, body)

    tool = cf.Tool.from_function(slow_send, name="send_mail")
    client = ScriptedClient(script_until_approval())
    chain = waiting_chain(client)
    approvals = {chain.pending[0].id: True}
    first = cf.resume(chain.chain_id, tools=[lookup, tool], approvals=approvals, model=cf.Model(client))
    assert entered.wait(60)
    with pytest.raises(cf.ResumeError, match="running in another process"):
        cf.resume(chain.chain_id, tools=[lookup, tool], approvals=approvals, model=cf.Model(client))
    gate.set()
    assert first.value == {"sent": True} and len(SENT) == 1
    # once done, a resume replays the log: the value again, nothing sent or run
    again = cf.resume(chain.chain_id, tools=[], model=cf.Model(client))
    assert again.value == {"sent": True} and len(SENT) == 1 and len(client.requests) == 2


def test_a_map_row_whose_chain_waits_is_reported_as_waiting(home: Path) -> None:
    client = ScriptedClient([tool_call("send_mail", to="bob", body="hi"), "sent"])
    [row] = cf.Model(client).map(
        ["Mail Bob"], tools=[send_mail], requires_approval=["send_mail"], concurrency=1
    )
    assert row.status == "waiting" and not row.ok and row.error.phase == "waiting"
    assert "chainform resume" in row.error.message and SENT == []
    [chain] = Store().unfinished_chains()
    assert chain.status == "waiting" and chain.id in row.error.message
    done = cf.resume(
        chain.id, tools=[send_mail], approvals={chain.pending[0]["id"]: True}, model=cf.Model(client)
    )
    assert done.text() == "sent" and len(SENT) == 1


def test_cf_resume_is_the_function_whatever_was_imported_first() -> None:
    import importlib

    importlib.import_module("chainform.durable")  # the CLI imports it: cf.resume stays the function
    assert callable(cf.resume) and callable(cf.aresume)


def test_a_resumed_chain_offers_the_same_hosted_tools(home: Path) -> None:
    profile = ScriptedClient([]).profile.replace(
        hosted_tools=frozenset({"web_search", "code_execution"}),
        hosted_with_functions=True,
        hosted_with_schema=True,
    )
    client = ScriptedClient(
        [tool_call("send_mail", to="bob@example.com", body="hi"), '{"sent": true}'], profile
    )
    hosted = (cf.WebSearch(max_uses=2, allowed_domains=["example.com"]), cf.CodeExecution())
    chain = cf.Model(client).chain(
        "Find Bob's address and mail him",
        tools=[*hosted, send_mail],
        schema="sent bool",
        requires_approval=["send_mail"],
    )
    assert chain.status == "waiting"
    resumed = cf.resume(
        chain.chain_id, tools=[send_mail], approvals={chain.pending[0].id: True}, model=cf.Model(client)
    )
    assert resumed.value == {"sent": True}
    assert [options.hosted_tools for _, options in client.requests] == [hosted, hosted]
