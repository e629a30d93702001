"""The MCP server of a node: every tool and resource over one ``call`` (calls.py), whichever the transport;
every tool call's arguments checked first (arguments.py)."""

from __future__ import annotations

import logging
from typing import Callable

from mcp.server.mcpserver import MCPServer

from meshnode import __version__
from meshnode.faces.mcp_server import resources, tools_goals, tools_knowledge, tools_mesh
from meshnode.faces.mcp_server.arguments import ArgumentCheck
from meshnode.faces.mcp_server.calls import Call

MODULES = (tools_knowledge, tools_goals, tools_mesh)
WRITES = frozenset().union(*(m.WRITES for m in MODULES))  # the commands that change something
INSTRUCTIONS = ("This is a meshnode: a node of the HyperCortex Mesh with its own agent. Search and add notes and"
                " knowledge, manage goals and tasks, ask the agent (ask_agent), look at the mesh and its peers."
                " Errors read '<code>: <reason>'; node_not_running means `meshnode run` is not running.")


class _Registrar:
    """The server as the tool modules see it: ``tool`` registers with the SDK and with the argument check."""

    def __init__(self, server: MCPServer, check: ArgumentCheck):
        self.server, self.check = server, check

    def tool(self, **kwargs):
        register = self.server.tool(**kwargs)

        def decorator(fn):
            self.check.add(kwargs.get("name") or fn.__name__, fn)
            return register(fn)
        return decorator

    def resource(self, *args, **kwargs):
        return self.server.resource(*args, **kwargs)


def build_server(call: Call, refused: Callable[[str, str], None] | None = None) -> MCPServer:
    """``refused(tool, why)``: told of each call refused for its arguments (``/mcp`` counts them)."""
    # the SDK logs every request and every refused call at INFO: the node's log keeps its warnings and errors
    logging.getLogger("mcp").setLevel(max(logging.WARNING, logging.getLogger().level))
    server = MCPServer("meshnode", version=__version__, instructions=INSTRUCTIONS)
    check = ArgumentCheck(refused)
    tools = _Registrar(server, check)
    for module in MODULES:
        module.register(tools, call)
    resources.register(server, call)
    server.middleware.append(check)  # innermost: after the SDK's tracing, before params validation
    return server
