"""Tools over the agent and the mesh: ask the agent (and read a conversation), the node's status,
its peers and formation, find a peer by DID or by interest, an agent's reputation, and the names the
person gives agents (petnames: the MCP client is the person, as for every tool) (protocols/mcp.md 3.3)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from meshnode.store.chat import MAX_WAIT_S
from meshnode.faces.mcp_server.calls import Call, answer, as_text, run
from meshnode.faces.mcp_server.schema import (ADD, ASK_MESH, LOCAL_CHANGE, READ, Agent, Did, Limit, Line, Petname,
                                              Text)

WRITES = {"chat_send", "name_set", "name_unset"}
ASK_WAIT_S = 30.0
Thread = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{16}$", description="a conversation's id (16 characters)")]


def register(server, call: Call) -> None:
    @server.tool(annotations=ADD)
    async def ask_agent(text: Text, thread: Thread | None = None,
                        wait_seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_S)] = ASK_WAIT_S):
        """Ask this node's agent: the message goes to it (a new conversation, or one more in ``thread``)
        and its replies within ``wait_seconds`` come back. The agent answers at its next thought; when
        none came in time, ``replies`` is empty: read them later with chat_thread(thread)."""
        out = await answer(call, "chat_send", text=text, thread=thread, wait_seconds=wait_seconds)
        shown = {"thread": out["thread"], "message": out["did"], "replies": out["replies"]}
        if not out["replies"]:
            why = "" if out.get("woke") else " (the agent was not woken: it is paused, off, or wakes at its next tick)"
            shown["pending"] = (f"no reply within {wait_seconds:g} s yet{why}; the agent answers in thread"
                                f" {out['thread']}: call chat_thread with thread={out['thread']!r} later")
        return as_text(shown)

    @server.tool(annotations=READ)
    async def chat_thread(thread: Thread, limit: Limit = 100):
        """One conversation with the agent, oldest message first (side: person or agent)."""
        return await run(call, "chat_thread", thread=thread, limit=limit)

    @server.tool(annotations=READ)
    async def status():
        """This node: DID, name, counts of what it holds, its addresses, peers connected, its agent's state."""
        return await run(call, "status")

    @server.tool(annotations=READ)
    async def peers():
        """The peers this node knows, with whether each is connected now."""
        return await run(call, "peers")

    @server.tool(annotations=READ)
    async def formation():
        """How far this node has joined the mesh: connected peers and its GossipSub mesh sizes."""
        return await run(call, "formation")

    @server.tool(annotations=ASK_MESH)
    async def find_peer(did: Did):
        """Find an agent by its DID on the mesh (the DHT): its peer id and addresses."""
        return await run(call, "find", did=did)

    @server.tool(annotations=ASK_MESH)
    async def find_by_interest(interest: Line):
        """Agents that announced an interest (a topic word) on the mesh."""
        return await run(call, "find", interest=interest)

    @server.tool(annotations=READ)
    async def reputation(did: Did):
        """This node's trust in an agent (0 to 1) and its basis: evidence counts, recent updates and
        what others published about it."""
        return await run(call, "reputation_show", did=did)

    @server.tool(annotations=READ)
    async def names():
        """Every agent known here with what it is called: ``name`` as every listing shows it, the
        person's ``petname``, the name it ``announced``, ``own`` for this node."""
        return await run(call, "names")

    @server.tool(annotations=LOCAL_CHANGE)
    async def name_set(agent: Agent, petname: Petname):
        """Give an agent a petname on this node only (it replaces its old one; never sent). Refused
        (petname_taken) when another agent has that petname here."""
        return await run(call, "name_set", agent=agent, petname=petname)

    @server.tool(annotations=LOCAL_CHANGE)
    async def name_unset(agent: Agent):
        """Forget an agent's petname: it is shown by the name it announced (or its short id) again."""
        return await run(call, "name_unset", agent=agent)
