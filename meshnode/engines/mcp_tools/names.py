"""The names of outside tools: ``mcp.NAME.tool`` (and ``mcp__NAME__tool``, OpenAI's spelling).

Kept apart from ``calls`` so that reading a command's type (the cognition does it for every
command) does not load the MCP SDK.
"""

from __future__ import annotations

PREFIX = "mcp."
OPENAI_PREFIX = "mcp__"  # OpenAI function names admit no dots


def split(name: str) -> tuple[str, str] | None:
    """(server, tool) of ``mcp.NAME.tool`` or ``mcp__NAME__tool``; None for any other name."""
    for prefix, sep in ((PREFIX, "."), (OPENAI_PREFIX, "__")):
        if isinstance(name, str) and name.startswith(prefix):
            server, found, tool = name[len(prefix):].partition(sep)
            if found and server and tool:
                return server, tool
    return None
