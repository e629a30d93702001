"""The types of the commands that act through the mesh (the cycle runs them: mesh_commands)."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LONG, kind
from meshnode.base.container.schema import did, list_of, text

TYPES = (
    kind("consensus_propose", "ask the committee to decide", {"value": (text(16 * 1024), True)}),
    kind("send_message", "send a note to another agent", {"to": (did, True), "text": (text(LONG), True)}),
    kind("sync_request", "sync notes and knowledge with a peer now", {"peer": (did, True)}),
    kind("announce", "announce this agent in the mesh now, adding interests and expertise (tags)",
         {"interests": (list_of(text(64), max_items=64), False), "expertise": (list_of(text(64), max_items=64), False)}),
)
