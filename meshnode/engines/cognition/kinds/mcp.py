"""The type of ``mcp_call``: the agent calls an outside MCP tool (the cycle runs it: mcp_commands)."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import kind
from meshnode.base.container.schema import mapping, text

TYPES = (
    kind("mcp_call", "call an outside MCP tool (listed under Outside tools)",
         {"tool": (text(200), True), "args": (mapping, False)}),
)
