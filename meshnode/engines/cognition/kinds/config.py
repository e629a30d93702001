"""The types of the commands over the agent's settings (config) and its identity."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import kind, named
from meshnode.base.container.schema import anything, mapping, text

TYPES = (
    kind("config_read", "the agent's settings (config), or one of them", {"key": (text(128), False)},
         mutating=False, closed=True),
    kind("config_update", "change an allowed setting (cognition.emotions, agent.<name>); null removes it",
         {"key": (text(128), True), "value": (anything, True)}, closed=True),
    kind("identity_show", "this agent's DID and peer id", {}, mutating=False),
    kind("identity_read", "this agent's identity: DID, peer id, name, metadata", {}, mutating=False, closed=True),
    kind("identity_update", "change this agent's name or metadata (nothing else)",
         {"name": (named(128), False), "metadata": (mapping, False)},
         extra_note="; id and pubkey come from the node's key and never change", closed=True),
)
