"""The node's hook: read ``[mcp.servers]``, give the gate its outside tools, keep the connections.

The MCP client SDK is loaded only when a server is configured (it is most of a node's start-up
and memory otherwise)."""

from __future__ import annotations

import logging

from typing import TYPE_CHECKING

from meshnode.config.mcp import parse

if TYPE_CHECKING:
    from meshnode.mcp_tools.clients import Clients

log = logging.getLogger("meshnode.mcp_tools")


async def start(nursery, config, cycle) -> Clients | None:
    """Connect to the configured MCP servers in ``nursery`` (ConfigError first if an entry is wrong)."""
    servers = parse(config.values.get("mcp", {}).get("servers", {}), config.home)
    if not servers:
        return None
    gate = cycle.gate if cycle is not None else None
    if gate is None:
        log.warning("[mcp.servers] lists %d server(s), but the cognitive cycle is off: no agent calls them",
                    len(servers))
        return None
    from meshnode.mcp_tools.calls import McpTools
    from meshnode.mcp_tools.clients import Clients

    clients = Clients(servers, config.home)
    gate.mcp = McpTools(clients, gate, getattr(cycle, "metrics", None))
    await nursery.start(clients.run)
    return clients
