"""``meshnode mcp``: serve this node's tools to an MCP client over stdio (protocols/mcp.md).

    {"mcpServers": {"meshnode": {"command": "meshnode", "args": ["--home", "/path/to/home", "mcp"]}}}
"""

from __future__ import annotations

from meshnode.cli.common import _config


def cmd_mcp(args) -> int:
    from meshnode.mcp_server.stdio import run  # the MCP SDK loads only for this command

    return run(_config(args))
