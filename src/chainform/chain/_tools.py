"""Running a turn's tool calls: approval hooks, concurrency, and errors turned into tool results."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

from chainform import _trace
from chainform._json import MAX_DEPTH, too_deep
from chainform._lineage import Lineage, RunContext
from chainform.errors import ChainInterruptedError, ToolDefinitionError, UnknownToolError
from chainform.keys import scrub
from chainform.types import FunctionCallContent, FunctionResultContent

BeforeCall = Callable[[Any, FunctionCallContent], Union[Any, Awaitable[Any]]]
AfterCall = Callable[[Any, FunctionCallContent, FunctionResultContent], Union[Any, Awaitable[Any]]]


class CancelToolCall(Exception):
    """Raise from `before_call` (or return False) to refuse a call; the model is told why."""


@dataclass(frozen=True)
class Final:
    """Return `cf.Final(value)` from a tool to end the chain with `value` as its answer: validated
    against the chain's schema (a value that fails goes back to the model as the tool's error), or
    returned as it is when the chain has no schema. No further model call is made."""

    value: Any


@functools.lru_cache(maxsize=512)
def _tool_for(fn: Any) -> Any:
    """Describing a function costs about a millisecond; chains reuse the same functions, so cache it."""
    from chainform.tools import Tool

    return Tool.from_function(fn)


def is_tool_source(item: Any) -> bool:
    """A source of tools with a session to open and close around a chain (an MCP server)."""
    return callable(getattr(item, "acquire", None)) and callable(getattr(item, "release", None))


def normalize_tools(tools: Iterable[Any] | None) -> list[Any]:
    """Accept Tool objects, plain callables, Toolbox instances, namespaces and agents; return Tools."""
    items = list(tools or ())
    if not items:  # a chain without tools never imports chainform.tools (its sandbox, the python tool)
        return []
    from chainform.tools import Tool

    out: list[Any] = []
    for item in items:
        if isinstance(item, Tool):
            out.append(item)
        elif callable(getattr(item, "as_tool", None)):
            out.append(item.as_tool())
        elif hasattr(item, "tools") and callable(item.tools):
            out.extend(item.tools())
        elif callable(item):
            try:
                out.append(_tool_for(item))
            except TypeError:  # unhashable callable: describe it every time
                out.append(Tool.from_function(item))
        else:
            raise ToolDefinitionError(f"cannot use {item!r} as a tool: give a function, a Tool or a Toolbox")
    seen: set[str] = set()
    for tool in out:
        if tool.name in seen:
            raise ToolDefinitionError(f"two tools are named {tool.name!r}; give one of them another name")
        seen.add(tool.name)
    return out


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _error_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return (
        text
        if isinstance(exc, UnknownToolError) or type(exc).__name__ in text
        else f"{type(exc).__name__}: {text}"
    )


async def run_call(
    call: FunctionCallContent,
    tools: dict[str, Any],
    *,
    before_call: BeforeCall | None,
    after_call: AfterCall | None,
    restore_arguments: Callable[[Any, dict[str, Any]], dict[str, Any]],
    lineage: Lineage | None = None,
) -> FunctionResultContent:
    """Run one call; every failure becomes an error result the model can read and react to. A
    tool that `takes_context` is given the `RunContext` of this call (the chain's `lineage`)."""
    tool = tools.get(call.name)
    if tool is None:
        names = ", ".join(sorted(tools)) or "(none)"
        error = f"Unknown tool {call.name!r}. Available tools: {names}"
        return FunctionResultContent(call.call_id, error=error, name=call.name)
    if call.arguments is None:
        error = f"Arguments are not valid JSON: {call.parse_error}"
        return FunctionResultContent(call.call_id, error=error, name=call.name)
    try:
        call = FunctionCallContent(
            call.call_id, call.name, restore_arguments(tool, call.arguments), call.raw_arguments, call.index
        )
        if before_call is not None:
            verdict = await _maybe_await(before_call(tool, call))
            if verdict is False:
                raise CancelToolCall("the user declined this tool call")
            if isinstance(verdict, dict):
                call = FunctionCallContent(call.call_id, call.name, verdict, None, call.index)
            elif isinstance(verdict, FunctionCallContent):
                call = verdict
        if getattr(tool, "takes_context", False) and lineage is not None:
            work = tool.ainvoke(call.arguments, context=RunContext(lineage, call.call_id))
        else:
            work = tool.ainvoke(call.arguments)
        value = await (work if _trace.hooks is None else _trace.hooks.tool(call, work))
        result = FunctionResultContent(call.call_id, result=value, name=call.name)
    except CancelToolCall as exc:
        result = FunctionResultContent(call.call_id, error=f"Cancelled: {exc}", name=call.name)
    except ChainInterruptedError:  # from a subagent's tool: the whole chain stops
        raise
    except Exception as exc:  # a tool's own failure goes back to the model, the chain goes on
        result = FunctionResultContent(call.call_id, error=_error_text(exc), name=call.name)
    except SystemExit as exc:  # sys.exit() in a tool (argparse, click) ends the call, not the program
        error = f"the tool tried to exit the program (SystemExit: {exc.code!r}); it did not finish"
        result = FunctionResultContent(call.call_id, error=error, name=call.name)
    except KeyboardInterrupt:
        raise _interrupted(call) from None
    final = isinstance(result.result, Final)
    if too_deep(result.result.value if final else result.result):  # every walker after this recurses
        error = f"the tool's result is nested more than {MAX_DEPTH} levels deep; it was not sent"
        result, final = FunctionResultContent(call.call_id, error=error, name=call.name), False
    # Defence in depth: a key that reached a tool's output never reaches the model or the log.
    value = scrub(result.result.value if final else result.result)
    result = FunctionResultContent(
        call.call_id, Final(value) if final else value, scrub(result.error), call.name
    )
    if after_call is not None:
        try:
            await _maybe_await(after_call(tool, call, result))
        except KeyboardInterrupt:
            raise _interrupted(call) from None
    return result


def _interrupted(call: FunctionCallContent) -> ChainInterruptedError:
    """KeyboardInterrupt from a tool or hook as a typed error: raised as it is, it would escape the
    task running the call and stop the event loop under every chain on it (a hang for the caller)."""
    return ChainInterruptedError(f"interrupted: KeyboardInterrupt in the call of tool {call.name!r}")


async def run_calls(
    calls: Sequence[FunctionCallContent],
    tools: dict[str, Any],
    *,
    before_call: BeforeCall | None,
    after_call: AfterCall | None,
    restore_arguments: Callable[[Any, dict[str, Any]], dict[str, Any]],
    on_result: Callable[[FunctionResultContent], Awaitable[FunctionResultContent]] | None = None,
    lineage: Lineage | None = None,
) -> list[FunctionResultContent]:
    """A turn's calls run concurrently (sync tools in threads); results keep the calls' order.
    `on_result` is awaited with each result as it returns (the engine logs it then) and gives
    the result kept. `lineage`: the calling chain's, for tools that take a RunContext."""

    async def one(call: FunctionCallContent) -> FunctionResultContent:
        result = await run_call(
            call,
            tools,
            before_call=before_call,
            after_call=after_call,
            restore_arguments=restore_arguments,
            lineage=lineage,
        )
        return result if on_result is None else await on_result(result)

    return list(await asyncio.gather(*(one(c) for c in calls)))
