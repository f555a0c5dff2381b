"""A small MCP server for the client tests, built on the SDK's low-level Server.

    python mcp_test_server.py stdio
    python mcp_test_server.py http PORT

Tools: add (structured result matching its outputSchema), bad_shape (structured result that
breaks its outputSchema), slow (sleeps), crash (the process exits), picture (image content),
fails (isError), whoami (echoes the request's X-Test header when served over HTTP), big (a text
result of `size` characters).
"""

from __future__ import annotations

import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

NUMBERS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
SUM = {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}
EMPTY = {"type": "object", "properties": {}}

TOOLS = [
    types.Tool(name="add", description="a + b", input_schema=NUMBERS, output_schema=SUM),
    types.Tool(
        name="bad_shape", description="returns the wrong shape", input_schema=EMPTY, output_schema=SUM
    ),
    types.Tool(
        name="slow",
        description="sleeps",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
    ),
    types.Tool(name="crash", description="the server dies", input_schema=EMPTY),
    types.Tool(name="picture", description="an image", input_schema=EMPTY),
    types.Tool(name="fails", description="reports an error", input_schema=EMPTY),
    types.Tool(name="whoami", description="request header X-Test", input_schema=EMPTY),
    types.Tool(
        name="big",
        description="a long text",
        input_schema={"type": "object", "properties": {"size": {"type": "integer"}}},
    ),
]


def text(value: str) -> list[types.TextContent]:
    return [types.TextContent(type="text", text=value)]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "add":
        total = args["a"] + args["b"]
        return types.CallToolResult(content=text(str(total)), structured_content={"sum": total})
    if params.name == "bad_shape":
        return types.CallToolResult(content=text("oops"), structured_content={"total": "three"})
    if params.name == "slow":
        await anyio.sleep(float(args.get("seconds", 30)))
        return types.CallToolResult(content=text("woke up"))
    if params.name == "crash":
        os._exit(3)
    if params.name == "picture":
        return types.CallToolResult(
            content=[
                *text("a red dot:"),
                types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
            ]
        )
    if params.name == "fails":
        return types.CallToolResult(content=text("the database is down"), is_error=True)
    if params.name == "big":
        return types.CallToolResult(content=text("x" * int(args.get("size", 10))))
    if params.name == "whoami":
        request = ctx.request
        header = request.headers.get("x-test") if request is not None else None
        return types.CallToolResult(content=text(f"x-test={header}"))
    return types.CallToolResult(content=text(f"unknown tool {params.name}"), is_error=True)


server = Server("chainform-test", on_list_tools=list_tools, on_call_tool=call_tool)


async def run_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        if len(sys.argv) > 2:  # pid file: lets the tests check the process is gone after close
            with open(sys.argv[2], "w") as fh:
                fh.write(str(os.getpid()))
        anyio.run(run_stdio)
    else:
        import uvicorn

        uvicorn.run(
            server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning"
        )
