"""The parsers of the commands in ``meshnode.cli.mcp`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.cli.parsers.commands import Commands

commands = Commands("meshnode.cli.mcp")


def add_parsers(sub, common) -> None:
    p = sub.add_parser("mcp", parents=[common], help="serve this node's tools to an MCP client (stdio)",
                       description="Speak MCP on stdin/stdout for a local client (Claude Desktop, Cursor): its"
                                   " tools read and act on the running node through its control socket. Logs go"
                                   " to stderr. The same tools are at /mcp on the web notebook (Bearer token).",
                       epilog='client configuration:\n  {"mcpServers": {"meshnode": {"command": "meshnode",'
                              ' "args": ["--home", "/path/to/home", "mcp"]}}}')
    p.set_defaults(func=commands.cmd_mcp)
