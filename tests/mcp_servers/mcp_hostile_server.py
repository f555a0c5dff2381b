"""A raw JSON-RPC MCP server (no SDK: the SDK's server refuses to send these) for hostile listings.

    python mcp_hostile_server.py MODE

MODE: ``bad_schema`` lists tools whose inputSchema is a string or missing beside good ones,
``endless`` pages tools/list forever, ``many`` lists 5,000 tools on one page, ``deep`` lists a tool
whose input schema is nested 300 deep (beyond what the JSON parser reads), ``nested`` one nested 40 levels
deep (readable, but over chainform's cap), ``silent`` never answers tools/list, ``mute`` never answers the handshake.
"""

from __future__ import annotations

import json
import sys
import time

MODE = sys.argv[1]
GOOD = {"type": "object", "properties": {"a": {"type": "number"}}}


def deep(depth: int) -> dict:
    node: dict = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"x": node}}
    return node


def listing(cursor: str | None) -> dict:
    if MODE == "bad_schema":
        tools = [
            {"name": "echo", "inputSchema": GOOD},
            {"name": "broken", "description": "schema is a string", "inputSchema": "oops"},
            {"name": "no_schema"},
            {"name": "other", "inputSchema": GOOD},
        ]
        return {"tools": tools}
    if MODE == "endless":
        page = int(cursor or 0)
        return {
            "tools": [{"name": f"t{page}_{i}", "inputSchema": GOOD} for i in range(3)],
            "nextCursor": str(page + 1),
        }
    if MODE == "many":
        return {"tools": [{"name": f"t{i}", "inputSchema": GOOD} for i in range(5_000)]}
    if MODE == "deep":
        return {"tools": [{"name": "echo", "inputSchema": GOOD}, {"name": "deep", "inputSchema": deep(300)}]}
    if MODE == "nested":
        return {"tools": [{"name": "echo", "inputSchema": GOOD}, {"name": "nested", "inputSchema": deep(40)}]}
    raise SystemExit(f"unknown mode {MODE}")


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize" and MODE == "mute":
        time.sleep(3600)
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }
    if method == "tools/list":
        if MODE == "silent":
            time.sleep(3600)
        return listing(params.get("cursor"))
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "called " + params.get("name", "")}]}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
