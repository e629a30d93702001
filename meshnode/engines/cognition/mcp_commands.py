"""``mcp_call``: the agent calls an outside tool (an MCP server's, ``mcp_tools``) through the gate.

``{"type": "mcp_call", "args": {"tool": "mcp.NAME.TOOL", "args": {...}}}``; the
tool's own name as the type (``mcp.NAME.TOOL``, or ``mcp__NAME__TOOL`` as an
OpenAI function) is read as the same command (``alias``). Run by the cycle
after the answer, like the gate's tools; its result (or refusal, or the
pending confirmation) comes back in the next tick. A call the server has not
answered within its ``inline_seconds`` runs on beside the ticks (the cycle's
processes): its result here is ``{"status": "running", "process": ID}`` and
the tool's answer comes as ``process:ID`` at a later tick.
"""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import MeshnodeError
from meshnode.engines.mcp_tools.names import split

ASYNC_TYPES = ("mcp_call",)


def alias(raw: Any) -> Any:
    """A command typed with an outside tool's name, as the ``mcp_call`` it means."""
    if isinstance(raw, dict) and isinstance(raw.get("type"), str) and split(raw["type"]) is not None:
        server, tool = split(raw["type"])
        args = raw.get("args", {})
        return {**raw, "type": "mcp_call", "args": {"tool": f"mcp.{server}.{tool}", "args": args}}
    return raw


async def run(gate, cmd, beside=None) -> dict:
    """``beside``: where a call past its budget goes on (the cycle's ``Processes.beside``; None: the
    caller waits for its end)."""
    mcp = getattr(gate, "mcp", None)
    if mcp is None:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "code": "unknown_tool",
                "error": "no MCP server is configured here ([mcp.servers.NAME])"}
    try:
        result = await mcp.call(cmd.args["tool"], cmd.args.get("args", {}), beside=beside)
    except MeshnodeError as exc:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "tool": cmd.args["tool"], "status": "error",
                "error": exc.reason, "code": exc.code}
    return {"cmd_id": cmd.cmd_id, "type": cmd.type, "tool": cmd.args["tool"], "status": "ok", "result": result}


def offered(tools: list[dict] | None, gate, budget: int) -> list[dict] | None:
    """The OpenAI tool definitions of a tick: the commands' and, when offered, the outside tools'
    (their definitions within ``budget`` characters)."""
    mcp = getattr(gate, "mcp", None)
    return tools if tools is None or mcp is None else tools + mcp.openai_tools(budget)


def catalogue(gate) -> str:
    mcp = getattr(gate, "mcp", None)
    return mcp.catalogue() if mcp is not None else ""
