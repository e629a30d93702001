"""Tools over the node's notes and knowledge: search and read notes, the diary, concepts and links,
and adding to each (protocols/mcp.md 3.1)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from meshnode.faces.mcp_server.calls import Call, run
from meshnode.faces.mcp_server.schema import ADD, ADD_SHARED, MARK, READ, Did, Limit, Line, Text, Word, Words

Targets = Annotated[list[Did], Field(min_length=1, max_length=256, description="concepts' container DIDs")]
WRITES = {"note_add", "note_read", "diary_add", "concept_add", "link_add"}


def register(server, call: Call) -> None:
    @server.tool(annotations=READ)
    async def notes(query: Line | None = None, limit: Limit = 20, unread: bool | None = None,
                    topic: Line | None = None, before: Did | None = None):
        """Search this node's notes, newest first: ``query`` matches their text; ``before`` (the last
        note's DID of the previous page) pages on. Each row: container_did, timestamp, topic, text,
        audience, tags, source, author, read, and who asked for it: asked_kind (person, agent, a2a,
        peer, node), asked_via (person: cli, web, mcp), asked_label, asked_id (an A2A party's key id:
        known:<name> or unknown:<address>:<name>). Only asked_kind person is the person."""
        return await run(call, "notes", query=query, limit=limit, unread=unread, topic=topic, before=before)

    @server.tool(annotations=MARK)
    async def note_read(did: Did):
        """One note in full, by its container DID; it is marked read."""
        return await run(call, "note_read", did=did)

    @server.tool(annotations=ADD_SHARED)
    async def note_add(text: Text, topic: Line | None = None,
                       audience: Literal["private", "friends", "public"] = "private", tags: Words | None = None):
        """Write a note signed by this node. ``audience``: private (this node only), friends (sent to its
        friends), public (gossiped to the mesh). Returns its container DID."""
        return await run(call, "note_add", text=text, topic=topic, audience=audience, tags=tags)

    @server.tool(annotations=READ)
    async def diary(limit: Limit = 50):
        """The agent's diary entries, newest first."""
        return await run(call, "diary", limit=limit)

    @server.tool(annotations=ADD)
    async def diary_add(text: Text, title: Line | None = None, topics: Words | None = None):
        """Add a diary entry signed by this node. Returns its container DID."""
        return await run(call, "diary_add", text=text, title=title, topics=topics)

    @server.tool(annotations=READ)
    async def concepts(limit: Limit = 50):
        """The concepts this node holds (label, description, aliases), newest first."""
        return await run(call, "concepts", limit=limit)

    @server.tool(annotations=ADD)
    async def concept_add(label: Line, description: Text | None = None, aliases: Words | None = None,
                          tags: Words | None = None):
        """Add a concept signed by this node. Returns its container DID (what links name)."""
        return await run(call, "concept_add", label=label, description=description, aliases=aliases, tags=tags)

    @server.tool(annotations=READ)
    async def links(limit: Limit = 50):
        """The links between concepts this node holds (source, relation, targets), newest first."""
        return await run(call, "links", limit=limit)

    @server.tool(annotations=ADD)
    async def link_add(source: Did, relation: Word, targets: Targets, inverse: Word | None = None):
        """Link concept ``source`` to the concepts ``targets`` (container DIDs) by ``relation``
        (for example is_a, part_of, related_to). Returns its container DID."""
        return await run(call, "link_add", source=source, relation=relation, targets=targets, inverse=inverse)
