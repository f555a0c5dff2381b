"""`MCPServer`: an MCP server's tools as chainform tools, through the official `mcp` SDK."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chainform.errors import MCPServerError, SchemaError, ToolDefinitionError
from chainform.mcp._content import tool_result
from chainform.mcp._listing import MAX_PAGES, MAX_TOOLS, ListingLimitError, list_tools
from chainform.mcp._session import Session, TransportFault
from chainform.tools import Tool

_SEPARATORS = "._-:"


class MCPServer:
    """An MCP server whose tools a chain (or agent) may call: ``tools=[MCPServer.stdio(...)]``.

    The session opens when the tools are first needed and closes when the chain that opened it
    ends, or when a ``with`` / ``async with`` block around the server ends (then several chains
    share one session). A tool call that fails (server error, crash, timeout) is a tool error
    the model reads; the chain goes on. Failures raise `MCPServerError`, naming the server and the
    phase (connect, list, call). Results longer than `max_output` characters are cut (and say so);
    a listing is capped at `max_pages` pages and `max_tools` tools.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        name: str,
        prefix: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        max_output: int = 100_000,
        max_tools: int = MAX_TOOLS,
        max_pages: int = MAX_PAGES,
    ) -> None:
        for label, limit in (("max_output", max_output), ("max_tools", max_tools), ("max_pages", max_pages)):
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"{label} must be a positive integer, not {limit!r}")
        self._connect = connect
        self.name = name
        self.prefix = prefix
        self.include = set(include) if include is not None else None
        self.exclude = set(exclude)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_output = max_output
        self.max_tools = max_tools
        self.max_pages = max_pages
        self._session: Session | None = None
        self._tools: list[Tool] | None = None
        self._output_schemas: dict[str, dict[str, Any]] = {}
        self._users = 0
        self._lock = threading.Lock()
        weakref.finalize(self, _close_quietly, self.__dict__)

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as a child process speaking MCP on stdin/stdout.

        The child gets the SDK's minimal environment (no API keys) plus `env`.
        """
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=command, args=list(args), env=dict(env or {}) or None, cwd=cwd)
        name = " ".join([os.path.basename(command), *args])[:80]
        return cls(
            lambda **kw: Client(stdio_client(params, errlog=_errlog()), client_info=_info(), **kw),
            name=name,
            **options,
        )

    @classmethod
    def http(cls, url: str, headers: Mapping[str, str] | None = None, **options: Any) -> MCPServer:
        """A server reached over streamable HTTP; `headers` (e.g. Authorization) go with every request."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        def connect(**kw: Any) -> Any:
            http = httpx2.AsyncClient(headers=dict(headers or {}), timeout=httpx2.Timeout(30.0, read=300.0))
            return Client(streamable_http_client(url, http_client=http), client_info=_info(), **kw)

        return cls(connect, name=url.split("?")[0], **options)

    def __repr__(self) -> str:
        state = "open" if self._session is not None else "closed"
        return f"<MCPServer {self.name!r} {state}>"

    # -- lifecycle ------------------------------------------------------------------------------

    def _open(self) -> Session:
        if self._session is not None and not self._session.alive:
            self._session.close()  # crashed: start it again for the next call
            self._session = None
        if self._session is None:
            try:
                self._session = Session(self._connect, self.connect_timeout)
            except Exception as exc:
                why = f"no answer within {self.connect_timeout:g} s" if _timed_out(exc) else _why(exc)
                raise MCPServerError(
                    f"could not start MCP server {self.name!r}: {why}", server=self.name, phase="connect"
                ) from None
        return self._session

    def _live(self) -> Session:
        with self._lock:
            return self._open()

    def tools(self) -> list[Tool]:
        """The server's tools (after prefix/include/exclude); connects on first use."""
        with self._lock:
            if self._tools is None:
                session = self._open()
                try:
                    listing = self._list(session)
                except MCPServerError:
                    self._session = None  # a server that cannot list its tools is not kept running
                    session.close()
                    raise
                self._tools = self._describe(listing)
            return list(self._tools)

    def _list(self, session: Session) -> list[Any]:
        def fail(why: str) -> MCPServerError:
            message = f"MCP server {self.name!r} failed to list its tools: {why}"
            return MCPServerError(message, server=self.name, phase="list")

        future = session.submit(lambda client: list_tools(client, self.max_pages, self.max_tools))
        try:
            listing = future.result(self.connect_timeout)
        except (ListingLimitError, TransportFault) as exc:
            raise fail(str(exc)) from None
        except Exception as exc:
            future.cancel()
            raise fail(
                f"no answer within {self.connect_timeout:g} s" if _timed_out(exc) else _why(exc)
            ) from None
        for name, why in listing.skipped:
            warnings.warn(f"MCP server {self.name!r}: skipping tool {name!r}: {why}", stacklevel=4)
        return listing.tools

    def acquire(self) -> list[Tool]:
        """A chain's lease on the session: its tools; `release` closes the session after the last user."""
        tools = self.tools()
        with self._lock:
            self._users += 1
        return tools

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.close()

    def close(self) -> None:
        """Close the session now (a stdio server's process ends with it)."""
        with self._lock:
            session, self._session, self._tools, self._users = self._session, None, None, 0
        if session is not None:
            session.close()

    def __enter__(self) -> MCPServer:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    async def __aenter__(self) -> MCPServer:
        await asyncio.to_thread(self.acquire)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.release)

    # -- tools ----------------------------------------------------------------------------------

    def _wanted(self, name: str) -> bool:
        return (self.include is None or name in self.include) and name not in self.exclude

    def _tool_name(self, name: str) -> str:
        if not self.prefix:
            return name
        return self.prefix + name if self.prefix[-1] in _SEPARATORS else f"{self.prefix}.{name}"

    def _describe(self, listing: list[Any]) -> list[Tool]:
        tools = []
        for spec in listing:
            if not self._wanted(spec.name):
                continue
            try:
                tool = Tool.from_schema(
                    self._tool_name(spec.name),
                    spec.description or spec.title or "",
                    dict(spec.input_schema or {"type": "object"}),
                    self._caller(spec.name),
                )
            except (ToolDefinitionError, SchemaError) as exc:
                warnings.warn(f"MCP server {self.name!r}: skipping tool {spec.name!r}: {exc}", stacklevel=3)
                continue
            tools.append(tool)
            if spec.output_schema:
                self._output_schemas[tool.name] = dict(spec.output_schema)
        return tools

    def output_schema(self, tool_name: str) -> dict[str, Any] | None:
        """The outputSchema the server declared for a tool (by its chainform name)."""
        return self._output_schemas.get(tool_name)

    def _caller(self, remote_name: str) -> Callable[..., Any]:
        async def call(**arguments: Any) -> Any:
            return await self.call(remote_name, arguments)

        return call

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool by its name on the server; failures of any kind raise MCPServerError."""
        timeout = self.timeout

        def fail(why: str) -> MCPServerError:
            return MCPServerError(f"MCP tool {name!r} {why}", server=self.name, phase="call")

        async def send(client: Any) -> Any:
            return await client.call_tool(name, arguments, read_timeout_seconds=timeout)

        session = await asyncio.to_thread(self._live)
        try:
            result = await asyncio.wait_for(session.run(send), timeout + 5)
        except asyncio.TimeoutError:
            raise fail(f"did not answer within {timeout:g} s") from None
        except TransportFault as exc:
            raise fail(f"failed: {exc}") from None
        except Exception as exc:
            if _connection_lost(exc):
                session.failure = exc  # the next call starts the server again
            raise fail(f"failed: {_why(exc)}") from None
        return tool_result(result, self.max_output)


def _timed_out(exc: BaseException) -> bool:
    import concurrent.futures

    return isinstance(exc, (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError))


def _connection_lost(exc: BaseException) -> bool:
    """True unless the server itself answered with an error (then the session is still good)."""
    from mcp import MCPError
    from mcp_types.jsonrpc import CONNECTION_CLOSED

    return not isinstance(exc, (MCPError, RuntimeError)) or getattr(exc, "code", None) == CONNECTION_CLOSED


def _errlog() -> Any:
    """Where the server's stderr goes: the process's real stderr (notebooks and test runners
    replace sys.stderr with objects a child process cannot write to), else nowhere."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # lives as long as the server process


def _info() -> Any:
    from mcp import Implementation

    from chainform._version import __version__

    return Implementation(name="chainform", version=__version__)


def _why(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # anyio task groups wrap the cause in a group
    if inner:
        return _why(inner[0])
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


def _close_quietly(state: dict[str, Any]) -> None:
    session = state.get("_session")
    if session is not None:
        session.close(timeout=5)
