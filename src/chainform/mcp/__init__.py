"""MCP in and out: `MCPServer` offers an MCP server's tools to chains; `serve` exposes Python tools.

Both go through the official `mcp` SDK (``pip install 'chainform[mcp]'``).
"""

from chainform.mcp._server import MCPServer

__all__ = ["MCPServer"]
