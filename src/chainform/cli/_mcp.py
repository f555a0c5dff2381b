"""`chainform mcp serve`: tools found by `_tools` offered over MCP (the `--mcp` option lives in `_tools`)."""

from __future__ import annotations

from typing import Any

import click

from chainform.cli._tools import python_isolation_option


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

    from chainform.cli._tools import cli_tools
    from chainform.mcp._serve import serve_stdio

    tools = cli_tools(tool_names, functions, python_isolation=python_isolation)
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
