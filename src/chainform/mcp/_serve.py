"""`chainform mcp serve`: chainform tools offered to any MCP client over stdio.

The schemas are the ones `get_schema` builds (the same a chain sends to a model), and a call goes
through `Tool.ainvoke`, so arguments are validated and converted exactly as in a chain.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chainform.tools import Tool
from chainform.types import FunctionResultContent

if TYPE_CHECKING:
    import mcp_types


def _result(value: Any) -> mcp_types.CallToolResult:
    import mcp_types as types

    text = FunctionResultContent("", result=value).result_text()
    structured = None
    if not isinstance(value, str):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        structured = data if isinstance(data, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def build_server(
    tools: Sequence[Tool], name: str = "chainform", notes: Mapping[str, str] | None = None
) -> Any:
    """A low-level `mcp` Server whose tools are `tools` (calls validated like a chain's); `notes`
    (by tool name) are added to descriptions, e.g. the python tool's isolation in force."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from chainform._version import __version__

    by_name = {t.name: t for t in tools}
    notes = notes or {}
    listing = [
        types.Tool(
            name=t.name,
            description=" ".join(filter(None, (t.description, notes.get(t.name)))) or None,
            input_schema=t.parameters,
        )
        for t in tools
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            message = f"Unknown tool {params.name!r}. Available tools: {', '.join(sorted(by_name))}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
        try:
            value = await tool.ainvoke(dict(params.arguments or {}))
        except Exception as exc:  # the client's model reads the error, as in a chain
            text = str(exc) or type(exc).__name__
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        return _result(value)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(
    tools: Sequence[Tool], name: str = "chainform", notes: Mapping[str, str] | None = None
) -> None:
    """Serve `tools` on stdin/stdout until the client disconnects."""
    from mcp.server.stdio import stdio_server

    server = build_server(tools, name, notes)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
