"""``meshnode mcp``: the MCP server on stdin/stdout, for a local client (Claude Desktop, Cursor, ...).

    {"mcpServers": {"meshnode": {"command": "meshnode", "args": ["--home", "/path/to/home", "mcp"]}}}

It is a client of the running node, like every CLI command: each tool is one request on the control
socket. stdout carries MCP frames only (logs go to stderr). With no node running it still serves:
every tool answers ``node_not_running: ...`` (an MCP tool error) until ``meshnode run`` starts, so a
client configured once works whenever the node is up.
"""

from __future__ import annotations

import logging

import trio

from meshnode.net import control
from meshnode.base.config.command_line import config_of
from meshnode.faces.mcp_server.calls import socket_call
from meshnode.faces.mcp_server.server import build_server

log = logging.getLogger("meshnode.mcp")


async def serve_stdio(config) -> None:
    data_dir = config.db_path.parent
    if not control.socket_path(data_dir).exists():
        log.warning("no node is running at %s yet: tools answer node_not_running until `meshnode run`", config.home)
    server = build_server(socket_call(data_dir))
    await server.run_stdio_async()


def run(config) -> int:
    try:
        trio.run(serve_stdio, config)
    except KeyboardInterrupt:
        pass
    return 0


def cmd_mcp(args) -> int:
    """The command ``meshnode mcp`` (the CLI's parser names it here: this face is that command)."""
    return run(config_of(args))
