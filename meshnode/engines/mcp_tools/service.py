"""The node's hook: read ``[mcp.servers]``, give the gate its outside tools, keep the connections.

The node builds the clients before the gate (``clients``), hands the gate ``tools(clients)`` to build
its ``McpTools`` with, and starts the clients in its nursery before the cycle's first tick. The MCP
client SDK is loaded only when a server is configured (it is most of a node's start-up and memory
otherwise)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from meshnode.base.config.mcp import parse

if TYPE_CHECKING:
    from meshnode.engines.mcp_tools.calls import McpTools
    from meshnode.engines.mcp_tools.clients import Clients

log = logging.getLogger("meshnode.engines.mcp_tools")


def clients(config, cognition_on: bool) -> Clients | None:
    """The configured MCP servers' clients, not yet connected (ConfigError first if an entry is
    wrong); None when none is configured, or when no agent would call them (the cycle is off)."""
    servers = parse(config.values.get("mcp", {}).get("servers", {}), config.home)
    if not servers:
        return None
    if not cognition_on:
        log.warning("[mcp.servers] lists %d server(s), but the cognitive cycle is off: no agent calls them",
                    len(servers))
        return None
    from meshnode.engines.mcp_tools.clients import Clients

    return Clients(servers, config.home)


def tools(clients: Clients, metrics=None) -> Callable[[object], McpTools]:
    """What the gate builds its outside tools with: ``McpTools(clients, gate, metrics)``."""
    from meshnode.engines.mcp_tools.calls import McpTools

    return lambda gate: McpTools(clients, gate, metrics)
