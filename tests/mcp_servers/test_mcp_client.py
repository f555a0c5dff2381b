"""MCPServer against real servers: mcp-server-time (PyPI) over stdio, the test server over HTTP/stdio."""

from __future__ import annotations

import json
import sys
import time

import pytest
from mcp_helpers import SERVER_SCRIPT, alive, child_pids

import chainform as cf
from chainform.mcp import MCPServer
from chainform.testing import ScriptedClient, tool_call
from chainform.types import FunctionResultContent, Message


def time_server(**options: object) -> MCPServer:
    return MCPServer.stdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], **options)


def last_result(messages: list[Message]) -> FunctionResultContent:
    return [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)][-1]


def test_chain_calls_mcp_server_time_and_ends_in_a_schema_valid_value() -> None:
    before = child_pids()
    answer_schema = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string"},
            "weekday": {"type": "string"},
            "hour": {"type": "integer"},
        },
        "required": ["timezone", "weekday", "hour"],
        "additionalProperties": False,
    }

    def answer(messages: list[Message], options: cf.ChatOptions) -> str:
        data = json.loads(last_result(messages).result_text())  # the server's structured result
        hour = int(data["datetime"][11:13])
        return json.dumps({"timezone": data["timezone"], "weekday": data["day_of_week"], "hour": hour})

    client = ScriptedClient([tool_call("time.get_current_time", timezone="Asia/Tokyo"), answer])
    chain = cf.Model(client).chain(
        "What time is it in Tokyo?", tools=[time_server(prefix="time")], schema=answer_schema, log=False
    )
    value = chain.value
    assert value["timezone"] == "Asia/Tokyo"
    assert value["weekday"] in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
    offered = [t.name for t in client.requests[0][1].tools or ()]
    assert offered == ["time_get_current_time", "time_convert_time"]  # dots renamed on the wire
    assert child_pids() <= before  # the chain closed the session and the server process with it


def test_include_exclude_and_session_shared_by_with() -> None:
    server = time_server(include=["get_current_time", "convert_time"], exclude=["convert_time"])
    with server:
        tools = server.tools()
        assert [t.name for t in tools] == ["get_current_time"]
        assert tools[0].parameters["required"] == ["timezone"]  # the server's schema, as given
        assert server.output_schema("get_current_time")["title"] == "TimeResult"
        client = ScriptedClient([tool_call("get_current_time", timezone="Mars/Olympus"), "no such zone"] * 2)
        model = cf.Model(client)
        for _ in range(2):  # two chains, one session: the server stays up between them
            chain = model.chain("time on Mars?", tools=[server], log=False)
            assert chain.text() == "no such zone"
            assert "Invalid timezone" in (last_result(client.requests[-1][0]).error or "")
            assert server._session is not None and server._session.alive
    assert server._session is None


def test_stdio_server_process_ends_with_the_session(tmp_path) -> None:
    pid_file = tmp_path / "pid"
    server = MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio", str(pid_file)])
    assert [t.name for t in server.tools()][:2] == ["add", "bad_shape"]
    pid = int(pid_file.read_text())
    assert alive(pid)
    server.close()
    assert not alive(pid)


def test_crash_is_a_tool_error_and_the_chain_goes_on(tmp_path) -> None:
    server = MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"], timeout=20)
    client = ScriptedClient(
        [tool_call("crash"), tool_call("add", a=2, b=3), lambda m, o: last_result(m).result_text()]
    )
    chain = cf.Model(client).chain("crash then add", tools=[server], log=False)
    assert json.loads(chain.text()) == {"sum": 5}  # restarted after the crash
    crash = last_result(client.requests[1][0])
    assert crash.error and "crash" in crash.error


def test_http_server_content_mapping_and_errors(http_server: str) -> None:
    server = MCPServer.http(http_server, headers={"X-Test": "hello"})
    with server:
        tools = {t.name: t for t in server.tools()}
        assert tools["add"].invoke({"a": 1, "b": 2}) == {"sum": 3}
        assert tools["whoami"].invoke({}) == "x-test=hello"
        text, picture = tools["picture"].invoke({})  # an image is a file for the chain to send on
        assert text == "a red dot:" and isinstance(picture, cf.Attachment)
        assert (picture.read(), picture.media_type(), picture.name) == (
            b"\x89PNG\r\n\x1a\n",
            "image/png",
            "image.png",
        )
        with pytest.raises(cf.ToolError, match="the database is down"):
            tools["fails"].invoke({})
        with pytest.raises(cf.ToolError, match=r"(?i)structured content"):
            tools["bad_shape"].invoke({})
        with MCPServer.http(http_server, timeout=1) as impatient:  # the calls above: no 1 s race
            slow = {t.name: t for t in impatient.tools()}["slow"]
            started = time.monotonic()
            with pytest.raises(cf.ToolError, match="slow"):
                slow.invoke({"seconds": 30})
            assert time.monotonic() - started < 25  # stopped by the timeout, not by the tool finishing
        with pytest.raises(cf.ToolArgumentError):
            tools["add"].invoke({"a": "one"})  # checked against the server's input schema first


def test_before_call_applies_to_mcp_tools(http_server: str) -> None:
    asked: list[str] = []

    def refuse(tool: object, call: cf.FunctionCallContent) -> bool:
        asked.append(call.name)
        return False

    client = ScriptedClient([tool_call("calc.add", a=1, b=1), "refused"])
    server = MCPServer.http(http_server, prefix="calc", include=["add"])
    chain = cf.Model(client).chain("1+1", tools=[server], before_call=refuse, log=False)
    assert chain.text() == "refused"
    assert asked == ["calc.add"]
    assert "Cancelled" in (last_result(client.requests[1][0]).error or "")


def test_unreachable_server_raises_a_tool_error() -> None:
    server = MCPServer.stdio("chainform-no-such-command-xyz")
    with pytest.raises(cf.ToolError, match="could not start MCP server"):
        cf.Model(ScriptedClient(["unused"])).chain("x", tools=[server], log=False).text()
