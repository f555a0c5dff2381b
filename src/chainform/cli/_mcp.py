"""`--mcp` (an MCP server's tools for a prompt or a listing) and `chainform mcp serve`."""

from __future__ import annotations

import shlex
from typing import Any

import click

MCP_HELP = "MCP server: a command ('python -m server --flag') or an https://…/mcp URL; repeatable."


def mcp_servers(values: tuple[str, ...]) -> list[Any]:
    """One MCPServer per `--mcp` value (URLs speak streamable HTTP, anything else is a command)."""
    if not values:
        return []
    try:
        from chainform.mcp import MCPServer
    except ImportError as exc:
        raise click.UsageError(f"--mcp needs the mcp SDK: pip install 'chainform[mcp]' ({exc})") from None
    servers = []
    for value in values:
        if value.startswith(("http://", "https://")):
            servers.append(MCPServer.http(value))
            continue
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise click.BadParameter(f"{value!r}: {exc}", param_hint="--mcp") from None
        if not argv:
            raise click.BadParameter("empty command", param_hint="--mcp")
        servers.append(MCPServer.stdio(argv[0], argv[1:]))
    return servers


@click.group(name="mcp")
def mcp_group() -> None:
    """Model Context Protocol: serve your tools to MCP clients (`--mcp` uses MCP servers' tools)."""


@mcp_group.command(name="serve")
@click.option(
    "--functions", multiple=True, help="Python file or code whose public functions become tools; repeatable."
)
@click.option(
    "-T", "--tool", "tool_names", multiple=True, help="Built-in or plugin tool by name; repeatable."
)
@click.option("--name", default="chainform", show_default=True, help="Server name shown to clients.")
def serve_command(functions: tuple[str, ...], tool_names: tuple[str, ...], name: str) -> None:
    """Serve Python functions (and -T tools) as an MCP server on stdin/stdout.

    \b
    chainform mcp serve --functions tools.py -T python
    """
    import anyio

    from chainform.cli._tools import load_functions, resolve_tools
    from chainform.mcp._serve import serve_stdio

    tools = resolve_tools(tool_names) + [t for code in functions for t in load_functions(code)]
    if not tools:
        raise click.UsageError("nothing to serve: give --functions and/or -T")
    anyio.run(serve_stdio, tools, name)
