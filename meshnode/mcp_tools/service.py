"""The node's hook: read ``[mcp.servers]``, give the gate its outside tools, keep the connections."""

from __future__ import annotations

import logging

from meshnode.mcp_tools.calls import McpTools
from meshnode.mcp_tools.clients import Clients
from meshnode.mcp_tools.settings import parse

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
    clients = Clients(servers, config.home)
    gate.mcp = McpTools(clients, gate, getattr(cycle, "metrics", None))
    await nursery.start(clients.run)
    return clients
