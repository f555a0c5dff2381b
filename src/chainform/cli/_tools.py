"""Finding tools for `-T`, `--functions` and `--mcp`, and the `chainform tools` listing.

Tools come from three places: the built-ins, installed plugins (entry point group
`chainform.tools`, each entry a Tool, a function, or a list of them) and Python code given with
`--functions` (every public function it defines becomes a tool).
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import os
import shlex
import sys
import types
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from chainform.cli._options import F, choice_option
from chainform.cli._output import echo_json, shorten

if TYPE_CHECKING:
    from chainform.tools import Tool

ENTRY_POINT_GROUP = "chainform.tools"
_snippets = itertools.count(1)
MCP_HELP = "MCP server: a command ('python -m server --flag') or an https://…/mcp URL; repeatable."


def python_isolation_option(help: str) -> Callable[[F], F]:
    """`--python-isolation`, shared by prompts and `mcp serve`."""
    return choice_option(
        "--python-isolation", choices=("auto", "strict", "process"), default="auto", help=help
    )


ISOLATION_HELP = (
    "How the python tool confines code: every OS guard available, all of them or refuse, "
    "or a plain process (see `chainform tools`)."
)


def chain_tool_options(command: F) -> F:
    """A chain's tools: `-T`, `--python-isolation`, `--functions`, `--mcp` (prompt and resume)."""
    command = click.option("--mcp", "mcp_values", multiple=True, help=MCP_HELP)(command)
    command = click.option(
        "--functions",
        multiple=True,
        help="Python file or code whose public functions become tools; repeatable.",
    )(command)
    command = python_isolation_option(ISOLATION_HELP)(command)
    return click.option(
        "-T", "--tool", "tool_names", multiple=True, help="Tool by name (see `chainform tools`); repeatable."
    )(command)


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


@dataclass
class ToolSource:
    """Tools found under one name, where they came from, or why loading them failed."""

    name: str
    origin: str  # "builtin" | "plugin <distribution>"
    tools: list[Tool]
    error: str | None = None


def _as_tools(obj: Any) -> list[Tool]:
    from chainform.tools import Tool, Toolbox

    if isinstance(obj, Toolbox):
        return obj.tools()
    if isinstance(obj, list | tuple):
        return [t for item in obj for t in _as_tools(item)]
    return [Tool.from_function(obj)]


def plugin_sources() -> list[ToolSource]:
    """Every tool an installed plugin registers; a broken plugin is reported, not fatal."""
    from importlib.metadata import entry_points

    sources = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        origin = f"plugin {ep.dist.name}" if ep.dist is not None else "plugin"
        try:
            sources.append(ToolSource(ep.name, origin, _as_tools(ep.load())))
        except Exception as exc:
            sources.append(ToolSource(ep.name, origin, [], f"{type(exc).__name__}: {exc}"))
    return sources


def all_sources() -> list[ToolSource]:
    from chainform.cli._builtins import builtin_tools

    builtins = [ToolSource(name, "builtin", [tool]) for name, tool in builtin_tools().items()]
    return builtins + plugin_sources()


def mcp_sources(values: tuple[str, ...]) -> list[ToolSource]:
    """The tools of each `--mcp` server (listed, then the session is closed)."""
    sources = []
    for value, server in zip(values, mcp_servers(values), strict=True):
        try:
            sources.append(ToolSource(value, "mcp", server.tools()))
        except Exception as exc:
            sources.append(ToolSource(value, "mcp", [], str(exc)))
        finally:
            server.close()
    return sources


def cli_tools(
    names: tuple[str, ...], functions: tuple[str, ...], *, python_isolation: str = "auto"
) -> list[Tool]:
    """The tools of `-T` and `--functions`: every public function of each `--functions` file or code,
    then the `-T` tools. A `-T` name may also be one of those functions (it is offered anyway)."""
    loaded = [t for code in functions for t in load_functions(code)]
    offered = {t.name for t in loaded}
    return resolve_tools(names, python_isolation=python_isolation, offered=offered) + loaded


def resolve_tools(
    names: tuple[str, ...], *, python_isolation: str = "auto", offered: Collection[str] = ()
) -> list[Tool]:
    """The tools named by `-T` options: a source name, or the name of one tool a plugin provides.
    A python tool among them runs under `python_isolation`. A name in `offered` (a
    `--functions` tool, which the caller offers itself) is accepted and adds nothing."""
    if not names:
        return []
    sources = all_sources()
    names = tuple(n for n in names if n not in offered)
    chosen: list[Tool] = []
    for name in names:
        found = [s for s in sources if s.name == name] or [
            ToolSource(s.name, s.origin, [t for t in s.tools if t.name == name], s.error)
            for s in sources
            if any(t.name == name for t in s.tools)
        ]
        if not found:
            known = sorted(
                {s.name for s in sources} | {t.name for s in sources for t in s.tools} | set(offered)
            )
            raise click.BadParameter(f"unknown tool {name!r}; available: {', '.join(known)}", param_hint="-T")
        source = found[0]
        if source.error:
            raise click.BadParameter(f"tool {name!r} ({source.origin}) failed to load: {source.error}")
        chosen += [t for t in source.tools if all(t is not c for c in chosen)]
    from chainform.tools import PythonTool

    return [
        t.with_limits(isolation=python_isolation)
        if isinstance(t, PythonTool) and t.isolation != python_isolation
        else t
        for t in chosen
    ]


def _isolation(tool: Tool) -> str | None:
    """For the python tool, the isolation level this machine gives it (runs an empty cell)."""
    from chainform.tools import PythonTool

    return tool.isolation_in_force() if isinstance(tool, PythonTool) else None


_functions_files: set[str] = set()


def _guard_exit(filename: str) -> None:
    """Make `os._exit` called from `--functions` code an error instead of the silent end of the
    CLI (exit status 0, nothing said, the log unwritten): while loading, a usage error; in a tool
    call, a tool error the model reads. Other callers (a forked child, a library) are untouched."""
    _functions_files.add(filename)
    if getattr(os._exit, "_chainform_guard", False):
        return
    real_exit: Callable[[int], NoReturn] = os._exit
    cli_pid = os.getpid()

    def guarded_exit(status: int) -> NoReturn:
        frame = sys._getframe(1)
        while frame is not None and os.getpid() == cli_pid:
            if frame.f_code.co_filename in _functions_files:
                from chainform.errors import ToolError

                raise ToolError(
                    f"the --functions code called os._exit({status}); chainform does not let it end the CLI"
                )
            frame = frame.f_back  # type: ignore[assignment]
        real_exit(status)

    guarded_exit._chainform_guard = True  # type: ignore[attr-defined]
    os._exit = guarded_exit


def load_functions(value: str) -> list[Tool]:
    """Tools from a `.py` file or a code string: every public function defined there."""
    from chainform.errors import ToolError
    from chainform.tools import Tool

    path = Path(value).expanduser()
    if value.endswith(".py") and "\n" not in value:
        if not path.is_file():
            raise click.BadParameter(f"file not found: {value}", param_hint="--functions")
        try:
            code, filename = path.read_text(encoding="utf-8"), str(path.resolve())
        except UnicodeDecodeError as exc:
            raise click.BadParameter(
                f"{value} is not UTF-8 text (byte {exc.start})", param_hint="--functions"
            ) from None
        except OSError as exc:
            raise click.BadParameter(
                f"cannot read {value}: {exc.strerror}", param_hint="--functions"
            ) from None
    else:
        code, filename = value, f"<chainform --functions #{next(_snippets)}>"
        # Registered so the tools' parameter comments can be read back as descriptions.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    module = types.ModuleType(f"_chainform_functions_{next(_snippets)}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    _guard_exit(filename)
    try:
        exec(compile(code, filename, "exec"), module.__dict__)
    except SyntaxError as exc:
        raise click.BadParameter(
            f"syntax error at line {exc.lineno}: {exc.msg}", param_hint="--functions"
        ) from None
    except (Exception, SystemExit) as exc:  # exit() while loading is not a way to end the CLI
        raise click.BadParameter(
            f"the code raised {type(exc).__name__}: {exc}", param_hint="--functions"
        ) from None
    functions = [
        obj
        for name, obj in vars(module).items()
        if inspect.isfunction(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
    ]
    if not functions:
        raise click.BadParameter("the code defines no public function", param_hint="--functions")
    try:
        return [Tool.from_function(fn) for fn in functions]
    except ToolError as exc:
        raise click.BadParameter(str(exc), param_hint="--functions") from None


@click.command(name="tools")
@click.option(
    "--json", "as_json", is_flag=True, help="Output names, descriptions and parameter schemas as JSON."
)
@click.option("--mcp", "mcp_values", multiple=True, help=MCP_HELP + " Lists its tools instead.")
@click.option(
    "--functions",
    multiple=True,
    help="A Python file or code: list the tools its public functions become instead; repeatable.",
)
def tools_command(as_json: bool, mcp_values: tuple[str, ...], functions: tuple[str, ...]) -> None:
    """List the tools -T can use: built-ins and installed plugins (or an MCP server's, with --mcp;
    your own functions', with --functions)."""
    sources = [
        ToolSource(value if value.endswith(".py") else "code", "functions", load_functions(value))
        for value in functions
    ]
    if mcp_values:
        sources += mcp_sources(mcp_values)
    if not (functions or mcp_values):
        sources = all_sources()
    if as_json:
        echo_json(
            [
                {
                    "source": s.name,
                    "origin": s.origin,
                    "error": s.error,
                    "tools": [
                        {"name": t.name, "description": t.description, "parameters": t.parameters}
                        | ({"isolation": level} if (level := _isolation(t)) else {})
                        for t in s.tools
                    ],
                }
                for s in sources
            ]
        )
    else:
        _print_table(sources)
    if mcp_values and any(s.error for s in sources):
        from chainform.cli._exit import ExitCode, exit_with

        raise exit_with(ExitCode.CHAIN)


def _parameters(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", ()))
    return ", ".join(
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any') if isinstance(spec, dict) else 'any'}"
        for name, spec in props.items()
    )


def _print_table(sources: list[ToolSource]) -> None:
    from rich.table import Table
    from rich.text import Text

    from chainform.cli._output import console, untrusted

    def cell(text: str, style: str = "") -> Text:  # an MCP server names and describes its tools
        return Text(untrusted(text), style=style)

    table = Table("name", "origin", "parameters", "description", box=None, pad_edge=False)
    for source in sources:
        if source.error:
            table.add_row(
                cell(source.name), cell(source.origin), "", cell(f"failed to load: {source.error}", "red")
            )
        for tool in source.tools:
            description = cell(shorten(tool.description, 80))
            level = _isolation(tool)
            if level:
                description.append(f"\nisolation: {level}", style="bold" if level == "strict" else "yellow")
            table.add_row(cell(tool.name), cell(source.origin), cell(_parameters(tool)), description)
    console().print(table)
