"""The MCP server of a node: every tool and resource over one ``call`` (calls.py), whichever the transport."""

from __future__ import annotations

import logging

from mcp.server.mcpserver import MCPServer

from meshnode import __version__
from meshnode.faces.mcp_server import resources, tools_goals, tools_knowledge, tools_mesh
from meshnode.faces.mcp_server.calls import Call

MODULES = (tools_knowledge, tools_goals, tools_mesh)
WRITES = frozenset().union(*(m.WRITES for m in MODULES))  # the commands that change something
INSTRUCTIONS = ("This is a meshnode: a node of the HyperCortex Mesh with its own agent. Search and add notes and"
                " knowledge, manage goals and tasks, ask the agent (ask_agent), look at the mesh and its peers."
                " Errors read '<code>: <reason>'; node_not_running means `meshnode run` is not running.")


def build_server(call: Call) -> MCPServer:
    # the SDK logs every request and every refused call at INFO: the node's log keeps its warnings and errors
    logging.getLogger("mcp").setLevel(max(logging.WARNING, logging.getLogger().level))
    server = MCPServer("meshnode", version=__version__, instructions=INSTRUCTIONS)
    for module in MODULES:
        module.register(server, call)
    resources.register(server, call)
    return server
