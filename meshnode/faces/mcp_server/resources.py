"""Resources: what an MCP client may read into its context without a tool call (protocols/mcp.md 4):
the agent's recent answers, one conversation, and the goal tree."""

from __future__ import annotations

from meshnode.faces.mcp_server.calls import Call, read

RECENT_THREADS = 10
RECENT_GOALS = 20


def register(server, call: Call) -> None:
    @server.resource("meshnode://chat/recent", mime_type="application/json")
    async def recent_answers() -> dict:
        """The agent's recent answers: the latest conversations, each with the agent's last replies."""
        threads = await read(call, "chat_threads", limit=RECENT_THREADS)
        out = []
        for t in threads:
            messages = (await read(call, "chat_thread", thread=t["thread"], limit=20))["messages"]
            out.append({**t, "answers": [m for m in messages if m["side"] == "agent"][-5:]})
        return {"threads": out}

    @server.resource("meshnode://chat/thread/{thread}", mime_type="application/json")
    async def conversation(thread: str) -> dict:
        """One conversation with the agent, oldest message first."""
        return await read(call, "chat_thread", thread=thread)

    @server.resource("meshnode://goals", mime_type="application/json")
    async def goal_tree() -> dict:
        """The goal tree: every goal not closed, with its tasks as a tree (subtasks under their parent)."""
        goals = await read(call, "goal_list")
        open_ = [g for g in goals if g.get("status") not in ("completed", "cancelled", "failed")]
        return {"goals": [await read(call, "goal_show", goal=g["lineage"]) for g in open_[:RECENT_GOALS]],
                "not_shown": max(0, len(open_) - RECENT_GOALS), "closed": len(goals) - len(open_)}
