"""`--mcp` on prompts and `chainform tools`, against the real mcp-server-time over stdio."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from cli_helpers import Scripted

from chainform.testing import tool_call
from chainform.types import FunctionResultContent

pytest.importorskip("mcp_server_time")

TIME_SERVER = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])


def test_prompt_with_mcp_server_tools(run, scripted: Scripted) -> None:
    def answer(messages, options) -> str:
        result = [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)][-1]
        return json.dumps({"zone": result.result["timezone"]})

    client = scripted.script([tool_call("get_current_time", timezone="Asia/Tokyo"), answer])
    result = run("What time is it in Tokyo?", "--mcp", TIME_SERVER, "--schema", "zone", "--no-log")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"zone": "Asia/Tokyo"}
    assert [t.name for t in client.requests[0][1].tools or ()] == ["get_current_time", "convert_time"]


def test_tools_lists_an_mcp_servers_tools(run) -> None:
    listed = json.loads(run("tools", "--mcp", TIME_SERVER, "--json").output)
    tools = {t["name"]: t for t in listed[0]["tools"]}
    assert tools["convert_time"]["parameters"]["required"] == ["source_timezone", "time", "target_timezone"]
    table = run("tools", "--mcp", TIME_SERVER)
    assert "source_timezone: string" in table.output


def test_tools_reports_a_server_that_cannot_start(run) -> None:
    result = run("tools", "--mcp", "chainform-no-such-server --x")
    assert result.exit_code == 5
    assert "could not start MCP server" in result.output
