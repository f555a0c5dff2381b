"""`tools/list` against a server that may be broken or hostile.

The SDK validates a whole page at once, so one tool with a malformed `inputSchema` would take the
server's other tools down with it, and it follows `nextCursor` as long as the server sends one.
Here a page that fails the SDK's check is fetched again as plain JSON and each tool is checked on
its own (bad ones are skipped, by name); pages, tools and schema depth are capped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_PAGES = 100
MAX_TOOLS = 1_000
MAX_SCHEMA_DEPTH = 64


class ListingLimitError(Exception):
    """The listing broke a cap (pages or tools); the message says which."""


@dataclass
class Listing:
    tools: list[Any] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (tool name, why)


def schema_depth(node: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted without recursion and stopping past `limit`."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


async def list_tools(client: Any, max_pages: int = MAX_PAGES, max_tools: int = MAX_TOOLS) -> Listing:
    """Every tool the server lists (within the caps); malformed or over-deep tools are skipped."""
    listing, cursor, pages = Listing(), None, 0
    while True:
        pages += 1
        if pages > max_pages:
            raise ListingLimitError(f"tools/list went on for more than {max_pages} pages")
        tools, cursor = await _page(client, cursor, listing.skipped)
        for tool in tools:
            depth = schema_depth(tool.input_schema, MAX_SCHEMA_DEPTH)
            if depth > MAX_SCHEMA_DEPTH:
                listing.skipped.append((tool.name, f"its inputSchema is nested over {MAX_SCHEMA_DEPTH} deep"))
                continue
            listing.tools.append(tool)
        if len(listing.tools) > max_tools:
            raise ListingLimitError(f"the server lists more than {max_tools} tools")
        if not cursor:
            return listing


async def _page(
    client: Any, cursor: str | None, skipped: list[tuple[str, str]]
) -> tuple[list[Any], str | None]:
    from pydantic import ValidationError

    try:
        page = await client.list_tools(cursor=cursor)
        return list(page.tools), page.next_cursor
    except ValidationError:
        pass
    return await _lenient_page(client.session, cursor, skipped)


async def _lenient_page(
    session: Any, cursor: str | None, skipped: list[tuple[str, str]]
) -> tuple[list[Any], str | None]:
    """The page as plain JSON, each tool validated alone (the SDK has no public call for this)."""
    import mcp_types as types
    from pydantic import ValidationError

    params = {"cursor": cursor} if cursor else None
    raw = await session._dispatcher.send_raw_request("tools/list", params, {"timeout": 60.0})
    entries = raw.get("tools") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise ValueError("the tools/list result has no list of tools")
    tools = []
    for entry in entries:
        name = str(entry.get("name", "?")) if isinstance(entry, dict) else "?"
        try:
            tools.append(types.Tool.model_validate(entry, by_name=False))
        except ValidationError as exc:
            where = ", ".join(".".join(map(str, e["loc"])) + f" ({e['msg']})" for e in exc.errors()[:3])
            skipped.append((name, f"malformed definition: {where}"))
    next_cursor = raw.get("nextCursor")
    result = types.ListToolsResult(
        tools=tools, next_cursor=next_cursor if isinstance(next_cursor, str) else None
    )
    session._absorb_tool_listing(result, complete=False)  # the SDK checks results against outputSchema
    return result.tools, result.next_cursor
