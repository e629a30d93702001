"""The parser of ``meshnode mcp``: the stdio MCP server is that command (``meshnode.faces.mcp_server.stdio``,
imported only when it runs; the CLI imports no other face)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.mcp_server.stdio")


def add_parsers(sub, common) -> None:
    p = sub.add_parser("mcp", parents=[common], help="serve this node's tools to an MCP client (stdio)",
                       description="Speak MCP on stdin/stdout for a local client (Claude Desktop, Cursor): its"
                                   " tools read and act on the running node through its control socket. Logs go"
                                   " to stderr. The same tools are at /mcp on the web notebook (Bearer token).",
                       epilog='client configuration:\n  {"mcpServers": {"meshnode": {"command": "meshnode",'
                              ' "args": ["--home", "/path/to/home", "mcp"]}}}')
    p.set_defaults(func=commands.cmd_mcp)
