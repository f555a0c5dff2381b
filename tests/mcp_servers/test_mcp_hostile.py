"""Servers that are broken or hostile: malformed tools, endless listings, deep schemas, huge results."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import SERVER_SCRIPT, child_pids

import chainform as cf
from chainform.mcp import MCPServer

HOSTILE = str(Path(__file__).with_name("mcp_hostile_server.py"))


def hostile(mode: str, **options: object) -> MCPServer:
    return MCPServer.stdio(sys.executable, [HOSTILE, mode], connect_timeout=20, **options)


def test_a_malformed_tool_is_skipped_with_a_warning_and_the_rest_kept() -> None:
    server = hostile("bad_schema")
    try:
        with pytest.warns(UserWarning) as caught:
            tools = server.tools()
        assert [t.name for t in tools] == ["echo", "other"]
        messages = [str(w.message) for w in caught]
        assert any(
            "skipping tool 'broken'" in m and "bad_schema" in m and "inputSchema" in m for m in messages
        )
        assert any("skipping tool 'no_schema'" in m for m in messages)
        assert tools[1].invoke({"a": 1}) == "called other"  # the kept tools work
    finally:
        server.close()


def test_a_schema_nested_deeper_than_the_cap_is_skipped() -> None:
    server = hostile("nested")
    try:
        with pytest.warns(UserWarning, match=r"skipping tool 'nested': its inputSchema is nested over"):
            assert [t.name for t in server.tools()] == ["echo"]
    finally:
        server.close()


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("endless", "more than 5 pages"),
        ("many", "more than 1000 tools"),
        ("deep", "could not be read: Invalid JSON: recursion limit"),
    ],
)
def test_hostile_listings_end_fast_in_a_typed_error_naming_server_and_phase(mode: str, why: str) -> None:
    server = hostile(mode, max_pages=5)
    before = child_pids()
    started = time.monotonic()
    try:
        with pytest.raises(cf.MCPServerError, match=why) as info:
            server.tools()
        assert server._session is None and child_pids() <= before  # the server was stopped
    finally:
        server.close()
    assert info.value.phase == "list"
    assert mode in info.value.server and mode in str(info.value)
    assert time.monotonic() - started < 15  # not the 20 s connect timeout


def test_a_silent_listing_is_a_typed_timeout() -> None:
    server = hostile("silent")
    try:
        server._live()  # started and greeted within 20 s, however loaded the machine
        server.connect_timeout = 1  # what the listing then waits, for an answer that never comes
        with pytest.raises(
            cf.MCPServerError, match=r"failed to list its tools: no answer within 1 s"
        ) as info:
            server.tools()
    finally:
        server.close()
    assert info.value.phase == "list"


def test_a_server_that_never_answers_the_handshake_is_a_typed_connect_timeout() -> None:
    server = MCPServer.stdio(sys.executable, [HOSTILE, "mute"], connect_timeout=1)
    started = time.monotonic()
    with pytest.raises(
        cf.MCPServerError, match=r"could not start MCP server .*mute.*no answer within 1 s"
    ) as info:
        server.tools()
    assert info.value.phase == "connect" and time.monotonic() - started < 15


def test_a_server_that_cannot_start_is_a_connect_error() -> None:
    server = MCPServer.stdio(sys.executable, ["-c", "raise SystemExit(3)"])
    with pytest.raises(cf.MCPServerError, match="could not start MCP server") as info:
        server.tools()
    assert info.value.phase == "connect" and isinstance(info.value, cf.ToolError)


def test_results_are_cut_at_max_output_and_say_so() -> None:
    server = MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"], max_output=1000)
    with server:
        big = {t.name: t for t in server.tools()}["big"]
        text = big.invoke({"size": 2_000_000})
        assert text.startswith("x" * 1000) and len(text) < 1100
        assert text.endswith("[result truncated at 1000 of 2000000 characters]")
        assert big.invoke({"size": 1000}) == "x" * 1000  # at the cap: whole, no note
    default = MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"])
    assert default.max_output == 100_000
    with pytest.raises(ValueError, match="max_output must be a positive integer"):
        MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"], max_output=0)


def test_call_failures_name_the_server_and_the_call_phase() -> None:
    server = MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"], timeout=1)
    with server:
        slow = {t.name: t for t in server.tools()}["slow"]
        with pytest.raises(cf.MCPServerError, match="MCP tool 'slow'") as info:
            slow.invoke({"seconds": 30})
    assert info.value.phase == "call" and "mcp_test_server" in info.value.server
