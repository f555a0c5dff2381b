"""`--mcp` (an MCP server's tools for a prompt or a listing) and `chainform mcp serve`."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
MCP_HELP = "MCP server: a command ('python -m server --flag') or an https://…/mcp URL; repeatable."


def python_isolation_option(help: str) -> Callable[[F], F]:
    """`--python-isolation`, shared by prompts and `mcp serve`."""
    return click.option(
        "--python-isolation",
        type=click.Choice(["auto", "strict", "process"]),
        default="auto",
        show_default=True,
        help=help,
    )


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
@python_isolation_option("How the python tool confines code; its description says the level in force.")
@click.option("--name", default="chainform", show_default=True, help="Server name shown to clients.")
def serve_command(
    functions: tuple[str, ...], tool_names: tuple[str, ...], python_isolation: str, name: str
) -> None:
    """Serve Python functions (and -T tools) as an MCP server on stdin/stdout.

    \b
    chainform mcp serve --functions tools.py -T python
    """
    import anyio

    from chainform.cli._tools import load_functions, resolve_tools
    from chainform.mcp._serve import serve_stdio

    tools = resolve_tools(tool_names, python_isolation=python_isolation)
    tools += [t for code in functions for t in load_functions(code)]
    if not tools:
        raise click.UsageError("nothing to serve: give --functions and/or -T")
    notes = {
        t.name: _isolation_note(t, python_isolation) for t in tools if _isolation_note(t, python_isolation)
    }
    anyio.run(serve_stdio, tools, name, notes)


def _isolation_note(tool: Any, requested: str) -> str:
    """What a client's model reads about the python tool's confinement (the level this machine gives)."""
    from chainform.tools import PythonTool

    if not isinstance(tool, PythonTool):
        return ""
    level = tool.isolation_in_force()
    if requested == "strict" and level != "strict":
        return f"Isolation: strict was asked for but this machine gives {level}; calls are refused."
    return f"Isolation in force: {level}."
